package memfs_test

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
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestDifferentialLinux runs the same random operations on memfs and on a
// real directory and requires the same errno from both, step by step, and
// the same tree at the end. Names are drawn from a tiny universe so that
// collisions, non-empty directories, renames into subtrees and hard links
// over each other come up often.
//
// It covers mkdir, create/write with O_EXCL, O_TRUNC and O_APPEND,
// ftruncate, unlink, rmdir, rename with each flag, link, symlink, user
// xattrs, FIFOs and sockets made by mknod, chmod with setuid, setgid and
// sticky, and (as root) lchown, and compares modes and owners too: setgid
// directories passing their group and bit down, and chown clearing setuid
// and setgid.
//
// Symlinks point at /dev/null, so that the one place memfs differs on
// purpose (it never follows a symlink in the middle of a path) gives the
// same ENOTDIR the kernel gives when it follows one to a device. Opens use
// O_NOFOLLOW, as the contract's Open does not follow a final link.
func TestDifferentialLinux(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			root := t.TempDir()
			fsys, _ := newFS(t, memfs.Options{})
			d := &differ{t: t, rnd: rand.New(rand.NewPCG(seed, 42)), root: root, fsys: fsys}
			for step := range 2000 {
				d.step(step)
			}
			d.compareTrees(".")
		})
	}
}

type differ struct {
	t    *testing.T
	rnd  *rand.Rand
	root string
	fsys *memfs.FS
	log  []string
}

func (d *differ) name() string {
	parts := make([]string, 1+d.rnd.IntN(3))
	for i := range parts {
		parts[i] = string(rune('a' + d.rnd.IntN(3)))
	}
	return strings.Join(parts, "/")
}

func (d *differ) host(name string) string { return filepath.Join(d.root, filepath.FromSlash(name)) }

// ctx makes memfs calls as this process, the one making the system calls.
func (d *differ) ctx() context.Context {
	return mounts.WithCaller(context.Background(), mounts.Caller{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())})
}

func (d *differ) step(step int) {
	ctx := d.ctx()
	a, b := d.name(), d.name()
	var desc string
	var memErr, osErr error
	ops := 11
	if os.Geteuid() == 0 {
		ops++ // giving files away needs root on Linux; memfs does not ask
	}
	switch op := d.rnd.IntN(ops); op {
	case 0:
		desc = "mkdir " + a
		memErr = d.fsys.Mkdir(ctx, a, 0o755)
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
		memErr = d.memWrite(a, flag, data, off, -1)
		osErr = d.osWrite(a, flag, data, off, -1)
	case 2:
		size := int64(d.rnd.IntN(30))
		desc = fmt.Sprintf("ftruncate %s %d", a, size)
		memErr = d.memWrite(a, os.O_WRONLY, nil, 0, size)
		osErr = d.osWrite(a, os.O_WRONLY, nil, 0, size)
	case 3:
		desc = "unlink " + a
		memErr = d.fsys.Unlink(ctx, a)
		osErr = unix.Unlink(d.host(a))
	case 4:
		desc = "rmdir " + a
		memErr = d.fsys.Rmdir(ctx, a)
		osErr = unix.Rmdir(d.host(a))
	case 5:
		flags := []mounts.RenameFlags{0, 0, mounts.RenameNoReplace, mounts.RenameExchange}[d.rnd.IntN(4)]
		desc = fmt.Sprintf("rename %s %s flags=%d", a, b, flags)
		memErr = d.fsys.Rename(ctx, a, b, flags)
		var uflags uint
		if flags&mounts.RenameNoReplace != 0 {
			uflags |= unix.RENAME_NOREPLACE
		}
		if flags&mounts.RenameExchange != 0 {
			uflags |= unix.RENAME_EXCHANGE
		}
		osErr = unix.Renameat2(unix.AT_FDCWD, d.host(a), unix.AT_FDCWD, d.host(b), uflags)
	case 6:
		desc = "link " + a + " " + b
		memErr = d.fsys.Link(ctx, a, b)
		osErr = unix.Linkat(unix.AT_FDCWD, d.host(a), unix.AT_FDCWD, d.host(b), 0)
	case 7:
		desc = "symlink /dev/null " + a
		memErr = d.fsys.Symlink(ctx, "/dev/null", a)
		osErr = unix.Symlink("/dev/null", d.host(a))
	case 8:
		attr := "user." + string(rune('x'+d.rnd.IntN(2)))
		flags := d.rnd.IntN(3)
		val := []byte(fmt.Sprint(step))
		desc = fmt.Sprintf("setxattr %s %s flags=%d", a, attr, flags)
		memErr = d.fsys.SetXattr(ctx, a, attr, val, flags)
		osErr = unix.Lsetxattr(d.host(a), attr, val, flags)
	case 9:
		if d.rnd.IntN(2) == 0 {
			attr := "user." + string(rune('x'+d.rnd.IntN(2)))
			desc = fmt.Sprintf("removexattr %s %s", a, attr)
			memErr = d.fsys.RemoveXattr(ctx, a, attr)
			osErr = unix.Lremovexattr(d.host(a), attr)
			break
		}
		// Any mode, setuid, setgid and sticky included; owner rwx
		// stays so that the walk can go on as any user.
		mode := uint32(d.rnd.IntN(0o10000)) | 0o700
		if mode&unix.S_ISVTX != 0 {
			// Not both sticky and world-writable: in such a
			// directory the VFS refuses an O_CREAT open of a
			// third user's entry (may_create_in_sticky), even
			// for root, which is a permission check and the
			// kernel's business, not memfs's.
			mode &^= 0o002
		}
		desc = fmt.Sprintf("chmod %s %04o", a, mode)
		memErr = d.fsys.Chmod(ctx, a, mounts.PermMode(mode))
		osErr = unix.Fchmodat(unix.AT_FDCWD, d.host(a), mode, unix.AT_SYMLINK_NOFOLLOW)
	case 10:
		typ, ut := fs.ModeNamedPipe, uint32(unix.S_IFIFO)
		if d.rnd.IntN(2) == 0 {
			typ, ut = fs.ModeSocket, unix.S_IFSOCK
		}
		desc = fmt.Sprintf("mknod %s %v", a, typ)
		memErr = d.fsys.Mknod(ctx, a, typ|0o644, 0)
		osErr = unix.Mknod(d.host(a), ut|0o644, 0)
	case 11:
		ids := []int{-1, 0, 1001, 1002}
		uid, gid := ids[d.rnd.IntN(len(ids))], ids[d.rnd.IntN(len(ids))]
		desc = fmt.Sprintf("lchown %s %d:%d", a, uid, gid)
		memErr = d.fsys.Chown(ctx, a, uid, gid)
		osErr = unix.Lchown(d.host(a), uid, gid)
	}
	d.log = append(d.log, desc)
	if got, want := errnoOf(d.t, memErr), errnoOf(d.t, osErr); got != want {
		d.t.Fatalf("step %d: %s: memfs %v (%v), linux %v (%v)\nhistory:\n%s",
			step, desc, got, memErr, want, osErr, strings.Join(d.log[max(0, len(d.log)-25):], "\n"))
	}
	if step%100 == 99 {
		d.compareTrees(".")
	}
}

