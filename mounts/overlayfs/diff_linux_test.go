package overlayfs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// TestDifferentialLinux runs mountstest.Differential on overlays over
// three kinds of upper: the same random operations on an overlay and on a
// real directory holding a copy of the overlay's lower (the harness fills
// the lower with a random tree first), the same errno from both step by
// step, and the same tree (modes, owners, xattrs, link counts, contents)
// before the first step, every 100 steps and at the end. Inode numbers are
// checked as the kernel keeps them: a name keeps its number across every
// change of its content or attributes (a copy-up, for a lower name), a
// rename carries the number to the new name, a link shares it, and within
// one tree two names share a number on the overlay exactly when they do on
// the host.
//
// Names come from a tiny universe, so that lower and upper entries collide
// with each other all the time: a lower directory renamed over a removed
// one, a file made where a lower directory was, hard links to lower files.
// The lower holds no hard links (see the package doc). Symlinks point at
// /dev/null, so that following one in the middle of a path gives ENOTDIR
// on both sides.
func TestDifferentialLinux(t *testing.T) {
	uppers := []struct {
		name  string
		seeds uint64
		// exchange: the upper can exchange names, so the overlay can.
		exchange bool
		upper    func(t *testing.T) mounts.FS
	}{
		{"memory", 16, true, func(t *testing.T) mounts.FS { return memfs.New(memfs.Options{}) }},
		{"host", 4, true, func(t *testing.T) mounts.FS {
			h, err := hostfs.Open(t.TempDir(), hostfs.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { h.(*hostfs.FS).Close() })
			return h
		}},
		// Without RenameExchange in the upper, the overlay takes its
		// fallbacks for rmdir, mkdir over a whiteout and renames.
		{"no-exchange", 4, false, func(t *testing.T) mounts.FS { return noExchange{memfs.New(memfs.Options{})} }},
	}
	for _, u := range uppers {
		seeds := u.seeds
		if testing.Short() {
			seeds = 2
		}
		t.Run(u.name, func(t *testing.T) {
			mountstest.Differential(t, mountstest.DifferentialOptions{
				Lower: func(t *testing.T) mounts.FS { return memfs.New(memfs.Options{}) },
				New: func(t *testing.T, lower mounts.FS) mounts.FS {
					o, err := overlayfs.New(bg, frozen{lower.(lowerFS)}, u.upper(t), overlayfs.Options{})
					require.NoError(t, err)
					return o
				},
				NoExchange: !u.exchange,
				Seeds:      seeds,
				Stream:     7,
			})
		})
	}
}

// noExchange is a memory mount that cannot exchange two names.
type noExchange struct{ *memfs.FS }

func (n noExchange) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	if flags&mounts.RenameExchange != 0 {
		return mounts.PathErr("rename", oldname, mounts.ErrNotSupported)
	}
	return n.FS.Rename(ctx, oldname, newname, flags)
}
