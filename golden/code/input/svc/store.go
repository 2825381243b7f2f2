package svc

import "github.com/pkg/errors"

// Store keeps values by key.
type Store struct {
	values map[string]string
}

type Getter interface {
	Get(key string) (string, error)
}

func NewStore() *Store { return &Store{values: map[string]string{}} }

func (s *Store) Get(key string) (string, error) {
	v, ok := s.values[key]
	if !ok {
		return "", errors.New("missing")
	}
	return v, nil
}

func (s *Store) put(key, value string) { s.values[key] = value }
