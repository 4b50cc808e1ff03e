package fusefs

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// The cost of one request, measured in this process: the daemon serves it
// and the benchmark's thread waits in the kernel. allocs/op are the whole
// process's, the daemon's per request with little else (a system call on
// a Go thread allocates nothing). req/op comes from Options.Counts, and
// ns/req divides the time by it.

// benchMount mounts a union with a memory mount at /memory and a memory
// mount described as external (a host directory's caching: no cached
// misses, 1 s timeouts) at /host.
func benchMount(b *testing.B) (string, *RequestCounts) {
	b.Helper()
	u, err := union.New(map[string]mounts.FS{
		"/memory": memfs.New(memfs.Options{}),
		"/host":   describedFS{memfs.New(memfs.Options{}), mounts.Description{Type: "host", External: true}},
	})
	if err != nil {
		b.Fatal(err)
	}
	fusetest.Need(b)
	counts := &RequestCounts{}
	dir := b.TempDir()
	srv, err := Mount(dir, u, Options{Counts: counts})
	if err != nil {
		fusetest.MountFailed(b, err)
	}
	b.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			_ = ForceUnmount(dir)
		}
	})
	return dir, counts
}

// report adds req/op and ns/req from the requests counted since before.
func report(b *testing.B, counts *RequestCounts, before Requests) {
	b.StopTimer()
	req := float64(counts.Snapshot().Sub(before).Waited()) / float64(b.N)
	b.ReportMetric(req, "req/op")
	if req > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/req, "ns/req")
	}
}

// BenchmarkRequestLookupMiss: a stat of a missing name on a mount whose
// misses are not cached, one LOOKUP each: the round-trip floor.
func BenchmarkRequestLookupMiss(b *testing.B) {
	dir, counts := benchMount(b)
	p := filepath.Join(dir, "host", "missing")
	var st syscall.Stat_t
	b.ReportAllocs()
	before := counts.Snapshot()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := syscall.Stat(p, &st); err != syscall.ENOENT {
			b.Fatal(err)
		}
	}
	report(b, counts, before)
}

// BenchmarkRequestCreateWriteClose: open(O_CREAT), a 100-byte write and
// close of a new file on the memory mount.
func BenchmarkRequestCreateWriteClose(b *testing.B) {
	dir, counts := benchMount(b)
	work := filepath.Join(dir, "memory", "w")
	if err := os.Mkdir(work, 0o755); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 100)
	names := make([]string, b.N)
	for i := range names {
		names[i] = filepath.Join(work, strconv.Itoa(i))
	}
	b.ReportAllocs()
	before := counts.Snapshot()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fd, err := syscall.Open(names[i], syscall.O_CREAT|syscall.O_WRONLY|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := syscall.Write(fd, data); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Close(fd); err != nil {
			b.Fatal(err)
		}
	}
	report(b, counts, before)
}
