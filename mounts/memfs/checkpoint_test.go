package memfs_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// dump describes the whole tree: one line per name with its type, mode,
// link count, inode and content (or target).
func dump(t testing.TB, fsys mounts.FS) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	var walk func(name string)
	walk = func(name string) {
		a := stat(t, fsys, name)
		line := fmt.Sprintf("%s %v n%d i%d", name, a.Mode, a.Nlink, a.Ino)
		switch {
		case a.IsDir():
			ents, err := fsys.ReadDir(ctx, name)
			require.NoError(t, err)
			for _, e := range ents {
				walk(mounts.Join(name, e.Name))
			}
		case a.Mode&fs.ModeSymlink != 0:
			target, err := fsys.ReadLink(ctx, name)
			require.NoError(t, err)
			line += " -> " + target
		default:
			line += " " + readFile(t, fsys, name)
		}
		if a.Mode&fs.ModeSymlink == 0 {
			xs, err := mounts.ListXattr(ctx, fsys, name)
			require.NoError(t, err)
			for _, x := range xs {
				v, err := mounts.GetXattr(ctx, fsys, name, x)
				require.NoError(t, err)
				line += fmt.Sprintf(" %s=%s", x, v)
			}
		}
		lines = append(lines, line)
	}
	walk(".")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// mess changes the tree every way there is.
func mess(t testing.TB, fsys *memfs.FS) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte("changed a"), 0o644))
	require.NoError(t, mounts.Unlink(ctx, fsys, "b"))
	require.NoError(t, mounts.Rename(ctx, fsys, "d", "moved", 0))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "moved/new", []byte("new"), 0o600))
	require.NoError(t, mounts.Link(ctx, fsys, "moved/f", "hard"))
	require.NoError(t, mounts.Chmod(ctx, fsys, "l-dir", 0o700))
	require.NoError(t, mounts.SetXattr(ctx, fsys, "a", "user.k", []byte("v2"), 0))
	require.NoError(t, mounts.Truncate(ctx, fsys, "big", 70000))
	require.NoError(t, mounts.Symlink(ctx, fsys, "a", "s2"))
}

func seed(t testing.TB, fsys *memfs.FS) {
	t.Helper()
	build(t, fsys, "a", "b", "d/", "d/f", "d/e/", "d/e/g", "s->a", "l-dir/")
	require.NoError(t, mounts.SetXattr(context.Background(), fsys, "a", "user.k", []byte("v1"), 0))
	big := make([]byte, 200000)
	for i := range big {
		big[i] = byte(i)
	}
	require.NoError(t, mounts.WriteFile(context.Background(), fsys, "big", big, 0o644))
}

func TestCheckpointRestoreWholeTree(t *testing.T) {
	rep := newReplica()
	fsys, _ := newFS(t, memfs.Options{Store: rep})
	seed(t, fsys)
	before := dump(t, fsys)
	info, err := fsys.Checkpoint("c1")
	require.NoError(t, err)
	assert.Equal(t, "c1", info.ID)
	mess(t, fsys)
	after := dump(t, fsys)
	require.NotEqual(t, before, after)
	_, err = fsys.Checkpoint("c2")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(context.Background(), fsys, "late", []byte("late"), 0o644))

	names, err := fsys.RestoreCheckpoint("c1")
	require.NoError(t, err)
	assert.Equal(t, before, dump(t, fsys), "restored to c1")
	for _, n := range []string{"a", "b", "d", "moved", "moved/new", "hard", "big", "s2", "late"} {
		assert.Contains(t, names, n, "names changed since c1")
	}
	rep.compare(t, fsys) // the store saw the restore

	// A restore is undone by a newer checkpoint.
	_, err = fsys.RestoreCheckpoint("c2")
	require.NoError(t, err)
	assert.Equal(t, after, dump(t, fsys), "restored to c2")
	rep.compare(t, fsys)

	// And the tree keeps working, and checkpointing, after restores.
	require.NoError(t, mounts.WriteFile(context.Background(), fsys, "moved/new", []byte("again"), 0o644))
	_, err = fsys.Checkpoint("c3")
	require.NoError(t, err)
	_, err = fsys.RestoreCheckpoint("c1")
	require.NoError(t, err)
	assert.Equal(t, before, dump(t, fsys))
	_, err = fsys.RestoreCheckpoint("c3")
	require.NoError(t, err)
	assert.Equal(t, "again", readFile(t, fsys, "moved/new"))
	rep.compare(t, fsys)
}

