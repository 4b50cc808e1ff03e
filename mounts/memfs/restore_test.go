package memfs_test

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// image turns a replica's model back into what a persistent store hands
// Restore, content in pieces of 4 KiB (holes skipped) and in reverse order.
func (r *replica) image() memfs.Image {
	r.mu.Lock()
	defer r.mu.Unlock()
	var img memfs.Image
	type piece struct {
		ino uint64
		off int64
		b   []byte
	}
	var pieces []piece
	for ino, n := range r.inodes {
		if n.meta.Ino == ino {
			img.Inodes = append(img.Inodes, n.meta)
		}
		for name, child := range n.entries {
			img.Entries = append(img.Entries, memfs.EntryRecord{Dir: ino, Name: name, Ino: child})
		}
		for off := 0; off < len(n.data); off += 4096 {
			// The model fills holes with zeros; a store keeps none.
			if b := n.data[off:min(off+4096, len(n.data))]; strings.Trim(string(b), "\x00") != "" {
				pieces = append(pieces, piece{ino, int64(off), b})
			}
		}
	}
	img.Content = func(put func(memfs.WriteRecord) error) error {
		for i := len(pieces) - 1; i >= 0; i-- {
			p := pieces[i]
			if err := put(memfs.WriteRecord{Ino: p.ino, Off: p.off, Data: p.b}); err != nil {
				return err
			}
		}
		return nil
	}
	return img
}

func TestRestoreRebuildsTheTree(t *testing.T) {
	ctx := context.Background()
	rep := newReplica()
	fsys, _ := newFS(t, memfs.Options{Store: rep})
	build(t, fsys, "d/", "d/e/", "f", "d/e/g", "l->f")
	require.NoError(t, fsys.Link(ctx, "f", "d/e/h"))
	require.NoError(t, fsys.SetXattr(ctx, ".", "user.r", []byte("root"), 0))
	require.NoError(t, fsys.SetXattr(ctx, "f", "user.x", []byte("y"), 0))
	w := openW(t, fsys, "d/sparse", os.O_RDWR|os.O_CREATE)
	_, err := w.WriteAt([]byte("far"), 1<<20)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	stBefore, err := fsys.StatFS(ctx)
	require.NoError(t, err)

	rep2 := newReplica()
	restored, err := memfs.Restore(memfs.Options{Store: rep2}, rep.image())
	require.NoError(t, err)
	rep.compare(t, restored)
	stAfter, err := restored.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, stBefore, stAfter, "usage recounted")
	assert.Equal(t, uint32(2), stat(t, restored, "f").Nlink, "links recounted")
	assert.Equal(t, uint32(3), stat(t, restored, ".").Nlink, "the root's name, its . and d's ..")

	// New inodes are numbered past the restored ones, and changes reach
	// the new store.
	build(t, restored, "new")
	assert.Greater(t, stat(t, restored, "new").Ino, stat(t, restored, "d/sparse").Ino)
	assert.NotEmpty(t, rep2.ops, "the image itself is not reported, later changes are")
}

func TestRestoreDropsOrphans(t *testing.T) {
	now := time.Unix(10, 0)
	img := memfs.Image{
		Inodes: []memfs.InodeRecord{
			{Ino: 2, Mode: 0o644, Size: 3, Atime: now, Mtime: now, Ctime: now},
			{Ino: 3, Mode: 0o644, Size: 5},
		},
		Entries: []memfs.EntryRecord{{Dir: 1, Name: "kept", Ino: 2}},
		Content: func(put func(memfs.WriteRecord) error) error {
			if err := put(memfs.WriteRecord{Ino: 2, Data: []byte("abc")}); err != nil {
				return err
			}
			return put(memfs.WriteRecord{Ino: 3, Data: []byte("orphan")})
		},
	}
	fsys, err := memfs.Restore(memfs.Options{}, img)
	require.NoError(t, err)
	assert.Equal(t, "abc", readFile(t, fsys, "kept"))
	st, err := fsys.StatFS(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.Files-st.Ffree)
}

