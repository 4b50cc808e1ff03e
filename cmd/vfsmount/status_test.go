package main

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// stuckFS is a mount whose Stat stops answering once stuck is set, until
// release is closed: a server that hangs.
type stuckFS struct {
	mounts.FS
	stuck   atomic.Bool
	release chan struct{}
	once    sync.Once
}

func (f *stuckFS) unstick() { f.once.Do(func() { close(f.release) }) }

func (f *stuckFS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	if f.stuck.Load() {
		<-f.release
	}
	return f.FS.Stat(ctx, name)
}

// TestStatusOfAHangingServer: status reports a server that does not answer
// as stale after its time limit, instead of hanging with it.
func TestStatusOfAHangingServer(t *testing.T) {
	fusetest.Need(t)
	dir := t.TempDir()
	fsys := &stuckFS{FS: memfs.New(memfs.Options{}), release: make(chan struct{})}
	srv, err := fusefs.Mount(dir, fsys, fusefs.Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		fsys.unstick()
		if err := srv.Unmount(); err != nil {
			assert.NoError(t, fusefs.ForceUnmount(dir))
		}
	})
	code, out, errOut := runTool(context.Background(), "status", dir)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, dir+": live\n", out)

	fsys.stuck.Store(true)
	srv.Invalidate(".") // so that nothing answers from the kernel's cache
	done := make(chan struct{})
	go func() {
		code, out, errOut = runTool(context.Background(), "status", dir)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		// Let the server answer, or this process could never exit: the
		// kernel waits for a request it has handed over, SIGKILL or not.
		fsys.unstick()
		<-done
		t.Fatal("status hung with a server that does not answer")
	}
	assert.Equal(t, exitFailure, code, errOut)
	assert.True(t, strings.HasSuffix(out, ": stale\n"), "status of a server that hangs: %q", out)
}
