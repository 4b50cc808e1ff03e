package overlayfs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// TestDifferentialLinux runs the same random operations on an overlay and
// on a real directory holding a copy of the overlay's lower, and requires
// the same errno from both, step by step, and the same tree every 100
// steps and at the end: names, types, modes with setuid, setgid and
// sticky, owners, link counts, sizes, contents, targets, user xattrs, and
// hard links shared alike. Inode numbers are checked as the kernel keeps
// them: a name keeps its number across every change of its content or
// attributes (a copy-up, for a lower name), a rename carries the number to
// the new name, a link shares it, and within one tree two names share a
// number on the overlay exactly when they do on the host.
//
// Names come from a tiny universe, so that lower and upper entries collide
// with each other all the time: a lower directory renamed over a removed
// one, a file made where a lower directory was, hard links to lower files.
// The lower holds no hard links (see the package doc). Symlinks point at
// /dev/null, as in the memory mount's differential test, so that following
// one in the middle of a path gives ENOTDIR on both sides.
func TestDifferentialLinux(t *testing.T) {
	uppers := []struct {
		name  string
		seeds uint64
		// exchange: the upper can exchange names, so the overlay can.
		exchange bool
		upper    func(t *testing.T) mounts.FS
	}{
		{"memory", 16, true, func(t *testing.T) mounts.FS { return memfs.New(memfs.Options{}) }},
		{"host", 4, true, func(t *testing.T) mounts.FS {
			h, err := hostfs.Open(t.TempDir(), hostfs.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { h.(*hostfs.FS).Close() })
			return h
		}},
		// Without RenameExchange in the upper, the overlay takes its
		// fallbacks for rmdir, mkdir over a whiteout and renames.
		{"no-exchange", 4, false, func(t *testing.T) mounts.FS { return noExchange{memfs.New(memfs.Options{})} }},
	}
	for _, u := range uppers {
		seeds := u.seeds
		if testing.Short() {
			seeds = 2
		}
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", u.name, seed), func(t *testing.T) {
				rnd := rand.New(rand.NewPCG(seed, 7))
				lm := memfs.New(memfs.Options{})
				d := &differ{t: t, rnd: rnd, root: t.TempDir(), exchange: u.exchange}
				d.populate(lm)
				o, err := overlayfs.New(bg, frozen{lm}, u.upper(t), overlayfs.Options{})
				require.NoError(t, err)
				d.fsys = o
				d.compareTrees()
				for step := range 2000 {
					d.step(step)
				}
				d.compareTrees()
			})
		}
	}
}

// noExchange is a memory mount that cannot exchange two names.
type noExchange struct{ *memfs.FS }

func (n noExchange) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	if flags&mounts.RenameExchange != 0 {
		return mounts.PathErr("rename", oldname, mounts.ErrNotSupported)
	}
	return n.FS.Rename(ctx, oldname, newname, flags)
}

type differ struct {
	t        *testing.T
	rnd      *rand.Rand
	root     string
	fsys     *overlayfs.FS
	log      []string
	exchange bool
}

func (d *differ) name() string {
	parts := make([]string, 1+d.rnd.IntN(3))
	for i := range parts {
		parts[i] = string(rune('a' + d.rnd.IntN(3)))
	}
	return strings.Join(parts, "/")
}

func (d *differ) host(name string) string { return filepath.Join(d.root, filepath.FromSlash(name)) }

// ctx makes the overlay's calls as this process, the one making the
// system calls.
func (d *differ) ctx() context.Context {
	return mounts.WithCaller(context.Background(), mounts.Caller{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())})
}