func TestCheckpointUnknownIDChangesNothing(t *testing.T) {
	fsys, _ := newFS(t, memfs.Options{})
	seed(t, fsys)
	_, err := fsys.RestoreCheckpoint("nope")
	assert.ErrorIs(t, err, memfs.ErrNoCheckpoint)
	assert.ErrorContains(t, err, `"nope"`)
	_, err = fsys.Checkpoint("c1")
	require.NoError(t, err)
	mess(t, fsys)
	now := dump(t, fsys)
	_, err = fsys.RestoreCheckpoint("c0")
	assert.ErrorIs(t, err, memfs.ErrNoCheckpoint)
	assert.Equal(t, now, dump(t, fsys))
	assert.ErrorIs(t, fsys.DeleteCheckpoint("c0"), memfs.ErrNoCheckpoint)
	_, err = fsys.Checkpoint("c1")
	assert.ErrorIs(t, err, fs.ErrExist)
}

func TestCheckpointDeleteKeepsTheOthers(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	seed(t, fsys)
	var states []string
	for i := range 5 {
		require.NoError(t, mounts.WriteFile(ctx, fsys, fmt.Sprintf("f%d", i), []byte("x"), 0o644))
		require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte(fmt.Sprint("a", i)), 0o644))
		if i == 2 {
			require.NoError(t, mounts.Unlink(ctx, fsys, "b"))
		}
		states = append(states, dump(t, fsys))
		_, err := fsys.Checkpoint(fmt.Sprint("c", i))
		require.NoError(t, err)
	}
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte("now"), 0o644))
	now := dump(t, fsys)
	// Drop the oldest, a middle one and the newest.
	require.NoError(t, fsys.DeleteCheckpoint("c0"))
	require.NoError(t, fsys.DeleteCheckpoint("c2"))
	require.NoError(t, fsys.DeleteCheckpoint("c4"))
	var ids []string
	for _, c := range fsys.Checkpoints() {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"c1", "c3"}, ids)
	for _, i := range []int{1, 3} {
		_, err := fsys.RestoreCheckpoint(fmt.Sprint("c", i))
		require.NoError(t, err)
		assert.Equal(t, states[i], dump(t, fsys), "c%d", i)
	}
	// What changed since c3 (the newest now) includes what came after the
	// deleted c4: restoring c3 after writing again brings c3 back.
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte("later"), 0o644))
	_, err := fsys.RestoreCheckpoint("c3")
	require.NoError(t, err)
	assert.Equal(t, states[3], dump(t, fsys))
	_ = now
	require.NoError(t, fsys.DeleteCheckpoint("c1"))
	require.NoError(t, fsys.DeleteCheckpoint("c3"))
	assert.Empty(t, fsys.Checkpoints())
	// With none left, a new first checkpoint starts over.
	_, err = fsys.Checkpoint("again")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte("x"), 0o644))
	_, err = fsys.RestoreCheckpoint("again")
	require.NoError(t, err)
	assert.Equal(t, states[3], dump(t, fsys))
}

