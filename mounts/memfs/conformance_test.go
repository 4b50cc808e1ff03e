package memfs_test

import (
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

func TestConformance(t *testing.T) {
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return memfs.New(memfs.Options{})
	}, mountstest.Caps(mounts.CapMutating|mounts.CapXattr|mounts.CapStatFS|mounts.CapFreeze))
}
