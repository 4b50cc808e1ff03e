package boltstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
)

// BenchmarkCheckpointPersisted takes checkpoints of a persisted tree of n
// files of 1 KiB, 100 files changed (a 4 KiB write each) before each. It
// times the checkpoint (taking it; the store writes it in the next batch)
// and reports what the file grows by per checkpoint (file-B/ckpt), made
// durable, against the 400 KiB the changes hold. (Bolt grows its file in
// steps and reuses freed pages: the figure is an average over the run.)
func BenchmarkCheckpointPersisted(b *testing.B) {
	for _, n := range []int{1_000, 10_000} { // 100k: building it costs 100k fsyncs
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "tree.db")
			s, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			fsys, err := s.Load(memfs.Options{})
			if err != nil {
				b.Fatal(err)
			}
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
			if err := fsys.Sync(ctx, "."); err != nil {
				b.Fatal(err)
			}
			fi0, _ := os.Stat(path)
			buf := make([]byte, 4096)
			i := 0
			for b.Loop() {
				b.StopTimer()
				buf[0] = byte(i)
				for k := range 100 {
					f := (k*n/100 + i) % n
					w, err := fsys.OpenFile(ctx, fmt.Sprintf("d%d/f%d", f/100, f), os.O_WRONLY, 0)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := w.(mounts.WritableFile).WriteAt(buf, 0); err != nil {
						b.Fatal(err)
					}
					w.Close()
				}
				b.StartTimer()
				if _, err := fsys.Checkpoint(fmt.Sprint("c", i)); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := fsys.Sync(ctx, "."); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				i++
			}
			b.StopTimer()
			fi1, _ := os.Stat(path)
			b.ReportMetric(float64(fi1.Size()-fi0.Size())/float64(i), "file-B/ckpt")
		})
	}
}
