package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// FuzzLoad writes arbitrary records into a well-formed store (bbolt's own
// pages are bbolt's business) and loads it: Load either returns ErrCorrupt
// or a tree that can be walked and read in full, and never panics.
func FuzzLoad(f *testing.F) {
	now := time.Unix(1700000000, 5)
	file := encodeInode(&memfs.InodeRecord{Mode: 0o644, Nlink: 1, Size: 5, Atime: now, Mtime: now, Ctime: now,
		Xattrs: map[string][]byte{"user.a": []byte("b")}})
	dir := encodeInode(&memfs.InodeRecord{Mode: fs.ModeDir | 0o755, Nlink: 2})
	link := encodeInode(&memfs.InodeRecord{Mode: fs.ModeSymlink | 0o777, Nlink: 1, Size: 1, Target: "f"})
	f.Add(file, "f", uint64(2), uint64(0), []byte("hello"))
	f.Add(dir, "d", uint64(2), uint64(0), []byte(nil))
	f.Add(link, "l", uint64(2), uint64(0), []byte(nil))
	f.Add(encodeInode(&memfs.InodeRecord{Mode: fs.ModeNamedPipe | 0o644, Nlink: 1}), "p", uint64(2), uint64(0), []byte(nil))
	f.Add(encodeInode(&memfs.InodeRecord{Mode: fs.ModeDevice | 0o600, Nlink: 1, Rdev: 259<<8 | 1}), "b", uint64(2), uint64(0), []byte(nil))
	f.Add(file, "f", uint64(2), uint64(1), []byte("past the size"))
	f.Add(file, "..", uint64(1), uint64(0), []byte("x"))
	f.Add([]byte{1, 2, 3}, "f", uint64(2), uint64(0), []byte("x"))
	f.Fuzz(func(t *testing.T, inode []byte, name string, child, chunk uint64, data []byte) {
		path := filepath.Join(t.TempDir(), "m.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			if err := initialise(tx); err != nil {
				return err
			}
			if err := tx.Bucket(bucketInodes).Put(inoKey(2), inode); err != nil {
				return err
			}
			if name != "" && len(name) < 1000 {
				if err := tx.Bucket(bucketEntries).Put(entryKey(1, name), inoKey(child)); err != nil {
					return err
				}
			}
			if len(data) > 0 {
				return tx.Bucket(bucketData).Put(chunkKey(2, int64(chunk)), data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("a well-formed bbolt file fails to open: %v", err)
		}
		defer s.Close()
		fsys, err := s.Load(memfs.Options{})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Load: %v, want ErrCorrupt", err)
			}
			return
		}
		ctx := context.Background()
		var walk func(name string)
		walk = func(name string) {
			a, err := fsys.Stat(ctx, name)
			if err != nil {
				t.Fatalf("stat %s: %v", name, err)
			}
			switch {
			case a.IsDir():
				ents, err := fsys.ReadDir(ctx, name)
				if err != nil {
					t.Fatalf("readdir %s: %v", name, err)
				}
				for _, e := range ents {
					walk(mounts.Join(name, e.Name))
				}
			case a.Mode.IsRegular():
				// The head and the tail: a sparse file may be
				// exabytes long.
				f, err := fsys.Open(ctx, name)
				if err != nil {
					t.Fatalf("open %s: %v", name, err)
				}
				buf := make([]byte, 64<<10)
				for _, off := range []int64{0, max(a.Size-int64(len(buf)), 0)} {
					n, err := f.ReadAt(buf, off)
					if want := min(int64(len(buf)), a.Size-off); int64(n) != want || (err != nil && !errors.Is(err, io.EOF)) {
						t.Fatalf("read %s at %d: %d bytes, want %d: %v", name, off, n, want, err)
					}
				}
				f.Close()
			}
		}
		walk(".")
	})
}

func TestChunkKeyOrder(t *testing.T) {
	// One inode's chunks sort together and in index order, which cut
	// relies on.
	a, b, c := chunkKey(2, 255), chunkKey(2, 256), chunkKey(3, 0)
	if !(string(a) < string(b) && string(b) < string(c)) {
		t.Fatalf("chunk keys out of order: %x %x %x", a, b, c)
	}
	if binary.BigEndian.Uint64(b[8:]) != 256 {
		t.Fatal("index not big endian")
	}
}