// populate fills the lower with random directories, files, symlinks,
// FIFOs, modes and xattrs, and copies it to the host directory.
func (d *differ) populate(lm *memfs.FS) {
	ctx := d.ctx()
	for i := range 40 {
		a := d.name()
		switch d.rnd.IntN(6) {
		case 0, 1:
			_ = mounts.MkdirAll(ctx, lm, a, 0o755)
		case 2:
			_ = mounts.WriteFile(ctx, lm, a, []byte(fmt.Sprintf("lower %d %s", i, a)), 0o644)
		case 3:
			_ = lm.Symlink(ctx, "/dev/null", a)
		case 4:
			_ = lm.Mknod(ctx, a, fs.ModeNamedPipe|0o640, 0)
		case 5:
			_ = lm.SetXattr(ctx, a, "user."+string(rune('x'+d.rnd.IntN(2))), []byte(fmt.Sprint(i)), 0)
			_ = lm.Chmod(ctx, a, mounts.PermMode(uint32(d.rnd.IntN(0o10000))|0o700)&^fs.ModeSticky)
		}
	}
	var copyDir func(name string)
	copyDir = func(name string) {
		ents, err := lm.ReadDir(ctx, name)
		require.NoError(d.t, err)
		for _, e := range ents {
			child := mounts.Join(name, e.Name)
			a, err := lm.Stat(ctx, child)
			require.NoError(d.t, err)
			p := d.host(child)
			switch a.Mode.Type() {
			case fs.ModeDir:
				require.NoError(d.t, unix.Mkdir(p, 0o700))
				copyDir(child)
			case fs.ModeSymlink:
				target, err := lm.ReadLink(ctx, child)
				require.NoError(d.t, err)
				require.NoError(d.t, unix.Symlink(target, p))
			case fs.ModeNamedPipe:
				require.NoError(d.t, unix.Mknod(p, unix.S_IFIFO|0o600, 0))
			default:
				data, err := mounts.ReadFile(ctx, lm, child)
				require.NoError(d.t, err)
				require.NoError(d.t, os.WriteFile(p, data, 0o600))
			}
			require.NoError(d.t, unix.Lchown(p, int(a.Uid), int(a.Gid)))
			if a.Mode.Type() != fs.ModeSymlink {
				require.NoError(d.t, unix.Chmod(p, mounts.UnixPerm(a.Mode)))
				attrs, err := lm.ListXattr(ctx, child)
				require.NoError(d.t, err)
				for _, x := range attrs {
					v, err := lm.GetXattr(ctx, child, x)
					require.NoError(d.t, err)
					require.NoError(d.t, unix.Lsetxattr(p, x, v, 0))
				}
			}
		}
	}
	copyDir(".")
}

// ino is the overlay's number of name, 0 if it has none.
func (d *differ) ino(name string) uint64 {
	a, err := d.fsys.Stat(context.Background(), name)
	if err != nil {
		return 0
	}
	return a.Ino
}

