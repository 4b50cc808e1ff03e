package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// State is what Probe finds at a mount point.
type State int

const (
	// StateNone: no FUSE file system is mounted there.
	StateNone State = iota
	// StateLive: a FUSE file system is mounted and its server answers.
	StateLive
	// StateStale: a FUSE file system is mounted but its server is gone
	// (ENOTCONN after a crash) or does not answer.
	StateStale
	// StateIncomplete: the workspace's main connection answers, but a
	// connection it says is stacked on it (StackedXattr) is not mounted
	// there, or does not answer: someone unmounted it by hand, or its
	// connection was aborted. Programs would see that directory served
	// another way, or not at all; the workspace is not the one mounted.
	StateIncomplete
)

func (s State) String() string {
	switch s {
	case StateNone:
		return "none"
	case StateLive:
		return "live"
	case StateStale:
		return "stale"
	case StateIncomplete:
		return "incomplete"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ErrNotMounted is returned by ForceUnmount when nothing is mounted at the
// mount point.
var ErrNotMounted = errors.New("not a mount point")

// probeTimeout bounds the stat of a FUSE mount whose server is alive but
// stuck: it counts as stale, as a dead one does.
const probeTimeout = 5 * time.Second

// Probe reports whether a FUSE file system is mounted at mountpoint and
// whether it answers. Only FUSE mounts count: another file system mounted
// there is StateNone, since it is not ours to clear.
//
// A workspace mounted by this package answers other processes only once it
// is whole (see "# Readiness" in the package doc), so from another process
// Probe waits for a workspace that is still mounting. It then checks every
// connection the root lists in StackedXattr: one that is not mounted, or
// whose server does not answer, makes the workspace StateIncomplete.
//
// A server that does not answer a stat within a few seconds is reported as
// stale. The stat that timed out stays blocked in the kernel (and its
// goroutine with it) until the mount is cleared or the server wakes up.
func Probe(mountpoint string) (State, error) {
	abs, err := absMountpoint(mountpoint)
	if err != nil {
		return StateNone, err
	}
	// The mount table and the stat are two looks: a mount cleared or
	// made in between (a stale one detached by the vfsmount that takes
	// its place) makes the stat answer from another file system than
	// the table said, and the probe looks again.
	for range probeLooks {
		m, found, err := mountAt(abs)
		if err != nil {
			return StateNone, err
		}
		if !found || !isFUSE(m.fstype) {
			return StateNone, nil
		}
		st, moved, err := probeWithin(abs, m.dev)
		if !moved {
			if err != nil {
				err = fmt.Errorf("fusefs: probe %s: %w", mountpoint, err)
			}
			return st, err
		}
	}
	return StateNone, fmt.Errorf("fusefs: probe %s: the mounts there keep changing", mountpoint)
}

// probeLooks bounds the looks of a Probe while the mounts at its mount
// point change under it.
const probeLooks = 10

// probeWithin runs probeMounted of the mount of device dev at abs within
// probeTimeout, after which the server is taken for stale.
func probeWithin(abs, dev string) (State, bool, error) {
	type result struct {
		st    State
		err   error
		moved bool
	}
	done := make(chan result, 1)
	go func() {
		st, moved, err := probeMounted(abs, dev)
		done <- result{st, err, moved}
	}()
	select {
	case r := <-done:
		return r.st, r.moved, r.err
	case <-time.After(probeTimeout):
		return StateStale, false, nil
	}
}

// probeMounted probes the FUSE mount at abs and the connections stacked on
// it.
func probeMounted(abs, dev string) (st State, moved bool, err error) {
	var stx unix.Statx_t
	switch err := unix.Statx(unix.AT_FDCWD, abs, unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &stx); {
	case err == nil:
		if fmt.Sprintf("%d:%d", stx.Dev_major, stx.Dev_minor) != dev {
			return StateNone, true, nil // another file system answered
		}
	case isDisconnected(err):
		return StateStale, false, nil
	default:
		// Something answered (EACCES from a mount of another user
		// without allow_other, say): not ours to call dead.
		return StateLive, false, err
	}
	for _, root := range stackedRoots(abs) {
		mp := filepath.Join(abs, filepath.FromSlash(root))
		fuse, found, err := mountedAt(mp)
		if err != nil {
			return StateLive, false, err
		}
		if !found || !fuse || isDisconnected(statSync(mp)) {
			return StateIncomplete, false, nil
		}
	}
	return StateLive, false, nil
}

// statSync stats name, asking the server: FORCE_SYNC, since attributes the
// kernel cached from a live server would otherwise answer a plain stat of
// a dead mount.
func statSync(name string) error {
	var stx unix.Statx_t
	return unix.Statx(unix.AT_FDCWD, name, unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &stx)
}

// Disconnected reports whether the FUSE mount at mountpoint has lost its
// server: a stat asking the server fails with ENOTCONN (or ECONNABORTED,
// an aborted connection). Unlike [Probe], a server that does not answer
// within wait is not called dead: for a caller that clears other
// processes' mounts, which must never take a live but slow one away.
func Disconnected(mountpoint string, wait time.Duration) bool {
	done := make(chan error, 1)
	go func() { done <- statSync(mountpoint) }()
	select {
	case err := <-done:
		return isDisconnected(err)
	case <-time.After(wait):
		return false
	}
}

func isDisconnected(err error) bool {
	return errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED)
}

// stackedRoots reads StackedXattr of the mount root abs: the directories
// (fsys-relative) that have connections of their own. A root that does not
// have the attribute (another FUSE file system, an older vfsmount) or
// cannot say expects none.
func stackedRoots(abs string) []string {
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getxattr(abs, StackedXattr, buf)
		if errors.Is(err, syscall.ERANGE) && len(buf) < 1<<20 {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if err != nil {
			return nil
		}
		var roots []string
		for _, line := range strings.Split(string(buf[:n]), "\n") {
			if line != "" {
				roots = append(roots, line)
			}
		}
		return roots
	}
}

// ForceUnmount clears the mount at mountpoint, live or stale: a plain
// unmount first, then a lazy one (MNT_DETACH) when the mount is busy, and
// fusermount3/fusermount when the process may not unmount itself (not
// root). FUSE mounts below mountpoint (the connections of immutable roots)
// go first, deepest first; one that will not go is taken along by the
// detach of mountpoint. Nothing mounted there is ErrNotMounted.
func ForceUnmount(mountpoint string) error {
	abs, err := absMountpoint(mountpoint)
	if err != nil {
		return err
	}
	below, err := MountsBelow(abs)
	if err != nil {
		return err
	}
	for _, mp := range below {
		_ = unmountOne(mp, mp)
	}
	return unmountOne(abs, mountpoint)
}

// Abort aborts the FUSE connections mounted at mountpoint and below, as
// writing to /sys/fs/fuse/connections/N/abort does (mounting fusectl there
// for the while when nothing is): every request pending on them fails, so
// a server that cannot exit can. Such a server is one killed while a thread
// of its own waited on its own mount (mount(2) of a stacked connection
// walks through the main one, go-fuse's poll probe opens a file of it): the
// kernel waits for the answer to a request it handed over, fatal signal or
// not, and only that server could give it. The mounts stay, disconnected,
// for an unmount to clear. It needs root.
func Abort(mountpoint string) error {
	abs, err := absMountpoint(mountpoint)
	if err != nil {
		return err
	}
	var conns []string
	err = eachMount(func(m mountEntry) {
		if isFUSE(m.fstype) && within(m.point, abs) {
			// The connection is named by the device's minor
			// number; FUSE devices have major 0.
			if _, minor, ok := strings.Cut(m.dev, ":"); ok {
				conns = append(conns, minor)
			}
		}
	})
	if err != nil || len(conns) == 0 {
		return err
	}
	const ctl = "/sys/fs/fuse/connections"
	if ents, _ := os.ReadDir(ctl); len(ents) == 0 {
		if err := unix.Mount("none", ctl, "fusectl", 0, ""); err != nil {
			return fmt.Errorf("fusefs: abort %s: mount fusectl: %w", mountpoint, err)
		}
		defer unix.Unmount(ctl, 0)
	}
	var errs []error
	for _, c := range conns {
		if err := os.WriteFile(filepath.Join(ctl, c, "abort"), []byte("1"), 0); err != nil {
			errs = append(errs, fmt.Errorf("fusefs: abort %s: %w", mountpoint, err))
		}
	}
	return errors.Join(errs...)
}

// unmountOne clears the mount at abs, naming it mountpoint in errors.
func unmountOne(abs, mountpoint string) error {
	err := unix.Unmount(abs, 0)
	if errors.Is(err, syscall.EBUSY) {
		err = unix.Unmount(abs, unix.MNT_DETACH)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("fusefs: unmount %s: %w", mountpoint, ErrNotMounted)
	case errors.Is(err, syscall.EPERM):
		if ferr := fusermountUnmount(abs); ferr == nil {
			return nil
		}
	}
	return fmt.Errorf("fusefs: unmount %s: %w", mountpoint, err)
}

// absMountpoint returns the absolute path mountinfo lists for mountpoint.
// Symlinks are resolved in the parent only: resolving the mount point
// itself would stat it, which fails on a stale mount.
func absMountpoint(mountpoint string) (string, error) {
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return "", err
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return abs, nil
}

// fusermountUnmount asks the setuid helper to detach abs, for mounts that
// an unprivileged user made through it.
func fusermountUnmount(abs string) error {
	var last error = exec.ErrNotFound
	for _, bin := range []string{"fusermount3", "fusermount"} {
		path, err := exec.LookPath(bin)
		if err != nil {
			continue
		}
		if last = exec.Command(path, "-u", "-z", abs).Run(); last == nil {
			return nil
		}
	}
	return last
}

// MountsBelow lists the FUSE mount points strictly below mountpoint,
// deepest first: the stacked connections ([Options.StackConnections]),
// which must be unmounted before the workspace itself.
func MountsBelow(mountpoint string) ([]string, error) {
	abs, err := absMountpoint(mountpoint)
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(abs, "/") + "/"
	var below []string
	err = eachMount(func(m mountEntry) {
		if isFUSE(m.fstype) && strings.HasPrefix(m.point, prefix) && !slices.Contains(below, m.point) {
			below = append(below, m.point)
		}
	})
	slices.SortFunc(below, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return below, err
}

// mountEntry is what this package reads of a line of /proc/self/mountinfo.
type mountEntry struct {
	point  string // the mount point, unescaped
	fstype string
	dev    string // the device, "major:minor"
}

// eachMount calls fn with every line of /proc/self/mountinfo, in order
// (later mounts are on top).
func eachMount(fn func(mountEntry)) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := parseMountinfo(sc.Text()); ok {
			fn(m)
		}
	}
	return sc.Err()
}