func TestRestoreRefusesBadImages(t *testing.T) {
	dir := memfs.InodeRecord{Ino: 2, Mode: fs.ModeDir | 0o755}
	file := memfs.InodeRecord{Ino: 3, Mode: 0o644, Size: 4}
	tests := []struct {
		name string
		img  memfs.Image
	}{
		{"inode 0", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 0, Mode: 0o644}}}},
		{"irregular type", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 2, Mode: fs.ModeIrregular | 0o644}}}},
		{"device number on a FIFO", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 2, Mode: fs.ModeNamedPipe | 0o644, Rdev: 259}}}},
		{"size of a socket", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 2, Mode: fs.ModeSocket | 0o644, Size: 3}}}},
		{"root not a dir", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 1, Mode: 0o644}}}},
		{"inode twice", memfs.Image{Inodes: []memfs.InodeRecord{file, file}}},
		{"negative size", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 3, Mode: 0o644, Size: -1}}}},
		{"target on a file", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 3, Mode: 0o644, Target: "x"}}}},
		{"xattr on a symlink", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 3, Mode: fs.ModeSymlink | 0o777, Target: "x", Xattrs: map[string][]byte{"user.a": nil}}}}},
		{"foreign xattr", memfs.Image{Inodes: []memfs.InodeRecord{{Ino: 3, Mode: 0o644, Xattrs: map[string][]byte{"trusted.a": nil}}}}},
		{"entry in a file", memfs.Image{Inodes: []memfs.InodeRecord{file, dir},
			Entries: []memfs.EntryRecord{{Dir: 3, Name: "x", Ino: 2}}}},
		{"entry to nothing", memfs.Image{Entries: []memfs.EntryRecord{{Dir: 1, Name: "x", Ino: 9}}}},
		{"entry to the root", memfs.Image{Entries: []memfs.EntryRecord{{Dir: 1, Name: "x", Ino: 1}}}},
		{"bad name", memfs.Image{Inodes: []memfs.InodeRecord{file}, Entries: []memfs.EntryRecord{{Dir: 1, Name: "a/b", Ino: 3}}}},
		{"control character", memfs.Image{Inodes: []memfs.InodeRecord{file}, Entries: []memfs.EntryRecord{{Dir: 1, Name: "a\x01", Ino: 3}}}},
		{"dotdot", memfs.Image{Inodes: []memfs.InodeRecord{file}, Entries: []memfs.EntryRecord{{Dir: 1, Name: "..", Ino: 3}}}},
		{"name twice", memfs.Image{Inodes: []memfs.InodeRecord{file, {Ino: 4, Mode: 0o644}},
			Entries: []memfs.EntryRecord{{Dir: 1, Name: "x", Ino: 3}, {Dir: 1, Name: "x", Ino: 4}}}},
		{"directory with two names", memfs.Image{Inodes: []memfs.InodeRecord{dir},
			Entries: []memfs.EntryRecord{{Dir: 1, Name: "a", Ino: 2}, {Dir: 1, Name: "b", Ino: 2}}}},
		{"content past the size", memfs.Image{Inodes: []memfs.InodeRecord{file},
			Entries: []memfs.EntryRecord{{Dir: 1, Name: "f", Ino: 3}},
			Content: func(put func(memfs.WriteRecord) error) error {
				return put(memfs.WriteRecord{Ino: 3, Off: 2, Data: []byte("abc")})
			}}},
		{"content of a directory", memfs.Image{Inodes: []memfs.InodeRecord{dir},
			Entries: []memfs.EntryRecord{{Dir: 1, Name: "d", Ino: 2}},
			Content: func(put func(memfs.WriteRecord) error) error {
				return put(memfs.WriteRecord{Ino: 2, Data: []byte("abc")})
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := memfs.Restore(memfs.Options{}, tt.img)
			assert.ErrorIs(t, err, memfs.ErrBadImage)
		})
	}
}

// syncStore counts commits and syncs.
type syncStore struct{ commits, syncs atomic.Int32 }

func (s *syncStore) Commit(*memfs.Mutation) error { s.commits.Add(1); return nil }
func (s *syncStore) Sync() error                  { s.syncs.Add(1); return nil }

func TestSyncerIsSyncedOnFsyncAndCloseAfterWrite(t *testing.T) {
	ctx := context.Background()
	st := &syncStore{}
	fsys, _ := newFS(t, memfs.Options{Store: st})
	build(t, fsys, "f")
	base := st.syncs.Load()
	assert.Equal(t, int32(1), base, "WriteFile closes a written file")

	r, err := fsys.Open(ctx, "f")
	require.NoError(t, err)
	require.NoError(t, r.Close())
	w := openW(t, fsys, "f", os.O_RDWR)
	require.NoError(t, w.Close())
	assert.Equal(t, base, st.syncs.Load(), "closing a file that did not change syncs nothing")

	w = openW(t, fsys, "f", os.O_RDWR)
	_, err = w.WriteAt([]byte("x"), 0)
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	assert.Equal(t, base+1, st.syncs.Load(), "fsync")
	require.NoError(t, w.Close())
	assert.Equal(t, base+2, st.syncs.Load(), "close after write")

	w = openW(t, fsys, "f", os.O_RDWR)
	require.NoError(t, w.Truncate(0))
	require.NoError(t, w.Close())
	assert.Equal(t, base+3, st.syncs.Load(), "close after truncate")

	require.NoError(t, fsys.Sync(ctx, "."))
	assert.Equal(t, base+4, st.syncs.Load(), "the whole mount")
}
