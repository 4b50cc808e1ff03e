package gitfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

// benchRepo makes a packed repository of 2 000 small source files in 40
// directories of two levels, as a walk, a scan or a build meets them.
func benchRepo(b *testing.B) string {
	files := map[string]string{}
	for d := range 40 {
		for i := range 50 {
			var text strings.Builder
			for l := range 10 + i%30 {
				fmt.Fprintf(&text, "// %d/%d line %d of a source file\n", d, i, l)
			}
			files[fmt.Sprintf("pkg%02d/sub%d/f%02d.go", d, d%4, i)] = text.String()
		}
	}
	dir, _ := gittest.SmallRepo(b, files)
	gittest.Git(b, dir, "gc", "-q")
	return dir
}

// walkTree lists every directory below "." with StatDir, depth first, as
// find does, and reads every file into buf when buf is set, as tar does.
func walkTree(b *testing.B, f *FS, dir string, buf []byte) {
	ctx := context.Background()
	ents, _, err := f.StatDir(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		name := mounts.Join(dir, e.Name)
		switch {
		case e.Type.IsDir():
			walkTree(b, f, name, buf)
		case buf != nil:
			readInto(b, f, name, buf)
		}
	}
}

// readInto reads the file name through buf, as cat does.
func readInto(b *testing.B, f *FS, name string, buf []byte) {
	fl, err := f.Open(context.Background(), name)
	if err != nil {
		b.Fatal(err)
	}
	defer fl.Close()
	for off := int64(0); ; {
		n, err := fl.ReadAt(buf, off)
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the CPU time this process has used, all its threads.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per iteration since start (cpu-ns/op):
// on a machine shared with other work it varies far less than the wall
// time, and it counts the walk's background workers too.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTree measures what a mount costs its callers: a cold walk (a
// new mount per iteration: tree decodes, object headers, the walk's
// read-ahead), a cold scan (the same plus every blob decoded into the
// blob cache) and a warm reread (every file again from the blob cache).
func BenchmarkTree(b *testing.B) {
	dir := benchRepo(b)
	cache := b.TempDir()
	open := func(b *testing.B) *FS {
		f, err := Open(context.Background(), Options{Src: dir, CacheDir: cache})
		require.NoError(b, err)
		return f
	}
	buf := make([]byte, 64<<10)
	for _, tt := range []struct {
		name string
		buf  []byte
	}{{"walk", nil}, {"scan", buf}} {
		b.Run(tt.name, func(b *testing.B) {
			start := cpuTime(b)
			for range b.N {
				f := open(b)
				walkTree(b, f, ".", tt.buf)
				f.Close()
			}
			reportCPU(b, start)
		})
	}
	b.Run("reread", func(b *testing.B) {
		f := open(b)
		defer f.Close()
		walkTree(b, f, ".", buf)
		b.ResetTimer()
		start := cpuTime(b)
		for range b.N {
			walkTree(b, f, ".", buf)
		}
		reportCPU(b, start)
	})
}
