module example.com/svc

go 1.22

require github.com/pkg/errors v0.9.1
