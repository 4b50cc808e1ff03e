package main

import (
	"context"
	"errors"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
)

// hostType is a host directory, served through and confined to its root.
func hostType() mountType {
	return mountType{
		Name:    "host",
		Doc:     "a host directory, writable (or ro), confined to its root: no .., symlink or hard link leaves it",
		Example: "type=host,src=./out,dst=/host,ro",
		Keys: map[string]keySpec{
			"src": {Kind: kindPath, Required: true, Doc: "host directory to serve"},
			"ro":  {Kind: kindBool, Doc: "read-only: no write capability at all (EROFS)"},
		},
		Build: buildHost,
	}
}

func buildHost(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
	return openHost(spec, spec.Bool("ro"), env)
}

// openHost opens the host directory spec's src names, closed with the
// workspace.
func openHost(spec *mountSpec, readOnly bool, env *buildEnv) (mounts.FS, error) {
	fsys, err := hostfs.Open(spec.String("src"), hostfs.Options{ReadOnly: readOnly, Logger: env.Logger})
	switch {
	case errors.Is(err, hostfs.ErrBadSource):
		return nil, specErrorf(spec.Origin, "src: %v", err)
	case err != nil:
		return nil, err
	}
	env.OnClose(fsys.(interface{ Close() error }).Close)
	return fsys, nil
}