func (d *differ) step(step int) {
	ctx := d.ctx()
	a, b := d.name(), d.name()
	inoA, inoB := d.ino(a), d.ino(b)
	var desc string
	var ovErr, osErr error
	// keeps: on success, a keeps its number; moves: b gets a's (and,
	// for an exchange, a gets b's); links: b shares a's.
	var keeps, moves, swaps, links bool
	ops := 11
	if os.Geteuid() == 0 {
		ops++ // giving files away needs root on Linux
	}
	switch op := d.rnd.IntN(ops); op {
	case 0:
		desc = "mkdir " + a
		ovErr = d.fsys.Mkdir(ctx, a, 0o755)
		osErr = unix.Mkdir(d.host(a), 0o755)
	case 1:
		flag := os.O_WRONLY | os.O_CREATE
		for _, f := range []int{os.O_EXCL, os.O_TRUNC, os.O_APPEND} {
			if d.rnd.IntN(3) == 0 {
				flag |= f
			}
		}
		data := []byte(fmt.Sprintf("<%d>", step))
		off := int64(d.rnd.IntN(20))
		desc = fmt.Sprintf("write %s flag=%#x off=%d", a, flag, off)
		ovErr = d.ovWrite(a, flag, data, off, -1)
		osErr = d.osWrite(a, flag, data, off, -1)
		keeps = true
	case 2:
		size := int64(d.rnd.IntN(30))
		desc = fmt.Sprintf("ftruncate %s %d", a, size)
		ovErr = d.ovWrite(a, os.O_WRONLY, nil, 0, size)
		osErr = d.osWrite(a, os.O_WRONLY, nil, 0, size)
		keeps = true
	case 3:
		desc = "unlink " + a
		ovErr = d.fsys.Unlink(ctx, a)
		osErr = unix.Unlink(d.host(a))
	case 4:
		desc = "rmdir " + a
		ovErr = d.fsys.Rmdir(ctx, a)
		osErr = unix.Rmdir(d.host(a))
	case 5:
		flags := []mounts.RenameFlags{0, 0, mounts.RenameNoReplace, mounts.RenameExchange}[d.rnd.IntN(4)]
		if !d.exchange && flags == mounts.RenameExchange {
			flags = 0
		}
		desc = fmt.Sprintf("rename %s %s flags=%d", a, b, flags)
		ovErr = d.fsys.Rename(ctx, a, b, flags)
		var uflags uint
		if flags&mounts.RenameNoReplace != 0 {
			uflags |= unix.RENAME_NOREPLACE
		}
		if flags&mounts.RenameExchange != 0 {
			uflags |= unix.RENAME_EXCHANGE
		}
		osErr = unix.Renameat2(unix.AT_FDCWD, d.host(a), unix.AT_FDCWD, d.host(b), uflags)
		moves, swaps = true, flags&mounts.RenameExchange != 0
	case 6:
		desc = "link " + a + " " + b
		ovErr = d.fsys.Link(ctx, a, b)
		osErr = unix.Linkat(unix.AT_FDCWD, d.host(a), unix.AT_FDCWD, d.host(b), 0)
		links = true
	case 7:
		desc = "symlink /dev/null " + a
		ovErr = d.fsys.Symlink(ctx, "/dev/null", a)
		osErr = unix.Symlink("/dev/null", d.host(a))
	case 8:
		attr := "user." + string(rune('x'+d.rnd.IntN(2)))
		flags := d.rnd.IntN(3)
		val := []byte(fmt.Sprint(step))
		desc = fmt.Sprintf("setxattr %s %s flags=%d", a, attr, flags)
		ovErr = d.fsys.SetXattr(ctx, a, attr, val, flags)
		osErr = unix.Lsetxattr(d.host(a), attr, val, flags)
		keeps = true
	case 9:
		keeps = true
		if d.rnd.IntN(2) == 0 {
			attr := "user." + string(rune('x'+d.rnd.IntN(2)))
			desc = fmt.Sprintf("removexattr %s %s", a, attr)
			ovErr = d.fsys.RemoveXattr(ctx, a, attr)
			osErr = unix.Lremovexattr(d.host(a), attr)
			break
		}
		// Owner rwx stays so the walk can go on; not sticky and
		// world-writable at once (see the memory mount's test).
		mode := uint32(d.rnd.IntN(0o10000)) | 0o700
		if mode&unix.S_ISVTX != 0 {
			mode &^= 0o002
		}
		desc = fmt.Sprintf("chmod %s %04o", a, mode)
		ovErr = d.fsys.Chmod(ctx, a, mounts.PermMode(mode))
		osErr = unix.Fchmodat(unix.AT_FDCWD, d.host(a), mode, unix.AT_SYMLINK_NOFOLLOW)
	case 10:
		typ, ut := fs.ModeNamedPipe, uint32(unix.S_IFIFO)
		if d.rnd.IntN(2) == 0 {
			typ, ut = fs.ModeSocket, unix.S_IFSOCK
		}
		desc = fmt.Sprintf("mknod %s %v", a, typ)
		ovErr = d.fsys.Mknod(ctx, a, typ|0o644, 0)
		osErr = unix.Mknod(d.host(a), ut|0o644, 0)
	case 11:
		ids := []int{-1, 0, 1001, 1002}
		uid, gid := ids[d.rnd.IntN(len(ids))], ids[d.rnd.IntN(len(ids))]
		desc = fmt.Sprintf("lchown %s %d:%d", a, uid, gid)
		ovErr = d.fsys.Chown(ctx, a, uid, gid)
		osErr = unix.Lchown(d.host(a), uid, gid)
		keeps = true
	}
	d.log = append(d.log, desc)
	history := func() string { return strings.Join(d.log[max(0, len(d.log)-25):], "\n") }
	if got, want := errnoOf(d.t, ovErr), errnoOf(d.t, osErr); got != want {
		d.t.Fatalf("step %d: %s: overlay %v (%v), linux %v (%v)\nhistory:\n%s", step, desc, got, ovErr, want, osErr, history())
	}
	if ovErr == nil {
		switch {
		case keeps && inoA != 0:
			require.Equalf(d.t, inoA, d.ino(a), "step %d: %s changed the number of %s\nhistory:\n%s", step, desc, a, history())
		case moves && a != b && inoA != 0:
			require.Equalf(d.t, inoA, d.ino(b), "step %d: %s: %s did not take %s's number\nhistory:\n%s", step, desc, b, a, history())
			if swaps {
				require.Equalf(d.t, inoB, d.ino(a), "step %d: %s: %s did not take %s's number\nhistory:\n%s", step, desc, a, b, history())
			}
		case links:
			require.Equalf(d.t, inoA, d.ino(b), "step %d: %s: the link has another number\nhistory:\n%s", step, desc, history())
		}
	}
	if step%100 == 99 {
		d.compareTrees()
	}
}

// ovWrite opens, writes or truncates, and closes through the overlay.
func (d *differ) ovWrite(name string, flag int, data []byte, off, size int64) error {
	f, err := d.fsys.OpenFile(d.ctx(), name, flag, 0o644)
	if err != nil {
		return err
	}
	w := f.(mounts.WritableFile)
	if size >= 0 {
		err = w.Truncate(size)
	} else {
		_, err = w.WriteAt(data, off)
	}
	return errors.Join(err, f.Close())
}

