package remotefs_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
)

// The change stream carries each changed name's state: a change made on
// the remote machine by another program is seen by the next stat, and
// that stat is answered here, without a round trip (the kernel face,
// told the name changed, looks it up again at once).
func TestChangeStreamCarriesState(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	fsys := newLink(t, dir).open(t, false)
	ctx := context.Background()
	a, err := fsys.Stat(ctx, "a.txt")
	require.NoError(t, err)
	require.EqualValues(t, 3, a.Size)
	_, err = fsys.Stat(ctx, "sub/b.txt")
	require.ErrorIs(t, err, fs.ErrNotExist)
	before := remotefs.Requests(fsys)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("three"), 0o644))
	require.Eventually(t, func() bool {
		a, err := fsys.Stat(ctx, "a.txt")
		return err == nil && a.Size == 5
	}, 5*time.Second, 5*time.Millisecond, "a change made elsewhere is seen")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub/b.txt"), []byte("new"), 0o644))
	require.Eventually(t, func() bool {
		a, err := fsys.Stat(ctx, "sub/b.txt")
		return err == nil && a.Size == 3
	}, 5*time.Second, 5*time.Millisecond, "a name made elsewhere is seen")
	require.NoError(t, os.Remove(filepath.Join(dir, "a.txt")))
	require.Eventually(t, func() bool {
		_, err := fsys.Stat(ctx, "a.txt")
		return errorsIsNotExist(err)
	}, 5*time.Second, 5*time.Millisecond, "a name removed elsewhere is gone")
	assert.Equal(t, before, remotefs.Requests(fsys), "the stats were answered from the change stream's states")

	// The listing changed: it is asked for again, once, and is right.
	ents, err := fsys.ReadDir(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, []string{"sub"}, names(ents))
	ents, err = fsys.ReadDir(ctx, "sub")
	require.NoError(t, err)
	assert.Equal(t, []string{"b.txt"}, names(ents))
}

func errorsIsNotExist(err error) bool { return err != nil && os.IsNotExist(err) }

func names(ents []mounts.DirEntry) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name)
	}
	return out
}

// A state is never older than an answer the daemon had before it: the
// daemon's own creates and removes, each followed at once by a stat,
// are never contradicted by an event of the change before (the peer takes
// and sends a batch's states only while no change of its runs).
func TestChangeStreamStateNeverStale(t *testing.T) {
	dir := t.TempDir()
	fsys := newLink(t, dir).open(t, false).(*remotefs.FS)
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		f, err := fsys.OpenFile(ctx, "x", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		require.NoError(t, err, "create %d", i)
		if i%2 == 0 {
			_, err = f.(mounts.WritableFile).WriteAt([]byte("data"), 0)
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
		a, err := fsys.Stat(ctx, "x")
		require.NoError(t, err, "stat after create %d", i)
		if i%2 == 0 {
			require.EqualValues(t, 4, a.Size, "size after the write of %d", i)
		}
		require.NoError(t, fsys.Unlink(ctx, "x"), "unlink %d", i)
		_, err = fsys.Stat(ctx, "x")
		require.ErrorIs(t, err, fs.ErrNotExist, "stat after unlink %d", i)
		require.NoError(t, fsys.Mkdir(ctx, "d", 0o755), "mkdir %d", i)
		a, err = fsys.Stat(ctx, "d")
		require.NoError(t, err, "stat after mkdir %d", i)
		require.True(t, a.IsDir())
		require.NoError(t, fsys.Rmdir(ctx, "d"), "rmdir %d", i)
		_, err = fsys.Stat(ctx, "d")
		require.ErrorIs(t, err, fs.ErrNotExist, "stat after rmdir %d", i)
	}
}

// bigFile writes dir/big, size bytes that differ from one offset to the
// next within any chunk, and returns them.
func bigFile(t *testing.T, dir string, size int) []byte {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i/4096)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), data, 0o644))
	return data
}

// A large file read in order comes in chunks asked for ahead of the
// reader; what the reader gets is the file, and a write through another
// handle shows in what it reads next, even where a chunk was asked for
// before it.
func TestLargeFileReadAhead(t *testing.T) {
	dir := t.TempDir()
	const size = 6<<20 + 12345
	want := bigFile(t, dir, size)
	fsys := newLink(t, dir).open(t, false).(*remotefs.FS)
	ctx := context.Background()
	f, err := fsys.Open(ctx, "big")
	require.NoError(t, err)
	defer f.Close()
	got := make([]byte, 0, size)
	buf := make([]byte, 128<<10)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		got = append(got, buf[:n]...)
		off += int64(n)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		if off == 2<<20 {
			// Ahead of the reader, chunks are asked for: a write
			// through another handle, past them, shows all the same.
			w, err := fsys.OpenFile(ctx, "big", os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = w.(mounts.WritableFile).WriteAt([]byte("written meanwhile"), 3<<20)
			require.NoError(t, err)
			require.NoError(t, w.Close())
			copy(want[3<<20:], "written meanwhile")
		}
	}
	require.Equal(t, len(want), len(got))
	require.True(t, bytes.Equal(want, got), "the content read is the file's")
}

