package remotefs

import (
	"context"
	"errors"
	"net"
	"os"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
)

// BackLink is implemented by a stream from [Options.Dial] whose channel
// can carry connections the other way too: from the remote machine back to
// this daemon (an ssh connection's forwarded Unix socket). The peer
// connects there to show its commands the rest of the workspace.
type BackLink interface {
	// BackListener is where the peer's connections arrive; nil when the
	// channel has none. It may wait for the channel to say (a round trip
	// over ssh): the session asks for it while its change stream starts.
	BackListener() net.Listener
}

// back is what the remote machine is shown of the workspace.
type back struct {
	fsys mounts.FS
	self string
}

// ShowWorkspace implements [mounts.WorkspaceShower]: the peer's
// commands see fsys's other top-level directories at their places (where
// the remote machine can mount FUSE), served from here over the link,
// through the tree the faces see, policy included.
func (f *ReadOnlyFS) ShowWorkspace(fsys mounts.FS, self string) {
	f.back.Store(&back{fsys: fsys, self: self})
}

// ShowsWorkspace reports whether the peer of the last link shows its
// commands the rest of the workspace (the link carries it back, and the
// remote machine can mount it).
func (f *ReadOnlyFS) ShowsWorkspace() bool {
	f.mu.Lock()
	s := f.sess
	f.mu.Unlock()
	if s != nil {
		s.waitBack(f.opts.Timeout)
	}
	return f.backUp.Load()
}

// serveBack answers the peer's connections on l until l closes: each is
// a peer protocol stream served from the workspace's tree, as the kernel
// face would (the calls are programs' system calls on the remote
// machine), by the daemon's own user.
func (f *ReadOnlyFS) serveBack(l net.Listener) {
	ctx := mounts.WithCaller(context.Background(), mounts.Caller{
		Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Face: mounts.FaceKernel,
	})
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				f.log.Debug("remote: the back link stopped", "source", f.opts.Source, "err", err)
			}
			return
		}
		b := f.back.Load()
		if b == nil {
			c.Close()
			continue
		}
		go func() {
			defer c.Close()
			err := peer.Serve(ctx, c, c, b.fsys, peer.Options{Build: f.opts.Build, Logger: f.log})
			if err != nil {
				f.log.Debug("remote: a back connection ended", "source", f.opts.Source, "err", err)
			}
		}()
	}
}
