package remotefs_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
)

// link is an in-process peer of a host directory, dialled over a pipe.
// cut breaks the current connection, as a dropped link does; refuse makes
// the next dials fail until allowed again.
type link struct {
	t    *testing.T
	dir  string
	host mounts.FS

	mu      sync.Mutex
	conns   []net.Conn
	refused bool
	dials   int
	wg      sync.WaitGroup
}

func newLink(t *testing.T, dir string) *link {
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	return serveLink(t, dir, host)
}

// serveLink is a link to a peer of any mount (dir, for the change stream
// and commands, may be empty).
func serveLink(t *testing.T, dir string, fsys mounts.FS) *link {
	l := &link{t: t, dir: dir, host: fsys}
	t.Cleanup(func() {
		l.cut()
		l.wg.Wait()
	})
	return l
}

func (l *link) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dials++
	if l.refused {
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: io.ErrClosedPipe}
	}
	a, b := net.Pipe()
	l.conns = append(l.conns, b)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		opts := peer.Options{Dir: l.dir, Build: "test"}
		if l.dir != "" {
			opts.Shell = peer.HostShell{Dir: l.dir}
		}
		_ = peer.Serve(context.Background(), b, b, l.host, opts)
		b.Close()
	}()
	return a, nil
}

// cut closes every connection the link made.
func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

func (l *link) refuse(r bool) {
	l.mu.Lock()
	l.refused = r
	l.mu.Unlock()
}

// open mounts the link's directory.
func (l *link) open(t *testing.T, ro bool) mounts.FS {
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(l.dial), Source: "test-peer",
		ReadOnly: ro, Timeout: 2 * time.Second, Build: "test"})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(interface{ Close() error }).Close() })
	return fsys
}
