package boltstore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
)

// TestCheckpointsSurviveARestart takes checkpoints of a persisted tree,
// restarts, and restores each: the tree of each comes back whole.
func TestCheckpointsSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tree.db")
	s, fsys := open(t, path, boltstore.Options{}, memfs.Options{})
	fill(t, fsys)
	want1 := snapshot(t, fsys)
	frozen := fsys.Freeze()
	_, err := frozen.Checkpoint("c1", "first")
	frozen.Release()
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, fsys, "small", []byte("changed"), 0o644))
	require.NoError(t, fsys.Unlink(ctx, "d/hard"))
	require.NoError(t, fsys.Rename(ctx, "d", "e", 0))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "e/new", []byte("new"), 0o644))
	want2 := snapshot(t, fsys)
	_, err = fsys.Checkpoint("c2")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, fsys, "e/new", []byte("after"), 0o644))
	now := snapshot(t, fsys)
	require.NoError(t, s.Close())

	s, fsys = open(t, path, boltstore.Options{}, memfs.Options{})
	assert.Equal(t, now, snapshot(t, fsys), "the live tree is as it was")
	list := fsys.Checkpoints()
	require.Len(t, list, 2)
	assert.Equal(t, "c1", list[0].ID)
	assert.Equal(t, "first", list[0].Name)
	assert.Equal(t, "c2", list[1].ID)
	// What changed since the newest checkpoint is known again.
	changed, err := fsys.ChangedSince("c2")
	require.NoError(t, err)
	assert.Contains(t, changed, "e/new")
	changed, err = fsys.ChangedSince("c1")
	require.NoError(t, err)
	for _, n := range []string{"small", "d/hard", "d", "e", "e/new"} {
		assert.Contains(t, changed, n, "the names a restore across c2 must drop are kept with it")
	}
	_, err = fsys.RestoreCheckpoint("c1")
	require.NoError(t, err)
	assert.Equal(t, want1, snapshot(t, fsys))
	_, err = fsys.RestoreCheckpoint("c2")
	require.NoError(t, err)
	assert.Equal(t, want2, snapshot(t, fsys))

	// Delete the oldest across a restart: the newer one still restores.
	require.NoError(t, mounts.WriteFile(ctx, fsys, "small", []byte("again"), 0o644))
	require.NoError(t, fsys.DeleteCheckpoint("c1"))
	require.NoError(t, s.Close())
	s, fsys = open(t, path, boltstore.Options{}, memfs.Options{})
	list = fsys.Checkpoints()
	require.Len(t, list, 1)
	_, err = fsys.RestoreCheckpoint("c2")
	require.NoError(t, err)
	assert.Equal(t, want2, snapshot(t, fsys))
	require.NoError(t, fsys.DeleteCheckpoint("c2"))
	require.NoError(t, s.Close())
	assert.Zero(t, countKeys(t, path, "checkpoint chunks"), "the last checkpoint gone, its chunks are gone")
	assert.Zero(t, countKeys(t, path, "checkpoint refs"))
}

// TestCheckpointChunksAreShared: a file unchanged between checkpoints is
// stored once for all of them, and a changed one costs the chunks that
// changed.
func TestCheckpointChunksAreShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tree.db")
	s, fsys := open(t, path, boltstore.Options{}, memfs.Options{})
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16) // 64 chunks, all alike
	for i := range big {
		big[i] ^= byte(i / 65536) // ...made distinct
	}
	require.NoError(t, mounts.WriteFile(ctx, fsys, "big", big, 0o644))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "other", []byte("x"), 0o644))
	_, err := fsys.Checkpoint("c1")
	require.NoError(t, err)
	// c2: big untouched, other changed.
	require.NoError(t, mounts.WriteFile(ctx, fsys, "other", []byte("y"), 0o644))
	_, err = fsys.Checkpoint("c2")
	require.NoError(t, err)
	// c3: one chunk of big changed.
	f, err := fsys.OpenFile(ctx, "big", os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.(mounts.WritableFile).WriteAt([]byte("!"), 100)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = fsys.Checkpoint("c3")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	// What the live data still holds is not stored again: the copies
	// are the old chunk of big and the old other, copied out when they
	// changed.
	assert.Equal(t, 2, countKeys(t, path, "checkpoint chunks"))
	assert.Equal(t, 63+1+1, countKeys(t, path, "checkpoint live chunks"),
		"63 unchanged chunks of big, its new chunk, the new other: shared with the live data")

	// Unlink big (its live chunks go: copied out first), restart, and
	// restore: it comes back whole.
	s, fsys = open(t, path, boltstore.Options{}, memfs.Options{})
	require.NoError(t, fsys.Unlink(ctx, "big"))
	require.NoError(t, s.Close())
	assert.Equal(t, 2+64, countKeys(t, path, "checkpoint chunks"))
	_, fsys = open(t, path, boltstore.Options{}, memfs.Options{})
	_, err = fsys.RestoreCheckpoint("c1")
	require.NoError(t, err)
	got, err := mounts.ReadFile(ctx, fsys, "big")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(big, got))
}

// TestCheckpointNumbersAreNotReusedAfterARestart: the newest inode is
// removed after a checkpoint; after a restart a new inode does not take its
// number, and restoring the checkpoint brings both back right.
func TestCheckpointNumbersAreNotReusedAfterARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tree.db")
	s, fsys := open(t, path, boltstore.Options{}, memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, fsys, "keep", []byte("keep"), 0o644))
	require.NoError(t, fsys.Mkdir(ctx, "last", 0o755))
	want := snapshot(t, fsys)
	last, err := fsys.Stat(ctx, "last")
	require.NoError(t, err)
	_, err = fsys.Checkpoint("c1")
	require.NoError(t, err)
	require.NoError(t, fsys.Rmdir(ctx, "last"))
	require.NoError(t, s.Close())

	s, fsys = open(t, path, boltstore.Options{}, memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, fsys, "new", []byte("new"), 0o644))
	a, err := fsys.Stat(ctx, "new")
	require.NoError(t, err)
	assert.Greater(t, a.Ino, last.Ino, "a number a checkpoint holds is not handed out again")
	_, err = fsys.RestoreCheckpoint("c1")
	require.NoError(t, err)
	assert.Equal(t, want, snapshot(t, fsys))
	require.NoError(t, s.Close())
	_, fsys = open(t, path, boltstore.Options{}, memfs.Options{})
	assert.Equal(t, want, snapshot(t, fsys), "and the file agrees")
}
