package memfs_test

import (
	"context"
	"os"
	"testing"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// BenchmarkWriteAt writes 1 MiB blocks over a 64 MiB window, so it measures
// steady-state page copies rather than growing the heap without end.
func BenchmarkWriteAt(b *testing.B) {
	fsys, _ := newFS(b, memfs.Options{})
	w := openW(b, fsys, "f", os.O_RDWR|os.O_CREATE)
	defer w.Close()
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := w.WriteAt(buf, int64(i%64)<<20); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkReadAt(b *testing.B) {
	fsys, _ := newFS(b, memfs.Options{})
	w := openW(b, fsys, "f", os.O_RDWR|os.O_CREATE)
	defer w.Close()
	buf := make([]byte, 1<<20)
	for i := range 64 {
		if _, err := w.WriteAt(buf, int64(i)<<20); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := w.ReadAt(buf, int64(i%64)<<20); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkStat stats a file four levels deep, from all Ps at once: lookups
// share the tree lock, so this should scale with cores.
func BenchmarkStat(b *testing.B) {
	fsys, _ := newFS(b, memfs.Options{})
	build(b, fsys, "a/", "a/b/", "a/b/c/", "a/b/c/file")
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := fsys.Stat(ctx, "a/b/c/file"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
