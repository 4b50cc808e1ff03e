package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
)

// backMount is, on the remote machine, the rest of the workspace a
// remote mount belongs to (/repo, /memory …): served by the daemon over
// the link (a Unix socket the daemon listens on here, through ssh), and
// mounted here with FUSE at the peer's first command that runs in a
// namespace of its own, so that the namespace shows it at its places.
type backMount struct {
	sock string
	log  *slog.Logger

	once    sync.Once
	dirs    map[string]string
	err     error
	fsys    mounts.FS
	srv     *fusefs.Server
	mnt     string
	private bool   // mnt is the private namespace's: not made here, not removed
	mkdir   string // the socket's directory, made here
}

// newBackMount makes the socket's directory, private to this user, where
// the daemon will listen once the peer has said its hello. A directory
// that is already there is refused: another user's could be a trap.
//
// Where this machine cannot mount FUSE it makes nothing and returns nil:
// the daemon, finding no directory to listen in, tells the model that
// commands here see /workspace only.
//
// The mount is made in a mount namespace of the peer's own where it can
// (root: see ns_private.go; the peer re-executes itself into it before
// its hello), so that it goes with the peer however the peer ends, and
// only the peer's commands see it; elsewhere at a temporary directory the
// next serve, mcp or call clears if it is left stale.
func newBackMount(a *app, sock string) (*backMount, error) {
	log := a.logger
	if !filepath.IsAbs(sock) {
		return nil, usageErrorf("peer: --back %s: not an absolute path", sock)
	}
	if why := cannotMountFUSE(); why != "" {
		log.Info("peer: commands see /workspace only", "why", why)
		return nil, nil
	}
	mnt := privateMountpoint(a)
	dir := filepath.Dir(sock)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("peer: the back link's directory: %w", err)
	}
	return &backMount{sock: sock, log: log, mkdir: dir, mnt: mnt, private: mnt != ""}, nil
}

// binds mounts the workspace (once) and returns its top-level directories
// by name; an error says why the commands see /workspace only.
func (b *backMount) binds() (map[string]string, error) {
	b.once.Do(func() { b.dirs, b.err = b.mount() })
	return b.dirs, b.err
}

func (b *backMount) mount() (map[string]string, error) {
	ctx := context.Background()
	fsys, err := remotefs.Open(ctx, remotefs.Options{
		Dial: remotefs.StreamDialer(func(ctx context.Context) (io.ReadWriteCloser, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", b.sock)
		}),
		Source: "the daemon", Build: version, Logger: b.log, Timeout: 5 * time.Second,
	})
	if err != nil {
		b.log.Warn("peer: the rest of the workspace is not shown to commands", "err", err)
		return nil, err
	}
	b.fsys = fsys
	if b.mnt == "" {
		if b.mnt, err = os.MkdirTemp("", "vfsmount-ws-back-"); err != nil {
			return nil, err
		}
	}
	mnt := b.mnt
	if b.srv, err = fusefs.Mount(mnt, fsys, fusefs.Options{Logger: b.log, FSName: "vfsmount-back"}); err != nil {
		b.log.Warn("peer: cannot mount the rest of the workspace here (FUSE); commands see /workspace only", "err", err)
		return nil, err
	}
	ents, err := fsys.ReadDir(ctx, ".")
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	for _, e := range ents {
		if e.Type.IsDir() {
			dirs[e.Name] = filepath.Join(mnt, e.Name)
		}
	}
	b.log.Info("peer: the rest of the workspace is shown to commands", "mountpoint", mnt, "dirs", len(dirs))
	return dirs, nil
}

// close unmounts what mount mounted and removes what was made.
func (b *backMount) close() {
	// First what the host sees, in case what follows takes long.
	os.Remove(b.sock)
	os.Remove(b.mkdir)
	if b.srv != nil {
		_ = b.srv.Unmount()
	}
	if b.fsys != nil {
		if c, ok := b.fsys.(interface{ Close() error }); ok {
			c.Close()
		}
	}
	if b.mnt != "" && !b.private {
		os.Remove(b.mnt)
	}
}

// cannotMountFUSE says why this process cannot mount a FUSE file system
// ("" when it can): the device, and root or fusermount.
func cannotMountFUSE() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse"
	}
	if os.Geteuid() == 0 {
		return ""
	}
	for _, p := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(p); err == nil {
			return ""
		}
	}
	return "not root, and no fusermount"
}
