package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// TestConformance runs the contract's suite over a persistent memory mount,
// and after each case reloads the file: whatever the case did, the tree read
// back must be the tree it left.
func TestConformance(t *testing.T) {
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		path := filepath.Join(t.TempDir(), "mem.db")
		s, err := boltstore.Open(path, boltstore.Options{})
		require.NoError(t, err)
		fsys, err := s.Load(memfs.Options{})
		require.NoError(t, err)
		t.Cleanup(func() {
			want := snapshot(t, fsys)
			require.NoError(t, s.Close())
			s2, got := open(t, path, boltstore.Options{}, memfs.Options{})
			assert.Equal(t, want, snapshot(t, got), "the reloaded tree is the tree the case left")
			require.NoError(t, s2.Close())
		})
		return fsys
	}, mountstest.Caps(mounts.CapMutating|mounts.CapXattr|mounts.CapStatFS|mounts.CapFreeze))
}
