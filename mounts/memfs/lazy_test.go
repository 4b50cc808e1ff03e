package memfs

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// lazyImage is a tree of /a (content "alpha..."), /d/b ("bravo..."), an
// empty file and a symlink, whose content comes from fetch.
func lazyImage(fetch Fetcher) Image {
	now := time.Unix(1700000000, 0)
	return Image{
		Inodes: []InodeRecord{
			{Ino: 1, Mode: fs.ModeDir | 0o755, Mtime: now},
			{Ino: 2, Mode: 0o644, Size: int64(len(lazyData[2])), Mtime: now},
			{Ino: 3, Mode: fs.ModeDir | 0o755, Mtime: now},
			{Ino: 4, Mode: 0o600, Size: int64(len(lazyData[4])), Mtime: now},
			{Ino: 5, Mode: 0o644, Mtime: now},
			{Ino: 6, Mode: fs.ModeSymlink | 0o777, Target: "a", Mtime: now},
		},
		Entries: []EntryRecord{{1, "a", 2}, {1, "d", 3}, {3, "b", 4}, {1, "empty", 5}, {1, "link", 6}},
		Fetch:   fetch,
	}
}

var lazyData = map[uint64]string{2: strings.Repeat("alpha ", 30000), 4: "bravo"}

func TestLazyRestore(t *testing.T) {
	ctx := context.Background()
	var fetches atomic.Int32
	var fail atomic.Bool
	fetch := func(ctx context.Context, ino uint64, put func(WriteRecord) error) error {
		fetches.Add(1)
		if fail.Load() {
			return errors.New("store down")
		}
		d := lazyData[ino]
		// In two pieces, the second first.
		half := len(d) / 2
		if err := put(WriteRecord{Ino: ino, Off: int64(half), Data: []byte(d[half:])}); err != nil {
			return err
		}
		return put(WriteRecord{Ino: ino, Off: 0, Data: []byte(d[:half])})
	}
	f, err := Restore(Options{}, lazyImage(fetch))
	if err != nil {
		t.Fatal(err)
	}
	// Listable and stat-able at once, with no fetch.
	ents, err := f.ReadDir(ctx, ".")
	if err != nil || len(ents) != 4 {
		t.Fatalf("ReadDir = %v, %v", ents, err)
	}
	a, err := f.Stat(ctx, "a")
	if err != nil || a.Size != int64(len(lazyData[2])) {
		t.Fatalf("Stat a = %+v, %v", a, err)
	}
	if n := fetches.Load(); n != 0 || f.Pending() != 2 {
		t.Fatalf("%d fetches, %d pending before any read; want 0 and 2", n, f.Pending())
	}
	// A failed fetch fails the open with EIO and leaves the file to fetch.
	fail.Store(true)
	if _, err := f.Open(ctx, "a"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("open with the store down: %v; want EIO", err)
	}
	if _, err := f.Checkpoint("c1"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("checkpoint with content missing: %v; want EIO", err)
	}
	fail.Store(false)
	// Concurrent first reads fetch once.
	var wg sync.WaitGroup
	before := fetches.Load()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := mounts.ReadFile(ctx, f, "a")
			if err != nil || string(b) != lazyData[2] {
				t.Errorf("read a: %d bytes, %v", len(b), err)
			}
		}()
	}
	wg.Wait()
	if n := fetches.Load() - before; n != 1 {
		t.Errorf("%d fetches of a for 8 concurrent reads; want 1", n)
	}
	if b, err := mounts.ReadFile(ctx, f, "link"); err == nil {
		t.Errorf("read through a symlink: %q", b)
	}
	// Truncate fetches first (the rest of the file is kept).
	if err := f.Truncate(ctx, "d/b", 3); err != nil {
		t.Fatal(err)
	}
	if b, _ := mounts.ReadFile(ctx, f, "d/b"); string(b) != "bra" {
		t.Errorf("d/b after truncate = %q", b)
	}
	if f.Pending() != 0 {
		t.Errorf("%d pending after every file was read", f.Pending())
	}
	if _, err := f.Checkpoint("c1"); err != nil {
		t.Fatalf("checkpoint once fetched: %v", err)
	}
}

func TestLazyLoadAllAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	f, err := Restore(Options{}, lazyImage(func(ctx context.Context, ino uint64, put func(WriteRecord) error) error {
		return put(WriteRecord{Ino: ino, Data: []byte(lazyData[ino])})
	}))
	if err != nil {
		t.Fatal(err)
	}
	// Freezing fetches what is left: the checkpoint holds the content.
	z := f.Freeze()
	if _, err := z.Checkpoint("c1", ""); err != nil {
		t.Fatal(err)
	}
	z.Release()
	if f.Pending() != 0 {
		t.Fatalf("%d pending after a checkpoint", f.Pending())
	}
	v, err := f.CheckpointView(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := mounts.ReadFile(ctx, v, "d/b"); string(b) != "bravo" {
		t.Errorf("checkpoint view d/b = %q", b)
	}
	if err := f.LoadAll(ctx, 4); err != nil {
		t.Fatal(err)
	}
	// A file unlinked before it was fetched is never needed.
	g, err := Restore(Options{}, lazyImage(func(ctx context.Context, ino uint64, put func(WriteRecord) error) error {
		return errors.New("never")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := mounts.Unlink(ctx, g, "a"); err != nil {
		t.Fatal(err)
	}
	if err := mounts.Unlink(ctx, g, "d/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Checkpoint("c1"); err != nil {
		t.Fatalf("checkpoint with only unlinked files unfetched: %v", err)
	}
}
