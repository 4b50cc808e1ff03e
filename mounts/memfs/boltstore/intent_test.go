package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
)

// TestRestoreIntentsPersist: the file's identity and its restore records
// (a pending intent, decisions) survive a reopen, and each goes when the
// mutation that drops it is written.
func TestRestoreIntentsPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tree.db")
	open := func() (*boltstore.Store, *memfs.FS) {
		s, err := boltstore.Open(path, boltstore.Options{})
		require.NoError(t, err)
		f, err := s.Load(memfs.Options{})
		require.NoError(t, err)
		return s, f
	}
	s, f := open()
	id := s.Identity()
	require.Len(t, id, 32)
	assert.Equal(t, id, f.StoreIdentity())
	intent := memfs.RestoreIntent{ID: "r1", Checkpoint: "c1", Paths: []string{"a/b"}, Coordinator: "other"}
	require.NoError(t, f.PrepareRestore(intent))
	require.NoError(t, s.Commit(&memfs.Mutation{Op: "test", Decided: &memfs.RestoreDecision{ID: "r0", Participants: []string{"p"}}}))
	require.NoError(t, s.Close())

	s, f = open()
	assert.Equal(t, id, s.Identity(), "the identity stays with the file")
	assert.Equal(t, &intent, f.PendingRestore())
	assert.Equal(t, []memfs.RestoreDecision{{ID: "r0", Participants: []string{"p"}}}, f.DecidedRestores())
	require.NoError(t, f.DiscardRestore("r1"))
	require.NoError(t, f.ForgetRestores("r0"))
	assert.Nil(t, f.PendingRestore())
	require.NoError(t, s.Close())

	s, f = open()
	defer s.Close()
	assert.Nil(t, f.PendingRestore())
	assert.Empty(t, f.DecidedRestores())
}
