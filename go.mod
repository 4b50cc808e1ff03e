module github.com/vfsmount/vfsmount

go 1.26

require (
	github.com/hanwen/go-fuse/v2 v2.12.1 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