// memWrite opens, writes or truncates, and closes through memfs.
func (d *differ) memWrite(name string, flag int, data []byte, off, size int64) error {
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
	// O_NONBLOCK: a FIFO without a reader fails with ENXIO, as memfs
	// refuses every special file, instead of waiting.
	fd, err := unix.Open(d.host(name), flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	if size >= 0 {
		err = unix.Ftruncate(fd, size)
	} else {
		// Linux's pwrite ignores the offset with O_APPEND, like memfs.
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

// compareTrees checks memfs and the directory hold the same names, types,
// link counts, sizes, contents and targets, and that hard links are shared
// alike.
func (d *differ) compareTrees(name string) {
	t := d.t
	t.Helper()
	inoPairs := map[uint64]uint64{} // memfs ino -> host ino
	var walk func(name string)
	walk = func(name string) {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(d.host(name), &st), "lstat %s", name)
		a := stat(t, d.fsys, name)
		if host, ok := inoPairs[a.Ino]; ok {
			assert.Equal(t, host, st.Ino, "%s: memfs shares an inode the host does not", name)
		}
		inoPairs[a.Ino] = st.Ino
		hostType := mounts.FileModeOf(st.Mode).Type()
		require.Equal(t, hostType, a.Mode.Type(), "%s type", name)
		if name != "." {
			// Mode bits (setuid, setgid, sticky included) and
			// owners; the root is the test's temporary directory.
			assert.Equal(t, fmt.Sprintf("%04o %d:%d", st.Mode&0o7777, st.Uid, st.Gid),
				fmt.Sprintf("%04o %d:%d", mounts.UnixPerm(a.Mode), a.Uid, a.Gid), "%s mode and owner", name)
		}
		if hostType != fs.ModeSymlink {
			assert.Equal(t, hostXattrs(t, d.host(name)), memXattrs(t, d.fsys, name), "%s xattrs", name)
		}
		assert.Equal(t, uint32(st.Nlink), a.Nlink, "%s nlink", name)
		switch hostType {
		case fs.ModeDir:
			ents, err := d.fsys.ReadDir(context.Background(), name)
			require.NoError(t, err)
			hostEnts, err := os.ReadDir(d.host(name))
			require.NoError(t, err)
			var got, want []string
			for _, e := range ents {
				got = append(got, e.Name)
			}
			for _, e := range hostEnts {
				want = append(want, e.Name())
			}
			require.Equal(t, want, got, "%s entries", name)
			for _, e := range got {
				walk(mounts.Join(name, e))
			}
		case fs.ModeSymlink:
			target, err := d.fsys.ReadLink(context.Background(), name)
			require.NoError(t, err)
			hostTarget, err := os.Readlink(d.host(name))
			require.NoError(t, err)
			assert.Equal(t, hostTarget, target, "%s target", name)
		case 0:
			assert.Equal(t, st.Size, a.Size, "%s size", name)
			hostData, err := os.ReadFile(d.host(name))
			require.NoError(t, err)
			assert.Equal(t, string(hostData), readFile(t, d.fsys, name), "%s content", name)
		}
	}
	walk(name)
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

func memXattrs(t *testing.T, fsys *memfs.FS, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	names, err := fsys.ListXattr(ctx, name)
	require.NoError(t, err)
	out := map[string]string{}
	for _, attr := range names {
		v, err := fsys.GetXattr(ctx, name, attr)
		require.NoError(t, err)
		out[attr] = string(v)
	}
	return out
}
