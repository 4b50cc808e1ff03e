package fusefs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/union"
)

// holdListing is the raw file system of a connection that holds the first
// READDIR(PLUS) of one thread until the kernel's INTERRUPT for it has
// reached go-fuse (go-fuse closes the request's cancel channel), and then
// serves it as usual.
type holdListing struct {
	fuse.RawFileSystem
	tid         atomic.Uint32 // the thread whose listing is held
	held        atomic.Bool
	entered     chan struct{} // closed when the held request arrives
	interrupted chan struct{} // closed when go-fuse cancelled it
}

func (h *holdListing) hold(in *fuse.ReadIn, cancel <-chan struct{}) {
	if in.Caller.Pid != h.tid.Load() || !h.held.CompareAndSwap(false, true) {
		return
	}
	close(h.entered)
	select {
	case <-cancel:
		close(h.interrupted)
	case <-time.After(time.Minute):
		// A failsafe, not a wait: the test fails on a closed
		// h.interrupted it never sees.
	}
}

func (h *holdListing) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	h.hold(in, cancel)
	return h.RawFileSystem.ReadDir(cancel, in, out)
}

func (h *holdListing) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	h.hold(in, cancel)
	return h.RawFileSystem.ReadDirPlus(cancel, in, out)
}

// TestInterruptedListingCompletes: a signal to a thread listing a
// directory (SIGURG here, the Go runtime's preemption signal, which every
// Go program gets under load) makes the kernel send INTERRUPT for its
// READDIR. A local file system would just list the directory, and so must
// the mount: answering the interrupted request with EINTR leaks to the
// caller, since getdents(2) is not restarted after a handler with
// SA_RESTART. This is what failed TestPassthroughPOSIX/ReadDirConsistency
// now and then ("ReadDir: interrupted system call"): the host mount checks
// its context between getdents calls.
func TestInterruptedListingCompletes(t *testing.T) {
	src := t.TempDir()
	var want []string
	for i := range 40 {
		name := fmt.Sprintf("file-%02d", i)
		want = append(want, name)
		require.NoError(t, os.WriteFile(filepath.Join(src, name), nil, 0o644))
	}
	h, err := hostfs.Open(src, hostfs.Options{})
	require.NoError(t, err)
	u, err := union.New(map[string]mounts.FS{"/host": h})
	require.NoError(t, err)
	hook := &holdListing{entered: make(chan struct{}), interrupted: make(chan struct{})}
	_, dir := mountSeamed(t, u, Options{}, seams{wrapRaw: func(r fuse.RawFileSystem) fuse.RawFileSystem {
		hook.RawFileSystem = r
		return hook
	}})

	type result struct {
		names []string
		err   error
	}
	tids := make(chan int, 1)
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := unix.Gettid()
		hook.tid.Store(uint32(tid))
		tids <- tid
		fd, err := unix.Open(filepath.Join(dir, "host"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer unix.Close(fd)
		var names []string
		buf := make([]byte, 4096)
		for {
			// Raw getdents, as readdir(3) and posixtest do: no
			// EINTR retry.
			n, err := unix.Getdents(fd, buf)
			if err != nil {
				done <- result{names: names, err: err}
				return
			}
			if n == 0 {
				break
			}
			for b := buf[:n]; len(b) > 0; {
				var de fuse.DirEntry
				b = b[de.Parse(b):]
				if de.Name != "." && de.Name != ".." {
					names = append(names, de.Name)
				}
			}
		}
		done <- result{names: names}
	}()
	tid := <-tids
	<-hook.entered
	// The reader is in getdents, its READDIR held in the server.
	require.NoError(t, unix.Tgkill(os.Getpid(), tid, unix.SIGURG))
	select {
	case <-hook.interrupted:
	case r := <-done:
		t.Fatalf("the listing returned before the kernel's INTERRUPT reached the server: %v", r.err)
	}
	r := <-done
	require.NoError(t, r.err, "an interrupted listing must complete, as on a local file system")
	slices.Sort(r.names)
	assert.Equal(t, want, r.names)
}
