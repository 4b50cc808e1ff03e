package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/internal/hostpath"
)

// ServeOperator offers the operator's methods of ws on srv: the export's
// (workspace.diff, commit, reset) and the checkpoints' (checkpoint.*),
// those the workspace has.
func (ws *Workspace) ServeOperator(srv *jsonrpc.Server) {
	if ws.Export != nil {
		srv.SetExporter(ws.Export)
	}
	if ws.Checkpoints != nil {
		srv.SetCheckpointer(ws.Checkpoints)
		if ws.Checkpoints.store != nil {
			srv.SetStorePusher(ws.Checkpoints)
		}
	}
}

// The control socket: how vfsmount diff, commit, reset and checkpoint reach the
// vfsmount serving a mountpoint. Only that process can answer them: it
// holds the overlay (a persisted upper is locked by it), and a reset must
// go through the overlay's lock and drop the kernel's caches.
//
// The socket lives in a runtime directory of the user's,
// $XDG_RUNTIME_DIR/vfsmount or else /tmp/vfsmount-UID (made 0700, and
// refused when another user owns it or others may enter it), named by a
// hash of the mountpoint's real path: ctl-HASH.sock. A well-known place
// keyed by the mountpoint, rather than an extended attribute on the mount
// root naming the socket, because the client then needs nothing from the
// mount itself (no request to a server that may hang, no change to the
// kernel face), and because a path of one's own runtime directory cannot
// be planted by whoever may write the mount. The hash keeps the name
// short: a unix socket path has room for 107 bytes.

// controlDir is the runtime directory of control sockets, made if missing.
func controlDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("vfsmount-%d", os.Getuid()))
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		dir = filepath.Join(rt, "vfsmount")
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("control socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("control socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("control socket directory %s: not a private directory of this user (mode 0700, owner uid %d)", dir, os.Getuid())
	}
	return dir, nil
}

// ControlPath is the control socket of the workspace served at mountpoint
// (an absolute path): where [Workspace.ServeControl] listens and a client
// of the operator's commands dials.
func ControlPath(mountpoint string) (string, error) {
	dir, err := controlDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(hostpath.Real(mountpoint)))
	return filepath.Join(dir, "ctl-"+hex.EncodeToString(sum[:12])+".sock"), nil
}

// ServeControl serves the operator's methods of ws (jsonrpc: workspace.*
// and checkpoint.*) on the control socket sock ([ControlPath] of the
// mountpoint, found before mounting: resolving the
// mountpoint's path once it is mounted would ask this very server) until
// ctx ends; the returned stop closes it and removes the socket. It is
// served whatever the workspace has: asked for a diff or a checkpoint it
// cannot give, it says why.
func (ws *Workspace) ServeControl(ctx context.Context, sock, mountpoint string) (stop func(), err error) {
	log := ws.opts.Logger
	// The mountpoint was not live, so a socket left there is a crashed
	// daemon's: nothing answers it.
	if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: another vfsmount answers for %s", sock, mountpoint)
	}
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	srv := jsonrpc.NewServer(nil, log)
	ws.ServeOperator(srv)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.ServeListener(ctx, l); err != nil && ctx.Err() == nil {
			log.Warn("control socket", "err", err)
		}
	}()
	log.Info("control socket", "path", sock)
	return func() {
		cancel()
		<-done
		_ = os.Remove(sock)
	}, nil
}