func TestCheckpointRestoreKeepsOpenFiles(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	build(t, fsys, "f")
	_, err := fsys.Checkpoint("c1")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", []byte("written after"), 0o644))
	r, err := fsys.Open(ctx, "f")
	require.NoError(t, err)
	defer r.Close()
	w := openW(t, fsys, "f", os.O_WRONLY)
	_, err = fsys.RestoreCheckpoint("c1")
	require.NoError(t, err)
	assert.Equal(t, "f", readFile(t, fsys, "f"), "the name shows the checkpoint")
	got, err := io.ReadAll(io.NewSectionReader(r, 0, 100))
	require.NoError(t, err)
	assert.Equal(t, "written after", string(got), "an open file keeps what it had")
	// A write through the old handle goes to what it had, not the name.
	_, err = w.WriteAt([]byte("W"), 0)
	require.NoError(t, err)
	assert.Equal(t, "f", readFile(t, fsys, "f"))
	got, err = io.ReadAll(io.NewSectionReader(r, 0, 100))
	require.NoError(t, err)
	assert.Equal(t, "Written after", string(got))
	require.NoError(t, w.Close())
	used, err := fsys.StatFS(ctx)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	freed, err := fsys.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, used.Ffree+1, freed.Ffree, "the copy is freed with its last handle")
}

func TestCheckpointSharesPages(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	big := make([]byte, 1<<20)
	require.NoError(t, mounts.WriteFile(ctx, fsys, "big", big, 0o644))
	first, err := fsys.Checkpoint("c1")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, first.Bytes, int64(1<<20))
	w := openW(t, fsys, "big", os.O_WRONLY)
	_, err = w.WriteAt([]byte("x"), 5)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	second, err := fsys.Checkpoint("c2")
	require.NoError(t, err)
	assert.Equal(t, 1, second.Inodes)
	assert.Less(t, second.Bytes, int64(64<<10+1024), "one page changed: one page held")
	// The first checkpoint still has the old page.
	v, err := fsys.CheckpointView(ctx, "c1")
	require.NoError(t, err)
	b, err := mounts.ReadFile(ctx, v, "big")
	require.NoError(t, err)
	assert.Equal(t, byte(0), b[5])
	assert.Equal(t, byte('x'), []byte(readFile(t, fsys, "big"))[5])
}

func TestCheckpointUnderConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	const writers, rounds = 4, 200
	for i := range writers {
		require.NoError(t, mounts.Mkdir(ctx, fsys, fmt.Sprint("w", i), 0o755))
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				// Each round writes file r, then bumps the counter: a
				// consistent state has counter == number of files.
				name := fmt.Sprintf("w%d/f%d", i, r)
				if err := mounts.WriteFile(ctx, fsys, name, []byte("x"), 0o644); err != nil {
					t.Error(err)
					return
				}
				// The counter is replaced by a rename, one operation: a
				// WriteFile is three (create-truncate, write, close), and
				// a checkpoint between the first two saw it empty.
				tmp := fmt.Sprintf("tmp%d", i)
				if err := mounts.WriteFile(ctx, fsys, tmp, []byte(fmt.Sprint(r+1)), 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := mounts.Rename(ctx, fsys, tmp, fmt.Sprintf("w%d/count", i), 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var ids []string
	for c := 0; c < 20; c++ {
		id := fmt.Sprint("c", c)
		_, err := fsys.Checkpoint(id)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	wg.Wait()
	for _, id := range ids {
		v, err := fsys.CheckpointView(ctx, id)
		require.NoError(t, err)
		for i := range writers {
			ents, err := v.ReadDir(ctx, fmt.Sprint("w", i))
			require.NoError(t, err)
			files := 0
			count := "0"
			for _, e := range ents {
				if e.Name == "count" {
					b, err := mounts.ReadFile(ctx, v, fmt.Sprintf("w%d/count", i))
					require.NoError(t, err)
					count = string(b)
				} else {
					files++
				}
			}
			// A checkpoint falls between two calls of a writer: the
			// counter is the number of files, or one behind.
			assert.Contains(t, []string{fmt.Sprint(files), fmt.Sprint(files - 1)}, count, "checkpoint %s, writer %d", id, i)
		}
	}
	// Restore under writers: every write after the restore lands.
	_, err := fsys.RestoreCheckpoint(ids[0])
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, fsys, "after", []byte("ok"), 0o644))
	assert.Equal(t, "ok", readFile(t, fsys, "after"))
}

func TestCheckpointRestorePaths(t *testing.T) {
	ctx := context.Background()
	rep := newReplica()
	fsys, _ := newFS(t, memfs.Options{Store: rep})
	seed(t, fsys)
	_, err := fsys.Checkpoint("c1")
	require.NoError(t, err)
	mess(t, fsys) // a changed, b gone, d moved, ...
	require.NoError(t, mounts.WriteFile(ctx, fsys, "keep", []byte("keep"), 0o644))

	frozen := fsys.Freeze()
	names, err := frozen.Restore("c1", []string{"a", "b", "d/e", "s2"}, memfs.RestoreMark{})
	frozen.Release()
	require.NoError(t, err)
	assert.Equal(t, "a", readFile(t, fsys, "a"))
	assert.Equal(t, "b", readFile(t, fsys, "b"), "a removed name comes back")
	assert.Equal(t, "d/e/g", readFile(t, fsys, "d/e/g"), "below a parent made again")
	assert.False(t, exists(fsys, "d/f"), "the parent made again holds only what was restored")
	assert.False(t, exists(fsys, "s2"), "a name the checkpoint lacks is removed")
	assert.Equal(t, "keep", readFile(t, fsys, "keep"), "other names are left alone")
	assert.True(t, exists(fsys, "moved/f"))
	for _, n := range []string{"a", "b", "d", "d/e", "d/e/g", "s2"} {
		assert.Contains(t, names, n)
	}
	v, err := mounts.GetXattr(ctx, fsys, "a", "user.k")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(v))
	rep.compare(t, fsys)

	// A directory with a hard link inside: the links stay one file.
	require.NoError(t, mounts.Mkdir(ctx, fsys, "h", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "h/x", []byte("x"), 0o644))
	require.NoError(t, mounts.Link(ctx, fsys, "h/x", "h/y"))
	_, err = fsys.Checkpoint("c2")
	require.NoError(t, err)
	require.NoError(t, mounts.Unlink(ctx, fsys, "h/y"))
	frozen = fsys.Freeze()
	_, err = frozen.Restore("c2", []string{"h"}, memfs.RestoreMark{})
	frozen.Release()
	require.NoError(t, err)
	assert.Equal(t, stat(t, fsys, "h/x").Ino, stat(t, fsys, "h/y").Ino)
	assert.Equal(t, uint32(2), stat(t, fsys, "h/x").Nlink)
	rep.compare(t, fsys)

	frozen = fsys.Freeze()
	_, err = frozen.Restore("c9", []string{"a"}, memfs.RestoreMark{})
	frozen.Release()
	assert.ErrorIs(t, err, memfs.ErrNoCheckpoint)
}

// TestCheckpointRestoreOfRemovedDirectory: a directory removed after a
// checkpoint, and a new file made after, come back and go.
func TestCheckpointRestoreOfRemovedDirectory(t *testing.T) {
	ctx := context.Background()
	rep := newReplica()
	fsys, _ := newFS(t, memfs.Options{Store: rep})
	build(t, fsys, "keep", "d/", "d/x")
	_, err := fsys.Checkpoint("c1")
	require.NoError(t, err)
	want := dump(t, fsys)
	dIno := stat(t, fsys, "d").Ino
	require.NoError(t, mounts.Unlink(ctx, fsys, "d/x"))
	require.NoError(t, mounts.Rmdir(ctx, fsys, "d"))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "new", []byte("new"), 0o644))
	assert.Greater(t, stat(t, fsys, "new").Ino, dIno, "numbers are never reused while the tree lives")
	_, err = fsys.RestoreCheckpoint("c1")
	require.NoError(t, err)
	assert.Equal(t, want, dump(t, fsys))
}
