package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

const goFuseModule = "github.com/hanwen/go-fuse/v2"

func versionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version of vfsmount, Go and go-fuse",
		Long: `Prints the vfsmount version (set at build time with
-ldflags "-X main.version=..."; "dev" otherwise), the Go version that built
it and the go-fuse version linked in.`,
		Example: `  $ vfsmount version
  vfsmount dev
  go       go1.26.8
  go-fuse  v2.12.1`,
		Args:              exactArgs(0),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(*cobra.Command, []string) error {
			goVersion, fuseVersion := buildVersions()
			fmt.Fprintf(a.stdout, "vfsmount %s\ngo       %s\ngo-fuse  %s\n", version, goVersion, fuseVersion)
			return nil
		},
	}
}

// buildVersions reads the Go and go-fuse versions from the build info
// embedded in the binary; "unknown" where it has none (go run of a test).
func buildVersions() (goVersion, fuseVersion string) {
	goVersion, fuseVersion = "unknown", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	goVersion = bi.GoVersion
	for _, d := range bi.Deps {
		if d.Path == goFuseModule {
			fuseVersion = d.Version
			if d.Replace != nil {
				fuseVersion = d.Replace.Version + " (replaced)"
			}
		}
	}
	return
}
