package checkpoint_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// benchWorkspace is a workspace of a memory mount of n files and an
// overlay over a lower of n files, with one checkpoint taken.
func benchWorkspace(b *testing.B, n int) (*checkpoint.Workspace, *memfs.FS, *overlayfs.FS, string) {
	b.Helper()
	ctx := context.Background()
	lower, mem := memfs.New(memfs.Options{}), memfs.New(memfs.Options{})
	data := make([]byte, 1024)
	for _, fsys := range []*memfs.FS{lower, mem} {
		for d := 0; d < (n+99)/100; d++ {
			if err := fsys.Mkdir(ctx, fmt.Sprint("d", d), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for i := range n {
			if err := mounts.WriteFile(ctx, fsys, fmt.Sprintf("d%d/f%d", i/100, i), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	upper := memfs.New(memfs.Options{})
	ov, err := overlayfs.New(ctx, lower, upper, overlayfs.Options{LowerID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ws, err := checkpoint.New([]checkpoint.Mount{
		{Prefix: "/memory", Tree: mem},
		{Prefix: "/repo", Tree: ov},
	}, checkpoint.Options{})
	if err != nil {
		b.Fatal(err)
	}
	base, err := ws.Create(ctx, "base")
	if err != nil {
		b.Fatal(err)
	}
	return ws, mem, ov, base.ID
}

// change writes 50 files of each mount (100 in all); in the overlay the
// first round copies them up.
func change(b *testing.B, mem *memfs.FS, ov *overlayfs.FS, n, round int) {
	b.Helper()
	buf := []byte(fmt.Sprint("round ", round))
	for k := range 50 {
		i := (k*n/50 + round) % n
		for _, fsys := range []mounts.FS{mem, ov} {
			if err := mounts.WriteFile(context.Background(), fsys, fmt.Sprintf("d%d/f%d", i/100, i), buf, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkWorkspaceCreate times a checkpoint of the whole workspace (both
// mounts held at once) after 100 files changed, against its size.
func BenchmarkWorkspaceCreate(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			ws, mem, ov, _ := benchWorkspace(b, n)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				b.StopTimer()
				change(b, mem, ov, n, i)
				b.StartTimer()
				if _, err := ws.Create(ctx, ""); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkWorkspaceRestore times a restore of the whole workspace to its
// first checkpoint after 100 files changed, against its size.
func BenchmarkWorkspaceRestore(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			ws, mem, ov, base := benchWorkspace(b, n)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				b.StopTimer()
				change(b, mem, ov, n, i)
				b.StartTimer()
				if _, err := ws.Restore(ctx, base, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
