package memfs_test

import (
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// TestDifferentialLinux runs mountstest.Differential on memfs: the same
// random operations on memfs and on a real directory, the same errno from
// both step by step, the same tree (modes, owners, xattrs, link counts,
// contents, inode numbers paired one to one) every 100 steps and at the
// end, and numbers that stay with a name across changes, renames and links.
//
// The symlinks it makes point at /dev/null, so that the one place memfs
// differs on purpose (it never follows a symlink in the middle of a path)
// gives the same ENOTDIR the kernel gives when it follows one to a device.
func TestDifferentialLinux(t *testing.T) {
	mountstest.Differential(t, mountstest.DifferentialOptions{
		New: func(t *testing.T, _ mounts.FS) mounts.FS {
			fsys, _ := newFS(t, memfs.Options{})
			return fsys
		},
		Seeds:  16,
		Stream: 42,
	})
}
