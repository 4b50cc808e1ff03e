package boltstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
)

var ctx = context.Background()

// open opens and loads the store at path, closing it at the end of the test
// unless the test closed it.
func open(t *testing.T, path string, opts boltstore.Options, mopts memfs.Options) (*boltstore.Store, *memfs.FS) {
	t.Helper()
	s, err := boltstore.Open(path, opts)
	require.NoError(t, err)
	fsys, err := s.Load(mopts)
	if err != nil {
		s.Close()
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, fsys
}

// entry is everything a name shows, for comparing two trees.
type entry struct {
	Attr   mounts.Attr
	Data   string
	Target string
	Xattrs map[string]string
}

// snapshot walks fsys and records every name. Atime is compared too:
// memfs never changes it on reads.
func snapshot(t *testing.T, fsys *memfs.FS) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	var walk func(name string)
	walk = func(name string) {
		a, err := fsys.Stat(ctx, name)
		require.NoError(t, err)
		// Normalise times to UTC: the store keeps instants, not zones.
		a.Atime, a.Mtime, a.Ctime = a.Atime.UTC(), a.Mtime.UTC(), a.Ctime.UTC()
		e := entry{Attr: a}
		switch {
		case a.IsDir():
			ents, err := fsys.ReadDir(ctx, name)
			require.NoError(t, err)
			for _, d := range ents {
				walk(mounts.Join(name, d.Name))
			}
		case a.Mode&fs.ModeSymlink != 0:
			e.Target, err = fsys.ReadLink(ctx, name)
			require.NoError(t, err)
		case a.Mode.IsRegular():
			e.Data = digest(t, fsys, name, a.Size)
		}
		if a.Mode&fs.ModeSymlink == 0 {
			names, err := fsys.ListXattr(ctx, name)
			require.NoError(t, err)
			for _, x := range names {
				v, err := fsys.GetXattr(ctx, name, x)
				require.NoError(t, err)
				if e.Xattrs == nil {
					e.Xattrs = map[string]string{}
				}
				e.Xattrs[x] = string(v)
			}
		}
		out[name] = e
	}
	walk(".")
	return out
}

// digest hashes a file's content: all of it up to 64 MiB, the first and
// last MiB of a larger (sparse) one. A digest keeps failure messages
// readable.
func digest(t *testing.T, fsys *memfs.FS, name string, size int64) string {
	t.Helper()
	f, err := fsys.Open(ctx, name)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	hash := func(off, n int64) {
		_, err := io.Copy(h, io.NewSectionReader(f, off, n))
		require.NoError(t, err)
	}
	if size <= 64<<20 {
		hash(0, size)
	} else {
		hash(0, 1<<20)
		hash(size-1<<20, 1<<20)
	}
	return fmt.Sprintf("%d bytes, sha256 %x", size, h.Sum(nil))
}

