package memfs_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// ckptTree is a tree of n small files, 100 to a directory, with one
// checkpoint taken (the first walks the whole tree; the benchmarks measure
// the ones after).
func ckptTree(b *testing.B, n int) *memfs.FS {
	b.Helper()
	ctx := context.Background()
	fsys := memfs.New(memfs.Options{})
	for d := 0; d < (n+99)/100; d++ {
		if err := fsys.Mkdir(ctx, fmt.Sprint("d", d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	data := make([]byte, 1024)
	for i := range n {
		if err := mounts.WriteFile(ctx, fsys, fmt.Sprintf("d%d/f%d", i/100, i), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := fsys.Checkpoint("base"); err != nil {
		b.Fatal(err)
	}
	return fsys
}

// change100 changes 100 files spread over the tree: a 4 KiB write into
// each (one page copied on write).
func change100(b *testing.B, fsys *memfs.FS, n, round int) {
	b.Helper()
	buf := make([]byte, 4096)
	buf[0] = byte(round)
	for k := range 100 {
		i := (k*n/100 + round) % n
		f, err := fsys.OpenFile(context.Background(), fmt.Sprintf("d%d/f%d", i/100, i), os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.(mounts.WritableFile).WriteAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

var sizes = []int{1_000, 10_000, 100_000}

// BenchmarkCheckpointCreate times a checkpoint after 100 files changed,
// against the size of the tree: it must be flat. It reports what each
// checkpoint holds (B/ckpt: the pages written since the one before, and
// the metadata of what it froze), against the 400 KiB the changes hold.
func BenchmarkCheckpointCreate(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			fsys := ckptTree(b, n)
			var held int64
			i := 0
			for b.Loop() {
				b.StopTimer()
				change100(b, fsys, n, i)
				b.StartTimer()
				info, err := fsys.Checkpoint(fmt.Sprint("c", i))
				if err != nil {
					b.Fatal(err)
				}
				held += info.Bytes
				i++
			}
			b.StopTimer()
			b.ReportMetric(float64(held)/float64(i), "B/ckpt")
		})
	}
}

// BenchmarkCheckpointRestore times a restore of the previous checkpoint
// after 100 files changed, against the size of the tree: it must be flat.
func BenchmarkCheckpointRestore(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			fsys := ckptTree(b, n)
			i := 0
			for b.Loop() {
				b.StopTimer()
				change100(b, fsys, n, i)
				b.StartTimer()
				if _, err := fsys.RestoreCheckpoint("base"); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkCheckpointView is the baseline a checkpoint avoids: a copy of
// the whole tree (sharing pages), which is what a snapshot by copying
// costs. It grows with the tree.
func BenchmarkCheckpointView(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			fsys := ckptTree(b, n)
			for b.Loop() {
				if _, err := fsys.CheckpointView(context.Background(), "base"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