// A large file read in order by reads that do not line up with its chunks
// (tar reads 10 KiB records) keeps the chunk it reads and the next ones
// asked for, each once: a read across the end of a chunk is served from
// it and the next, not by a chunk of its own that would put the reader
// one round trip behind at every boundary, and a read just behind the
// reader is not asked again. A reader that jumps asks for the chunk it
// reads only.
func TestLargeFileChunksTileTheFile(t *testing.T) {
	dir := t.TempDir()
	const chunk = remotefs.ReadAheadSize
	const size = 6*chunk + 4321
	want := bigFile(t, dir, size)
	fsys := newLink(t, dir).open(t, false).(*remotefs.FS)
	ctx := context.Background()
	f, err := fsys.Open(ctx, "big")
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 10<<10)
	var got []byte
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		got = append(got, buf[:n]...)
		if err == nil {
			// The chunk of the read's last byte, the one before it
			// (the kernel's READs may come out of order) and the
			// next ones, within the file.
			at := (off + int64(n) - 1) / chunk * chunk
			var expect []int64
			for c := max(0, at-chunk); c < at+4*chunk && c < size; c += chunk {
				expect = append(expect, c)
			}
			require.Equal(t, expect, remotefs.ChunksAsked(f), "after the read at %d", off)
			if at > 0 && off < at {
				// Just past a boundary, a read in the chunk
				// before (a READ of the kernel's read-ahead
				// overtaken by the next) is served from the
				// chunk kept, not asked for again.
				before := remotefs.ChunkAsks(f)
				back := make([]byte, 100)
				_, err := f.ReadAt(back, at-200)
				require.NoError(t, err)
				require.Equal(t, want[at-200:at-100], back)
				require.Equal(t, before, remotefs.ChunkAsks(f), "the chunk behind was kept")
			}
		}
		off += int64(n)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
	}
	require.True(t, bytes.Equal(want, got), "the content read is the file's")

	// A jump back: the chunk read, and no more.
	n, err := f.ReadAt(buf, chunk+100)
	require.NoError(t, err)
	require.Equal(t, want[chunk+100:chunk+100+int64(n)], buf[:n])
	require.Equal(t, []int64{chunk}, remotefs.ChunksAsked(f))
}

// A file of several links (a pack a local clone shares) stays cached
// while another name is created and removed beside it (git's
// index.lock), and a new link to it made elsewhere still shows in its
// link count.
func TestLinkedFilesKeptAcrossOtherChanges(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pack"), []byte("objects"), 0o644))
	require.NoError(t, os.Link(filepath.Join(dir, "pack"), filepath.Join(dir, "pack2")))
	fsys := newLink(t, dir).open(t, false).(*remotefs.FS)
	ctx := context.Background()
	a, err := fsys.Stat(ctx, "pack")
	require.NoError(t, err)
	require.EqualValues(t, 2, a.Nlink)
	// Each change's event is in before the next change.
	var told atomic.Int64
	fsys.OnChange(func(names ...string) {
		if slices.Contains(names, "lock") {
			told.Add(1)
		}
	})
	toldOf := func(what string, was int64) {
		t.Helper()
		require.Eventually(t, func() bool { return told.Load() > was }, 10*time.Second, time.Millisecond, "the change stream tells of %s", what)
	}
	for range 3 {
		was := told.Load()
		f, err := fsys.OpenFile(ctx, "lock", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		toldOf("the lock's creation", was)
		was = told.Load()
		require.NoError(t, fsys.Unlink(ctx, "lock"))
		toldOf("the lock's removal", was)
	}
	before := remotefs.Requests(fsys)
	a, err = fsys.Stat(ctx, "pack")
	require.NoError(t, err)
	assert.EqualValues(t, 2, a.Nlink)
	assert.Equal(t, before, remotefs.Requests(fsys), "the linked file's attributes were kept")

	require.NoError(t, os.Link(filepath.Join(dir, "pack"), filepath.Join(dir, "pack3")))
	require.Eventually(t, func() bool {
		a, err := fsys.Stat(ctx, "pack")
		return err == nil && a.Nlink == 3
	}, 5*time.Second, 5*time.Millisecond, "a link made elsewhere shows in the count")
}
