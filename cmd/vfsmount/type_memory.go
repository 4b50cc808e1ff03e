package main

import (
	"context"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// memoryType is the in-memory tree. It has no source: it starts empty and
// its content lives as long as the process.
func memoryType() mountType {
	return mountType{
		Name:    "memory",
		Doc:     "an empty in-memory tree, writable, gone when vfsmount exits",
		Example: "type=memory,dst=/memory",
		Keys:    map[string]keySpec{},
		Build: func(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
			return memfs.New(memfs.Options{Logger: env.Logger, Uid: env.Uid, Gid: env.Gid}), nil
		},
	}
}