// fill builds a tree with every kind of thing the store must keep.
func fill(t *testing.T, fsys *memfs.FS) {
	t.Helper()
	caller := mounts.WithCaller(ctx, mounts.Caller{Uid: 1234, Gid: 5678})
	require.NoError(t, fsys.Mkdir(ctx, "d", 0o750))
	require.NoError(t, fsys.Mkdir(caller, "d/sub", 0o2775))
	require.NoError(t, mounts.WriteFile(caller, fsys, "d/sub/owned", []byte("by 1234"), 0o640))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "small", []byte("hello\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "empty", nil, 0o600))
	require.NoError(t, fsys.Symlink(ctx, "../small", "d/link"))
	require.NoError(t, fsys.Link(ctx, "small", "d/hard"))
	require.NoError(t, fsys.Chmod(ctx, "small", 0o4755))
	require.NoError(t, fsys.Chown(ctx, "empty", 42, 43))
	require.NoError(t, fsys.Chtimes(ctx, "d/sub", time.Unix(1000, 5), time.Unix(2000, 999999999)))
	require.NoError(t, fsys.SetXattr(ctx, "d", "user.colour", []byte("blue"), 0))
	require.NoError(t, fsys.SetXattr(ctx, "small", "user.bin", []byte{0, 1, 2, 255}, 0))
	require.NoError(t, fsys.SetXattr(ctx, ".", "user.root", []byte("r"), 0))

	// A sparse file across chunks: a run over a chunk boundary, a byte
	// far away, then a truncate that cuts into the run.
	f, err := fsys.OpenFile(ctx, "sparse", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	w := f.(mounts.WritableFile)
	_, err = w.WriteAt(bytes.Repeat([]byte("ab"), 50000), 30000)
	require.NoError(t, err)
	_, err = w.WriteAt([]byte("far"), 1<<30)
	require.NoError(t, err)
	require.NoError(t, w.Truncate(120000))
	require.NoError(t, w.Truncate(200000))
	_, err = w.WriteAt([]byte("tail"), 199996)
	require.NoError(t, err)
	require.NoError(t, w.Close())

	// Renames and removals leave no trace.
	require.NoError(t, mounts.WriteFile(ctx, fsys, "gone", []byte("x"), 0o644))
	require.NoError(t, fsys.Unlink(ctx, "gone"))
	require.NoError(t, fsys.Mkdir(ctx, "moved", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "moved/f", []byte("f"), 0o644))
	require.NoError(t, fsys.Rename(ctx, "moved", "d/moved", 0))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "x", []byte("x"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "y", []byte("yy"), 0o644))
	require.NoError(t, fsys.Rename(ctx, "x", "y", mounts.RenameExchange))
	require.NoError(t, fsys.Rename(ctx, "x", "small", 0)) // replaces one link of small
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	s, fsys := open(t, path, boltstore.Options{FlushInterval: time.Hour}, memfs.Options{})
	fill(t, fsys)
	want := snapshot(t, fsys)
	stBefore, err := fsys.StatFS(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close(), "close writes what is pending")

	s2, fsys2 := open(t, path, boltstore.Options{}, memfs.Options{})
	assert.Equal(t, want, snapshot(t, fsys2), "the tree survives a clean close")
	stAfter, err := fsys2.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, stBefore, stAfter, "usage is recounted")

	// New inodes do not collide with restored ones.
	require.NoError(t, mounts.WriteFile(ctx, fsys2, "new", []byte("n"), 0o644))
	seen := map[uint64]string{}
	for name, e := range snapshot(t, fsys2) {
		if prev, dup := seen[e.Attr.Ino]; dup {
			assert.Equal(t, e.Attr.Nlink > 1, true, "%s and %s share inode %d without being links", name, prev, e.Attr.Ino)
		}
		seen[e.Attr.Ino] = name
	}
	require.NoError(t, s2.Close())
}

// copyFile copies the store as it is on disk now: what a crash at this
// instant would leave (bbolt writes nothing between transactions).
func copyFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "crash.db")
	require.NoError(t, os.WriteFile(dst, b, 0o600))
	return dst
}

func TestSyncIsDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	_, fsys := open(t, path, boltstore.Options{FlushInterval: time.Hour}, memfs.Options{})

	f, err := fsys.OpenFile(ctx, "synced", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	w := f.(mounts.WritableFile)
	_, err = w.WriteAt([]byte("kept"), 0)
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	// Written but neither synced nor closed: an hour from disk.
	_, err = w.WriteAt([]byte("-later"), 4)
	require.NoError(t, err)

	crashed := copyFile(t, path)
	_, got := open(t, crashed, boltstore.Options{}, memfs.Options{})
	b, err := mounts.ReadFile(ctx, got, "synced")
	require.NoError(t, err)
	assert.Equal(t, "kept", string(b), "fsync'd data, and only that, is on disk")

	require.NoError(t, w.Close())
	crashed = copyFile(t, path)
	_, got = open(t, crashed, boltstore.Options{}, memfs.Options{})
	b, err = mounts.ReadFile(ctx, got, "synced")
	require.NoError(t, err)
	assert.Equal(t, "kept-later", string(b), "closing a written file syncs it")
}

func TestFlushInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	_, fsys := open(t, path, boltstore.Options{FlushInterval: 20 * time.Millisecond}, memfs.Options{})
	require.NoError(t, fsys.Mkdir(ctx, "dir", 0o755))
	assert.Eventually(t, func() bool {
		_, got := open(t, copyFile(t, path), boltstore.Options{}, memfs.Options{})
		_, err := got.Stat(ctx, "dir")
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "an unsynced change is written within the interval")
}

func TestOrphansAreDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	s, fsys := open(t, path, boltstore.Options{}, memfs.Options{})
	f, err := fsys.OpenFile(ctx, "open-unlinked", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.(mounts.WritableFile).WriteAt(bytes.Repeat([]byte("o"), 200000), 0)
	require.NoError(t, err)
	require.NoError(t, fsys.Unlink(ctx, "open-unlinked"))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "kept", []byte("k"), 0o644))
	require.NoError(t, s.Sync())
	crashed := copyFile(t, path) // the process dies with the file open

	require.Equal(t, 5, countKeys(t, crashed, "data"), "the orphan's 4 chunks and kept's are there before the restart")
	s2, got := open(t, crashed, boltstore.Options{}, memfs.Options{})
	st, err := got.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.Files-st.Ffree, "only kept is counted")
	assert.Equal(t, []string{"kept"}, names(t, got))
	require.NoError(t, s2.Close())
	assert.Equal(t, 1, countKeys(t, crashed, "data"), "the orphan's chunks are deleted")
	assert.Equal(t, 2, countKeys(t, crashed, "inodes"), "the root and kept: the orphan's inode is deleted")
	require.NoError(t, f.Close())
}

func names(t *testing.T, fsys *memfs.FS) []string {
	t.Helper()
	ents, err := fsys.ReadDir(ctx, ".")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name)
	}
	return out
}

// countKeys counts the keys of a bucket in a store no one holds.
func countKeys(t *testing.T, path, bucket string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	require.NoError(t, err)
	defer db.Close()
	n := 0
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucket)).ForEach(func(k, v []byte) error { n++; return nil })
	}))
	return n
}

func TestLargeFilesAreChunked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	// A small MaxPending makes the writer run (and Commit wait) many
	// times during the write.
	s, fsys := open(t, path, boltstore.Options{MaxPending: 100 << 10}, memfs.Options{})
	f, err := fsys.OpenFile(ctx, "big", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	w := f.(mounts.WritableFile)
	want := make([]byte, 5<<20)
	for i := range want {
		want[i] = byte(i * 7 / 3)
	}
	for off := 0; off < len(want); off += 12345 {
		_, err := w.WriteAt(want[off:min(off+12345, len(want))], int64(off))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.NoError(t, s.Close())
	assert.Equal(t, 80, countKeys(t, path, "data"), "5 MiB in 64 KiB chunks")

	_, got := open(t, path, boltstore.Options{}, memfs.Options{})
	b, err := mounts.ReadFile(ctx, got, "big")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, b), "content survives")
}

func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	s, fsys := open(t, path, boltstore.Options{FlushInterval: time.Millisecond, MaxPending: 32 << 10}, memfs.Options{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				name := fmt.Sprintf("g%d-%d", g, i%7)
				data := bytes.Repeat([]byte{byte(g), byte(i)}, 1000*(i%5+1))
				assert.NoError(t, mounts.WriteFile(ctx, fsys, name, data, 0o644))
				if i%10 == 9 {
					assert.NoError(t, fsys.Rename(ctx, name, name+"-r", 0))
				}
			}
		})
	}
	wg.Wait()
	want := snapshot(t, fsys)
	require.NoError(t, s.Close())
	_, got := open(t, path, boltstore.Options{}, memfs.Options{})
	assert.Equal(t, want, snapshot(t, got))
}

func TestQuotasApplyToTheRestoredTree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	s, fsys := open(t, path, boltstore.Options{}, memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", make([]byte, 3000), 0o644))
	require.NoError(t, s.Close())

	_, got := open(t, path, boltstore.Options{}, memfs.Options{MaxBytes: 4000, MaxFiles: 2})
	err := mounts.WriteFile(ctx, got, "b", make([]byte, 1001), 0o644)
	assert.ErrorIs(t, err, mounts.ErrNoSpace, "3000 restored bytes count against max_bytes")
	require.NoError(t, got.Unlink(ctx, "b"))
	require.NoError(t, mounts.WriteFile(ctx, got, "b", make([]byte, 1000), 0o644))
	assert.ErrorIs(t, got.Mkdir(ctx, "c", 0o755), mounts.ErrNoSpace, "two files restored and made")
}

func TestCommitAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	s, fsys := open(t, path, boltstore.Options{}, memfs.Options{})
	require.NoError(t, s.Close())
	err := fsys.Mkdir(ctx, "late", 0o755)
	assert.ErrorIs(t, err, boltstore.ErrClosed)
	assert.ErrorIs(t, s.Close(), boltstore.ErrClosed, "closed twice")
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	open(t, path, boltstore.Options{}, memfs.Options{})
	start := time.Now()
	_, err := boltstore.Open(path, boltstore.Options{LockTimeout: 100 * time.Millisecond})
	assert.ErrorIs(t, err, boltstore.ErrLocked)
	assert.Less(t, time.Since(start), 2*time.Second)
}

