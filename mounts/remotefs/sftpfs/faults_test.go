package sftpfs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/sftpfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/sshdial"
)

// proxy forwards a local port to the sshd; stall makes it stop moving
// bytes (a link that went silent, no RST), cut closes what it carries.
type proxy struct {
	l     net.Listener
	to    string
	mu    sync.Mutex
	stall bool
	conns []net.Conn
}

func newProxy(t *testing.T, to string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{l: l, to: to}
	t.Cleanup(func() { l.Close(); p.cut() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go p.pipe(c, u)
			go p.pipe(u, c)
		}
	}()
	return p
}

func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for {
			p.mu.Lock()
			s := p.stall
			p.mu.Unlock()
			if !s {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (p *proxy) setStall(s bool) {
	p.mu.Lock()
	p.stall = s
	p.mu.Unlock()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) port() int { return p.l.Addr().(*net.TCPAddr).Port }

// openVia mounts dir through the proxy, with a timeout of d.
func openVia(t *testing.T, sshd *testutil.SSHD, p *proxy, dir string, d time.Duration) mounts.FS {
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := strings.Replace(sshd.HostKeyLine, fmt.Sprintf("]:%d ", sshd.Port), fmt.Sprintf("]:%d ", p.port()), 1)
	require.NoError(t, os.WriteFile(kh, []byte(line+"\n"), 0o600))
	dial := func(ctx context.Context) (*ssh.Client, error) {
		c, err := sshdial.Connect(ctx, sshdial.Config{
			Target:   sshdial.Target{User: "root", Host: "127.0.0.1", Port: p.port(), Dir: dir},
			Identity: sshd.UserKey, KnownHosts: kh, Timeout: d,
		})
		if err != nil {
			return nil, err
		}
		return c.SSH(), nil
	}
	fsys, err := sftpfs.Open(context.Background(), sftpfs.Options{Dial: dial, Dir: dir, Source: "test", Timeout: d})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(interface{ Close() error }).Close() })
	return fsys
}

// timed runs f and fails the test if it takes longer than d.
func timed(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return nil
	}
}

func isLinkDown(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EIO)
	assert.ErrorIs(t, err, remotefs.ErrLinkDown)
	var pe *fs.PathError
	assert.True(t, errors.As(err, &pe), "%v is a *fs.PathError", err)
}

// A link that goes silent: every operation, and a file opened before,
// fails within the timeout with EIO, never hangs; once the link moves
// again the mount dials anew and serves, without a remount.
func TestLinkStalledThenBack(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"a.txt": "alpha"})
	p := newProxy(t, fmt.Sprintf("127.0.0.1:%d", sshd.Port))
	fsys := openVia(t, sshd, p, dir, time.Second)
	ctx := context.Background()
	f, err := fsys.Open(ctx, "a.txt")
	require.NoError(t, err)

	p.setStall(true)
	isLinkDown(t, timed(t, 3*time.Second, "stat on a stalled link", func() error {
		_, err := fsys.Stat(ctx, "a.txt")
		return err
	}))
	isLinkDown(t, timed(t, 3*time.Second, "read of a file opened before", func() error {
		_, err := f.ReadAt(make([]byte, 5), 0)
		return err
	}))
	isLinkDown(t, timed(t, 3*time.Second, "a write", func() error {
		return mounts.WriteFile(ctx, fsys, "b.txt", []byte("x"), 0o644)
	}))
	p.cut() // what a stalled connection comes to
	p.setStall(false)

	require.Eventually(t, func() bool {
		_, err := fsys.Stat(ctx, "a.txt")
		return err == nil
	}, 15*time.Second, 50*time.Millisecond, "the mount serves again")
	require.NoError(t, mounts.WriteFile(ctx, fsys, "c.txt", []byte("back"), 0o644))
	b, err := os.ReadFile(filepath.Join(dir, "c.txt"))
	require.NoError(t, err)
	assert.Equal(t, "back", string(b))
	_, err = f.ReadAt(make([]byte, 5), 0)
	isLinkDown(t, err) // a handle of the lost connection stays lost
}

// The link cut under a writer: what Sync acknowledged is on the remote
// disk, a write after the cut fails with EIO (never dropped silently),
// and the mount dials again and serves.
func TestLinkCut(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	dir := t.TempDir()
	p := newProxy(t, fmt.Sprintf("127.0.0.1:%d", sshd.Port))
	fsys := openVia(t, sshd, p, dir, time.Second)
	ctx := context.Background()
	h, err := mounts.OpenFile(ctx, fsys, "synced.txt", os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	w := h.(mounts.WritableFile)
	_, err = w.WriteAt([]byte("durable"), 0)
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	b, err := os.ReadFile(filepath.Join(dir, "synced.txt"))
	require.NoError(t, err)
	assert.Equal(t, "durable", string(b), "fsync answered: on the remote disk")

	p.cut()
	isLinkDown(t, timed(t, 3*time.Second, "a write after the cut", func() error {
		_, err := w.WriteAt([]byte("lost"), 0)
		return err
	}))
	require.Eventually(t, func() bool {
		return mounts.WriteFile(ctx, fsys, "after.txt", []byte("back"), 0o644) == nil
	}, 15*time.Second, 100*time.Millisecond, "the mount serves again after the cut")
	data, err := mounts.ReadFile(ctx, fsys, "after.txt")
	require.NoError(t, err)
	assert.Equal(t, "back", string(data))
	b, err = os.ReadFile(filepath.Join(dir, "synced.txt"))
	require.NoError(t, err)
	assert.Equal(t, "durable", string(b))
}

// TestLinkCutKillsCommand: a command running when its connection goes is
// killed on the remote machine with what it started, as the peer's are,
// not left running there; its caller learns of the loss.
func TestLinkCutKillsCommand(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	dir := t.TempDir()
	p := newProxy(t, fmt.Sprintf("127.0.0.1:%d", sshd.Port))
	fsys := openVia(t, sshd, p, dir, time.Second).(mounts.CommandFS)
	pids := filepath.Join(dir, "pids")
	proc, err := fsys.StartCommand(context.Background(), mounts.Command{
		Argv: []string{"sh", "-c", "sleep 1000 & echo $! >" + pids + "; echo $$ >>" + pids + "; exec sleep 1001"}, Dir: ".",
	})
	require.NoError(t, err)
	var running []int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pids)
		running = nil
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			running = append(running, n)
		}
		return err == nil && len(running) == 2
	}, 10*time.Second, 20*time.Millisecond)
	for _, pid := range running {
		require.NoError(t, syscall.Kill(pid, 0), "pid %d runs", pid)
	}

	p.cut()
	_, _, err = timedWait(t, proc)
	require.Error(t, err)
	assert.ErrorIs(t, err, remotefs.ErrLinkDown)
	for _, pid := range running {
		assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 10*time.Second, 20*time.Millisecond,
			"pid %d is gone from the remote machine", pid)
	}
}

func timedWait(t *testing.T, p mounts.Process) (int, string, error) {
	t.Helper()
	type res struct {
		status int
		dir    string
		err    error
	}
	c := make(chan res, 1)
	go func() { s, d, err := p.Wait(); c <- res{s, d, err} }()
	select {
	case r := <-c:
		return r.status, r.dir, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("the command's caller did not learn of the cut within 10s")
	}
	return 0, "", nil
}
