package main

// # The private mount namespace
//
// serve, mcp, call and exec mount the workspace for themselves when not
// given a --mountpoint (exec never is): the kernel face is there for the
// shell tool (or exec's command) alone, whose bubblewrap sandbox binds each
// top-level name of it at its own path.
// Such a mount is made in a mount namespace of the process's own, so that
// no one else sees it and the kernel takes it down with the process,
// however the process ends: SIGKILL, the OOM killer, a harness that kills
// its MCP server instead of closing its stdin. The sandboxes bubblewrap
// starts inherit the namespace, so the shell works as before.
//
// The namespace is entered by re-executing the program, in place: a thread
// locked to its goroutine unshares CLONE_NEWNS, makes every mount a slave
// of the host's (so nothing mounted here propagates out, while what the
// host mounts later still comes in), and execve's /proc/self/exe with the
// same arguments. The process keeps its pid, its stdio and its parent, so
// a harness that started it, signals it or waits for it sees no
// difference. Doing it from Go's runtime any other way is unsound:
// unshare(CLONE_NEWNS) moves only the calling thread, and the goroutines
// of the daemon run on all of them.
//
// In the namespace every such daemon mounts at one directory,
// $TMPDIR/vfsmount-ns-UID, which each namespace covers with its own mount:
// nothing is created per run, so nothing is left behind, not even an empty
// directory.
//
// It needs CAP_SYS_ADMIN (root, or a container with it). Without it the
// daemon says so in one log line and mounts as before, at a fresh
// $TMPDIR/vfsmount-ws-* that the host sees; a daemon killed then leaves
// that mount stale, and the next serve, mcp or call clears the stale ones
// it finds there (as older versions left them too). A user namespace would
// lift the need for root, but it cannot be entered in place (the kernel
// refuses CLONE_NEWUSER to a threaded process): it would take a second
// process, and is not done.
//
// The namespace starts as a copy of the host's mounts. Where the host's
// root is a shared mount (systemd makes it one) the host's unmounts reach
// the copies by propagation; where it is private (most containers, some
// hosts) a copy would outlive the host's mount and pin its file system:
// the host's umount of another FUSE file system would succeed while its
// server waited for ever for the end of its connection, the copy here
// holding it. So the daemon watches the host's mount table (through a
// descriptor of it opened before leaving) and detaches its copy of every
// mount the host no longer has, as propagation would.
//
// A --mountpoint mount is the user's to see and stays in the host's
// namespace; a stale one there is cleared by the next mount at it.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/fusefs"
)

// mountNSEnv carries, across the re-exec, the id of the namespace made for
// it ("mnt:[4026532301]"): the new image is in a private namespace only if
// its own is that one.
const mountNSEnv = "VFSMOUNT_PRIVATE_MOUNTNS"

// hostMountsEnv carries, across the re-exec, the number of a descriptor
// of the host's /proc/self/mountinfo, for mirrorHostUnmounts.
const hostMountsEnv = "VFSMOUNT_HOST_MOUNTINFO_FD"

// privateMountpoint prepares the mountpoint of a workspace a command mounts
// for itself. It returns it when the process is in a private mount
// namespace, re-executing the program into one first when it can (then it
// returns only in the new image); it returns "" when the process stays in
// the host's namespace, for the caller to make a temporary directory as
// before.
//
// A command line run in-process (a.self is "": a test, another program)
// stays where it is: a re-exec would start that program over.
func privateMountpoint(a *app) string {
	log := a.logger
	if a.self == "" {
		return ""
	}
	if marker, ok := os.LookupEnv(mountNSEnv); ok {
		// Not for the commands the shell runs, or a vfsmount they start.
		os.Unsetenv(mountNSEnv)
		if own, err := os.Readlink("/proc/self/ns/mnt"); err != nil || own != marker {
			// Set by hand, or inherited: not a namespace made for us,
			// and no second re-exec, which could loop.
			log.Warn("not in a private mount namespace; mounting where the host sees it", "env", mountNSEnv)
			clearStaleWorkspaces(log)
			return ""
		}
		dir, err := namespaceDir()
		if err != nil {
			log.Warn("private mountpoint; using a temporary directory", "err", err)
			return ""
		}
		if fd, err := strconv.Atoi(os.Getenv(hostMountsEnv)); err == nil {
			unix.CloseOnExec(fd) // not for the sandboxes
			startMirroringHostUnmounts(os.NewFile(uintptr(fd), "host mountinfo"), log)
		}
		os.Unsetenv(hostMountsEnv)
		log.Debug("in a private mount namespace", "mountpoint", dir)
		return dir
	}
	// In the host's namespace, before leaving it: mounts older versions,
	// or a daemon that could not leave, left behind.
	clearStaleWorkspaces(log)
	err := reexecInMountNamespace()
	log.Info("no private mount namespace: the workspace is mounted where the host sees it, and a server killed with SIGKILL leaves it stale until the next serve, mcp or call clears it", "err", err)
	return ""
}