// writeStore makes a bbolt file with the given buckets and keys.
func writeStore(t *testing.T, path string, fill func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(fill))
	require.NoError(t, db.Close())
}

// validStore makes a store with one file and returns a func that changes
// one key of it.
func validStore(t *testing.T, path string) {
	t.Helper()
	s, fsys := open(t, path, boltstore.Options{}, memfs.Options{})
	require.NoError(t, fsys.Mkdir(ctx, "d", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "d/f", []byte("data"), 0o644))
	require.NoError(t, s.Close())
}

func put(bucket, key, value []byte) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.Put(key, value)
	}
}

func TestBadFilesAreRefusedAndUntouched(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		want error
	}{
		{name: "text file", want: boltstore.ErrNotOurs, make: func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte("not a database\n"), 1000), 0o644))
		}},
		{name: "another program's bbolt file", want: boltstore.ErrNotOurs, make: func(t *testing.T, path string) {
			writeStore(t, path, put([]byte("config"), []byte("k"), []byte("v")))
		}},
		{name: "a directory", want: boltstore.ErrNotOurs, make: func(t *testing.T, path string) {
			require.NoError(t, os.Mkdir(path, 0o755))
		}},
		{name: "newer format", want: boltstore.ErrNewerFormat, make: func(t *testing.T, path string) {
			validStore(t, path)
			writeStore(t, path, put([]byte("vfsmount"), []byte("format"), binary.BigEndian.AppendUint32(nil, boltstore.FormatVersion+1)))
		}},
		{name: "entry to a missing inode", want: boltstore.ErrCorrupt, make: func(t *testing.T, path string) {
			validStore(t, path)
			writeStore(t, path, put([]byte("entries"), append(binary.BigEndian.AppendUint64(nil, 1), "ghost"...), binary.BigEndian.AppendUint64(nil, 999)))
		}},
		{name: "garbled inode", want: boltstore.ErrCorrupt, make: func(t *testing.T, path string) {
			validStore(t, path)
			writeStore(t, path, put([]byte("inodes"), binary.BigEndian.AppendUint64(nil, 2), []byte{1, 2, 3}))
		}},
		{name: "content past the size", want: boltstore.ErrCorrupt, make: func(t *testing.T, path string) {
			validStore(t, path)
			writeStore(t, path, put([]byte("data"), binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 3), 5), []byte("x")))
		}},
		{name: "damaged meta pages", want: boltstore.ErrNotOurs, make: func(t *testing.T, path string) {
			validStore(t, path)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			for i := 16; i < 2*4096; i += 7 {
				b[i] ^= 0x5a
			}
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mem.db")
			tt.make(t, path)
			before, _ := os.ReadFile(path)
			fiBefore, err := os.Stat(path)
			require.NoError(t, err)

			s, err := boltstore.Open(path, boltstore.Options{})
			if err == nil {
				_, err = s.Load(memfs.Options{})
				assert.NoError(t, s.Close())
			}
			require.ErrorIs(t, err, tt.want)
			assert.NotContains(t, err.Error(), path, "the caller names the file")

			after, _ := os.ReadFile(path)
			fiAfter, err := os.Stat(path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(before, after), "the file is left untouched")
			assert.Equal(t, fiBefore.ModTime(), fiAfter.ModTime())
		})
	}
}

func TestMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope", "mem.db")
	_, err := boltstore.Open(path, boltstore.Options{})
	assert.ErrorIs(t, err, boltstore.ErrNoDir)
	_, err = os.Stat(filepath.Dir(path))
	assert.ErrorIs(t, err, fs.ErrNotExist, "nothing created")
}

func TestEmptyFileIsANewStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	s, fsys := open(t, path, boltstore.Options{}, memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", []byte("f"), 0o644))
	require.NoError(t, s.Close())
	_, got := open(t, path, boltstore.Options{}, memfs.Options{})
	b, err := mounts.ReadFile(ctx, got, "f")
	require.NoError(t, err)
	assert.Equal(t, "f", string(b))
}
