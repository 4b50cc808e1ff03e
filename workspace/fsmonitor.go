package workspace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// git's fsmonitor hook (core.fsmonitor, hook protocol version 2) for the
// .git of a writable git mount: git runs "vfsmount fsmonitor SOCKET 2
// TOKEN" in the checkout, and the command asks the vfsmount serving that
// mount, over SOCKET, which paths changed since TOKEN. The daemon answers
// from the overlay's change journal, which every change through the
// overlay bumps, so git stats only what changed instead of every file.
//
// The socket is one per writable git mount and per run, in the control
// socket directory (control.go): fsm-PID-N.sock. The mount's
// .git/vfsmount.config names it, and is rewritten at every start. The shell
// tool binds the socket and this binary at the same paths in its namespace,
// so the hook works there as on the workstation.
//
// The wire protocol is the hook's own: the client sends "VERSION\nTOKEN\n";
// the server answers the bytes git wants on the hook's stdout — the next
// token, NUL, then each changed path and NUL, or "/" NUL when it cannot tell
// (a token of another run, or older than what the journal remembers) —
// and closes. Anything else (version 1, a daemon gone) is an error: git then
// checks every file, which is slow but correct.

// fsmonitorAnswer is what the hook prints for token: the journal's next
// token and the changed paths, the mount's .git left out (git ignores its
// own directory, and writes it on every status).
func fsmonitorAnswer(j *overlayfs.Journal, token string) []byte {
	next, names, all := j.Since(token)
	var b strings.Builder
	b.WriteString(next)
	b.WriteByte(0)
	if all {
		b.WriteString("/\x00")
		return []byte(b.String())
	}
	for _, n := range names {
		if n == dotGit || strings.HasPrefix(n, dotGit+"/") {
			continue
		}
		b.WriteString(n)
		b.WriteByte(0)
	}
	return []byte(b.String())
}

var fsmSockets atomic.Uint64

// fsmonitorServer answers the hook for one overlay's journal on a socket
// of its own.
type fsmonitorServer struct {
	path string
	l    net.Listener
	wg   sync.WaitGroup
}

// serveFSMonitor listens on a new socket in the control directory and
// answers the hook from j until Close.
func serveFSMonitor(j *overlayfs.Journal, log *slog.Logger) (*fsmonitorServer, error) {
	dir, err := controlDir()
	if err != nil {
		return nil, err
	}
	removeDeadSockets(dir)
	path := filepath.Join(dir, fmt.Sprintf("fsm-%d-%d.sock", os.Getpid(), fsmSockets.Add(1)))
	_ = os.Remove(path) // a crashed run of the same pid
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("fsmonitor socket: %w", err)
	}
	s := &fsmonitorServer{path: path, l: l}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				r := bufio.NewReader(io.LimitReader(c, 4096))
				version, err1 := r.ReadString('\n')
				token, err2 := r.ReadString('\n')
				if err := errors.Join(err1, err2); err != nil || version != "2\n" {
					log.Debug("fsmonitor: bad request", "err", err, "version", strings.TrimSpace(version))
					return
				}
				if _, err := c.Write(fsmonitorAnswer(j, strings.TrimSuffix(token, "\n"))); err != nil {
					log.Debug("fsmonitor: answer", "err", err)
				}
			}()
		}
	}()
	return s, nil
}

// Close stops answering and removes the socket.
func (s *fsmonitorServer) Close() error {
	err := s.l.Close()
	s.wg.Wait()
	_ = os.Remove(s.path)
	return err
}

// removeDeadSockets removes the fsmonitor sockets that runs killed before
// they could (kill -9) left in dir: those whose process is gone.
func removeDeadSockets(dir string) {
	socks, _ := filepath.Glob(filepath.Join(dir, "fsm-*-*.sock"))
	for _, p := range socks {
		var pid, n int
		if _, err := fmt.Sscanf(filepath.Base(p), "fsm-%d-%d.sock", &pid, &n); err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.Remove(p)
		}
	}
}