// osWrite does the same with system calls.
func (d *differ) osWrite(name string, flag int, data []byte, off, size int64) error {
	// O_NONBLOCK: a FIFO without a reader fails with ENXIO, as the
	// overlay refuses every special file, instead of waiting.
	fd, err := unix.Open(d.host(name), flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	if size >= 0 {
		err = unix.Ftruncate(fd, size)
	} else {
		_, err = unix.Pwrite(fd, data, off)
	}
	return errors.Join(err, unix.Close(fd))
}

// errnoOf maps an error of either side to its errno.
func errnoOf(t *testing.T, err error) syscall.Errno {
	t.Helper()
	var errno syscall.Errno
	switch {
	case err == nil:
		return 0
	case errors.As(err, &errno):
		return errno
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL
	case errors.Is(err, fs.ErrPermission):
		return syscall.EPERM
	}
	t.Fatalf("no errno for %v (%T)", err, err)
	return 0
}

// compareTrees checks the overlay and the directory hold the same tree,
// and that inode numbers pair one to one.
func (d *differ) compareTrees() {
	t := d.t
	t.Helper()
	ovToHost := map[uint64]uint64{}
	hostToOv := map[uint64]uint64{}
	ctx := context.Background()
	var walk func(name string)
	walk = func(name string) {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(d.host(name), &st), "lstat %s", name)
		a, err := d.fsys.Stat(ctx, name)
		require.NoError(t, err, "stat %s", name)
		if host, ok := ovToHost[a.Ino]; ok {
			assert.Equal(t, host, st.Ino, "%s: the overlay shares a number the host does not", name)
		}
		if ov, ok := hostToOv[st.Ino]; ok {
			assert.Equal(t, ov, a.Ino, "%s: the host shares an inode the overlay does not", name)
		}
		ovToHost[a.Ino], hostToOv[st.Ino] = st.Ino, a.Ino
		hostType := mounts.FileModeOf(st.Mode).Type()
		require.Equal(t, hostType, a.Mode.Type(), "%s type", name)
		if name != "." {
			assert.Equal(t, fmt.Sprintf("%04o %d:%d", st.Mode&0o7777, st.Uid, st.Gid),
				fmt.Sprintf("%04o %d:%d", mounts.UnixPerm(a.Mode), a.Uid, a.Gid), "%s mode and owner", name)
		}
		if hostType != fs.ModeSymlink {
			assert.Equal(t, hostXattrs(t, d.host(name)), ovXattrs(t, d.fsys, name), "%s xattrs", name)
		}
		assert.Equal(t, uint32(st.Nlink), a.Nlink, "%s nlink", name)
		switch hostType {
		case fs.ModeDir:
			ents, err := d.fsys.ReadDir(ctx, name)
			require.NoError(t, err)
			hostEnts, err := os.ReadDir(d.host(name))
			require.NoError(t, err)
			var got, want []string
			for _, e := range ents {
				got = append(got, e.Name)
				ea, err := d.fsys.Stat(ctx, mounts.Join(name, e.Name))
				require.NoError(t, err)
				assert.Equal(t, ea.Ino, e.Ino, "%s: listed number of %s", name, e.Name)
			}
			for _, e := range hostEnts {
				want = append(want, e.Name())
			}
			require.Equal(t, want, got, "%s entries", name)
			for _, e := range got {
				walk(mounts.Join(name, e))
			}
		case fs.ModeSymlink:
			target, err := d.fsys.ReadLink(ctx, name)
			require.NoError(t, err)
			hostTarget, err := os.Readlink(d.host(name))
			require.NoError(t, err)
			assert.Equal(t, hostTarget, target, "%s target", name)
		case 0:
			assert.Equal(t, st.Size, a.Size, "%s size", name)
			hostData, err := os.ReadFile(d.host(name))
			require.NoError(t, err)
			data, err := mounts.ReadFile(ctx, d.fsys, name)
			require.NoError(t, err)
			assert.Equal(t, string(hostData), string(data), "%s content", name)
		}
	}
	walk(".")
	if t.Failed() {
		t.FailNow()
	}
}

func hostXattrs(t *testing.T, path string) map[string]string {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(path, buf)
	require.NoError(t, err, "listxattr")
	out := map[string]string{}
	for _, attr := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(attr, "user.") {
			continue // security.* labels of the host are not ours
		}
		v := make([]byte, 256)
		m, err := unix.Lgetxattr(path, attr, v)
		require.NoError(t, err, "getxattr %s", attr)
		out[attr] = string(v[:m])
	}
	return out
}

func ovXattrs(t *testing.T, fsys mounts.FS, name string) map[string]string {
	t.Helper()
	names, err := mounts.ListXattr(bg, fsys, name)
	require.NoError(t, err)
	out := map[string]string{}
	for _, attr := range names {
		v, err := mounts.GetXattr(bg, fsys, name, attr)
		require.NoError(t, err)
		out[attr] = string(v)
	}
	return out
}