func isFUSE(fstype string) bool {
	return fstype == "fuse" || fstype == "fuseblk" || strings.HasPrefix(fstype, "fuse.")
}

// mountedAt reports whether something is mounted at abs according to
// /proc/self/mountinfo, and whether the topmost mount there is FUSE.
func mountedAt(abs string) (fuse, found bool, err error) {
	m, found, err := mountAt(abs)
	return found && isFUSE(m.fstype), found, err
}

// mountAt returns the mount on top at abs, if any.
func mountAt(abs string) (top mountEntry, found bool, err error) {
	err = eachMount(func(m mountEntry) {
		if m.point == abs {
			top, found = m, true
		}
	})
	return top, found, err
}

// parseMountinfo reads one line of /proc/self/mountinfo (proc(5)): "36 35
// 98:0 /root /mnt opts - type src superopts", where optional fields sit
// before the "-".
func parseMountinfo(line string) (mountEntry, bool) {
	fields := strings.Fields(line)
	if len(fields) < 7 {
		return mountEntry{}, false
	}
	for i := 6; i < len(fields)-1; i++ {
		if fields[i] == "-" {
			return mountEntry{point: unescapeMountinfo(fields[4]), fstype: fields[i+1], dev: fields[2]}, true
		}
	}
	return mountEntry{}, false
}

// unescapeMountinfo undoes the octal escapes (\040 for a space, ...) the
// kernel uses in mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