// reexecInMountNamespace re-executes the program in a new mount namespace
// whose mounts are slaves of the host's. It returns only on failure.
func reexecInMountNamespace() error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: if the goroutine returns, its thread, which may
		// be in a namespace the rest of the process is not, ends with it.
		runtime.LockOSThread()
		// The host's mount table, read later from inside: opened before
		// leaving (a mountinfo is its opener's namespace's), and left
		// open across the exec.
		host, err := unix.Open("/proc/thread-self/mountinfo", unix.O_RDONLY, 0)
		if err != nil {
			errc <- err
			return
		}
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			unix.Close(host)
			errc <- fmt.Errorf("unshare(CLONE_NEWNS): %w", err)
			return
		}
		// Slave, not private: our mounts stay ours, and a host directory
		// the workspace serves still sees what the host mounts in it later.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			errc <- fmt.Errorf("make / an rslave mount: %w", err)
			return
		}
		id, err := os.Readlink("/proc/thread-self/ns/mnt")
		if err != nil {
			errc <- err
			return
		}
		env := []string{mountNSEnv + "=" + id, fmt.Sprintf("%s=%d", hostMountsEnv, host)}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, mountNSEnv+"=") && !strings.HasPrefix(kv, hostMountsEnv+"=") {
				env = append(env, kv)
			}
		}
		errc <- fmt.Errorf("re-exec: %w", unix.Exec("/proc/self/exe", os.Args, env))
	}()
	return <-errc
}

// namespaceDir is the directory every private namespace of this user
// mounts its workspace at: created once, owned by the user and private to
// them, never a symbolic link (TMPDIR is shared with other users).
func namespaceDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("vfsmount-ns-%d", os.Geteuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s: not a directory private to uid %d", dir, os.Geteuid())
	}
	return dir, nil
}

// staleProbe bounds the stat that tells a dead server's mount (ENOTCONN at
// once) from a live one; a server that does not answer within it is left
// alone: it may only be stopped.
const staleProbe = time.Second

// clearStaleWorkspaces unmounts and removes the $TMPDIR/vfsmount-ws-*
// mounts whose server is gone, as the host's namespace sees them.
func clearStaleWorkspaces(log *slog.Logger) {
	tmp := filepath.Clean(os.TempDir())
	below, err := fusefs.MountsBelow(tmp)
	if err != nil {
		return
	}
	for _, mp := range below {
		if filepath.Dir(mp) != tmp || !strings.HasPrefix(filepath.Base(mp), "vfsmount-ws-") || !fusefs.Disconnected(mp, staleProbe) {
			continue
		}
		if err := fusefs.ForceUnmount(mp); err != nil {
			log.Debug("clearing a stale workspace mount", "mountpoint", mp, "err", err)
			continue
		}
		os.Remove(mp) // only if empty
		log.Info("cleared a stale workspace mount a killed vfsmount left", "mountpoint", mp)
	}
}

// mountKey names a mount the same way in the host's table and in a copy
// of it (mount ids differ): its device, the root of it mounted, and where.
type mountKey struct{ dev, root, point string }

// readMounts reads the mount keys of a mountinfo file from its start.
func readMounts(f *os.File) (map[mountKey]bool, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	out := map[mountKey]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		// ID PARENT MAJ:MIN ROOT POINT ...
		if f := strings.Fields(line); len(f) > 4 {
			out[mountKey{f[2], unescapeMountinfo(f[3]), unescapeMountinfo(f[4])}] = true
		}
	}
	return out, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of a
// mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// startMirroringHostUnmounts detaches this namespace's copy of each mount
// the host unmounts, for the life of the process: host is the host's
// mountinfo. Only the copies are its business: the mounts here when it is
// called, before the workspace is mounted, which it reads before it
// returns; it never touches a mount of the daemon's own.
func startMirroringHostUnmounts(host *os.File, log *slog.Logger) {
	self, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		host.Close()
		return
	}
	copies, err := readMounts(self)
	self.Close()
	if err != nil {
		host.Close()
		return
	}
	go mirrorHostUnmounts(host, copies, log)
}

func mirrorHostUnmounts(host *os.File, copies map[mountKey]bool, log *slog.Logger) {
	defer host.Close()
	for {
		have, err := readMounts(host)
		if err != nil {
			log.Debug("watching the host's mounts", "err", err)
			return
		}
		var gone []mountKey
		for k := range copies {
			if !have[k] {
				gone = append(gone, k)
			}
		}
		// Deepest first: a detached parent takes its children along.
		slices.SortFunc(gone, func(a, b mountKey) int { return strings.Count(b.point, "/") - strings.Count(a.point, "/") })
		for _, k := range gone {
			delete(copies, k)
		}
		for _, k := range gone {
			if slices.ContainsFunc(slices.Collect(maps.Keys(copies)), func(c mountKey) bool { return c.point == k.point }) {
				// Another mount there stays: a detach by the path would
				// take that one.
				continue
			}
			if err := unix.Unmount(k.point, unix.MNT_DETACH); err == nil {
				log.Debug("detached a mount the host unmounted", "mountpoint", k.point)
			}
		}
		// The table changed: POLLPRI (and POLLERR) until it is read again.
		fds := []unix.PollFd{{Fd: int32(host.Fd()), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			log.Debug("watching the host's mounts", "err", err)
			return
		}
	}
}
