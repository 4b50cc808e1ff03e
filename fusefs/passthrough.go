package fusefs

import (
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// probePassthrough tells whether the kernel lets srv register backing
// files: it registers and drops a memfd, the one regular file every kernel
// with passthrough has at hand. Registering needs CAP_SYS_ADMIN and a
// kernel (6.9 or later) that offered FUSE passthrough at the handshake.
func probePassthrough(srv *fuse.Server) error {
	fd, err := unix.MemfdCreate("vfsmount-passthrough-probe", unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	id, errno := srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(fd)})
	if errno != 0 {
		return errno
	}
	if errno := srv.UnregisterBackingFd(id); errno != 0 {
		return errno
	}
	return nil
}

// setupPassthrough decides, once per mount, whether files of host mounts
// are offered to the kernel, and logs the outcome.
func (c *conn) setupPassthrough(srv *fuse.Server, want bool, mountpoint string) {
	if !want {
		c.log.Info("fusefs: passthrough off (disabled by option)", "mountpoint", mountpoint)
		return
	}
	if err := probePassthrough(srv); err != nil {
		// go-fuse would fall back by itself at the first open; probing
		// makes the outcome visible and keeps the handles plain.
		reason := err.Error()
		if errors.Is(err, syscall.EPERM) {
			reason = "not permitted (needs CAP_SYS_ADMIN)"
		}
		c.log.Info("fusefs: passthrough unavailable, reads and writes go through this process",
			"mountpoint", mountpoint, "reason", reason)
		return
	}
	c.passthrough.Store(true)
	c.log.Info("fusefs: passthrough active for host files", "mountpoint", mountpoint)
}
