package svc

import "testing"

func TestGetMissing(t *testing.T) {
	if _, err := NewStore().Get("x"); err == nil {
		t.Fatal("expected an error")
	}
}
