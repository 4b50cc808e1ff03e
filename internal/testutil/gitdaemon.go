package testutil

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// GitDaemon is a git remote served over git:// on 127.0.0.1, at a port
// the kernel chose, for the life of a test: each connection is answered by
// its own `git daemon --inetd`, which serves the repositories below the
// base directory (upload-pack only). Conns counts the connections, one a
// fetch.
type GitDaemon struct {
	// URL is git://127.0.0.1:PORT/, to which a repository's path below
	// the base directory is appended.
	URL   string
	Conns atomic.Int64

	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	cmds map[*exec.Cmd]bool
	done bool
}

// ServeGit serves the repositories below base until Stop, or the end of
// the test. A repository is served whether or not it has
// git-daemon-export-ok (--export-all); a partial clone of it needs
// uploadpack.allowFilter (and, to fetch blobs by id,
// uploadpack.allowAnySHA1InWant) in its configuration: see
// [AllowPartialClones].
func ServeGit(tb testing.TB, base string) *GitDaemon {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Fatalf("git daemon: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("git daemon: %v", err)
	}
	d := &GitDaemon{URL: "git://" + ln.Addr().String() + "/", ln: ln, cmds: map[*exec.Cmd]bool{}}
	d.wg.Add(1)
	go d.accept(tb, base)
	tb.Cleanup(d.Stop)
	return d
}

func (d *GitDaemon) accept(tb testing.TB, base string) {
	defer d.wg.Done()
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return // Stop closed the listener
		}
		d.Conns.Add(1)
		f, err := c.(*net.TCPConn).File()
		c.Close() // f is a duplicate of it
		if err != nil {
			continue
		}
		cmd := exec.Command("git", "daemon", "--inetd", "--export-all", "--enable=upload-pack",
			"--base-path="+base, "--log-destination=none", base)
		cmd.Stdin, cmd.Stdout = f, f
		cmd.Env = GitEnv(GitTime)
		d.mu.Lock()
		if d.done {
			d.mu.Unlock()
			f.Close()
			return
		}
		err = cmd.Start()
		f.Close() // the daemon has its own copy
		if err != nil {
			d.mu.Unlock()
			tb.Errorf("git daemon: %v", err)
			continue
		}
		d.cmds[cmd] = true
		d.wg.Add(1)
		d.mu.Unlock()
		go func() {
			defer d.wg.Done()
			_ = cmd.Wait()
			d.mu.Lock()
			delete(d.cmds, cmd)
			d.mu.Unlock()
		}()
	}
}

// Stop closes the listener, so that a fetch is refused from now on, kills
// the connections still being served, and waits for them.
func (d *GitDaemon) Stop() {
	d.mu.Lock()
	if d.done {
		d.mu.Unlock()
		return
	}
	d.done = true
	d.ln.Close()
	for cmd := range d.cmds {
		_ = cmd.Process.Kill()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// AllowPartialClones configures the repository at dir (its worktree or git
// directory) to serve partial clones and objects asked for by id.
func AllowPartialClones(tb testing.TB, dir string) {
	tb.Helper()
	Git(tb, dir, "config", "uploadpack.allowFilter", "true")
	Git(tb, dir, "config", "uploadpack.allowAnySHA1InWant", "true")
}

// PartialClone clones url into dir with filter (blob:none, tree:0), no
// checkout: the objects the filter leaves out stay with the remote.
func PartialClone(tb testing.TB, url, filter, dir string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		tb.Fatal(err)
	}
	Git(tb, filepath.Dir(dir), "clone", "--quiet", "--no-checkout", "--filter="+filter, url, filepath.Base(dir))
}
