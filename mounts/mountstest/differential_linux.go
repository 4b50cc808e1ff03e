package mountstest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// DifferentialOptions describe the mount [Differential] drives. Only New is
// required.
type DifferentialOptions struct {
	// New returns a fresh mount under test. lower is what Lower returned,
	// filled with the starting tree, or nil without Lower.
	New func(t *testing.T, lower mounts.FS) mounts.FS
	// Lower, when set, returns an empty writable mount (memfs, say) that
	// Differential fills with a random tree of directories, files,
	// symlinks, FIFOs, modes and xattrs, and copies into the host
	// directory, before it hands it to New: the tree both sides start
	// from (an overlay's lower). Without it both start empty.
	Lower func(t *testing.T) mounts.FS
	// NoExchange says the mount cannot exchange two names: a draw of
	// RenameExchange becomes a plain rename on both sides.
	NoExchange bool
	// Seeds is how many sequences to run, seeds 0 to Seeds-1, each in its
	// own subtest "seed<n>" with its own mount and directory (default 1).
	// VFSMOUNT_DIFF_SEED=n runs seed n alone instead.
	Seeds uint64
	// Stream is the second word of the PCG source, so that two callers
	// with the same seeds still draw different sequences.
	Stream uint64
	// Steps is the number of operations per sequence (default 2000).
	Steps int
}

// Differential runs random operations on the mount New returns and on a
// real Linux directory (a t.TempDir) and requires the same errno from both,
// step by step, and the same tree before the first step, every 100 steps
// and at the end. See "Differential" in the package doc for what it covers.
func Differential(t *testing.T, opts DifferentialOptions) {
	t.Helper()
	require.NotNil(t, opts.New, "DifferentialOptions.New")
	seeds := make([]uint64, 0, max(1, opts.Seeds))
	for s := range max(1, opts.Seeds) {
		seeds = append(seeds, s)
	}
	if s := os.Getenv("VFSMOUNT_DIFF_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "VFSMOUNT_DIFF_SEED")
		seeds = []uint64{n}
	}
	steps := opts.Steps
	if steps == 0 {
		steps = 2000
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			d := &differ{t: t, rnd: rand.New(rand.NewPCG(seed, opts.Stream)), root: t.TempDir(), exchange: !opts.NoExchange}
			var lower mounts.FS
			if opts.Lower != nil {
				lower = opts.Lower(t)
				d.populate(lower)
			}
			d.fsys = opts.New(t, lower)
			d.compareTrees()
			for step := range steps {
				d.step(step)
			}
			d.compareTrees()
		})
	}
}

type differ struct {
	t        *testing.T
	rnd      *rand.Rand
	root     string
	fsys     mounts.FS
	log      []string
	exchange bool
}

// name draws a path of one to three components from {a, b, c}: a tiny
// universe, so that collisions, non-empty directories, renames into
// subtrees and hard links over each other come up often.
func (d *differ) name() string {
	parts := make([]string, 1+d.rnd.IntN(3))
	for i := range parts {
		parts[i] = string(rune('a' + d.rnd.IntN(3)))
	}
	return strings.Join(parts, "/")
}

func (d *differ) host(name string) string { return filepath.Join(d.root, filepath.FromSlash(name)) }

// ctx makes the mount's calls as this process, the one making the system
// calls.
func (d *differ) ctx() context.Context {
	return mounts.WithCaller(context.Background(), mounts.Caller{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())})
}

// populate fills lower with random directories, files, symlinks, FIFOs,
// modes and xattrs, and copies it to the host directory.
func (d *differ) populate(lower mounts.FS) {
	ctx := d.ctx()
	for i := range 40 {
		a := d.name()
		switch d.rnd.IntN(6) {
		case 0, 1:
			_ = mounts.MkdirAll(ctx, lower, a, 0o755)
		case 2:
			_ = mounts.WriteFile(ctx, lower, a, []byte(fmt.Sprintf("lower %d %s", i, a)), 0o644)
		case 3:
			_ = mounts.Symlink(ctx, lower, "/dev/null", a)
		case 4:
			_ = mounts.Mknod(ctx, lower, a, fs.ModeNamedPipe|0o640, 0)
		case 5:
			_ = mounts.SetXattr(ctx, lower, a, "user."+string(rune('x'+d.rnd.IntN(2))), []byte(fmt.Sprint(i)), 0)
			_ = mounts.Chmod(ctx, lower, a, mounts.PermMode(uint32(d.rnd.IntN(0o10000))|0o700)&^fs.ModeSticky)
		}
	}
	var copyDir func(name string)
	copyDir = func(name string) {
		ents, err := lower.ReadDir(ctx, name)
		require.NoError(d.t, err)
		for _, e := range ents {
			child := mounts.Join(name, e.Name)
			a, err := lower.Stat(ctx, child)
			require.NoError(d.t, err)
			p := d.host(child)
			switch a.Mode.Type() {
			case fs.ModeDir:
				require.NoError(d.t, unix.Mkdir(p, 0o700))
				copyDir(child)
			case fs.ModeSymlink:
				target, err := lower.ReadLink(ctx, child)
				require.NoError(d.t, err)
				require.NoError(d.t, unix.Symlink(target, p))
			case fs.ModeNamedPipe:
				require.NoError(d.t, unix.Mknod(p, unix.S_IFIFO|0o600, 0))
			default:
				data, err := mounts.ReadFile(ctx, lower, child)
				require.NoError(d.t, err)
				require.NoError(d.t, os.WriteFile(p, data, 0o600))
			}
			require.NoError(d.t, unix.Lchown(p, int(a.Uid), int(a.Gid)))
			if a.Mode.Type() != fs.ModeSymlink {
				require.NoError(d.t, unix.Chmod(p, mounts.UnixPerm(a.Mode)))
				attrs, err := mounts.ListXattr(ctx, lower, child)
				require.NoError(d.t, err)
				for _, x := range attrs {
					v, err := mounts.GetXattr(ctx, lower, child, x)
					require.NoError(d.t, err)
					require.NoError(d.t, unix.Lsetxattr(p, x, v, 0))
				}
			}
		}
	}
	copyDir(".")
}

// ino is the mount's number of name, 0 if it has none.
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
	var mntErr, osErr error
	// keeps: on success, a keeps its number; moves: b gets a's (and,
	// for an exchange, a gets b's); links: b shares a's.
	var keeps, moves, swaps, links bool
	ops := 11
	if os.Geteuid() == 0 {
		ops++ // giving files away needs root on Linux; the mount may not ask
	}
	switch op := d.rnd.IntN(ops); op {
	case 0:
		desc = "mkdir " + a
		mntErr = mounts.Mkdir(ctx, d.fsys, a, 0o755)
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
		mntErr = d.mntWrite(a, flag, data, off, -1)
		osErr = d.osWrite(a, flag, data, off, -1)
		keeps = true
	case 2:
		size := int64(d.rnd.IntN(30))
		desc = fmt.Sprintf("ftruncate %s %d", a, size)
		mntErr = d.mntWrite(a, os.O_WRONLY, nil, 0, size)
		osErr = d.osWrite(a, os.O_WRONLY, nil, 0, size)
		keeps = true
	case 3:
		desc = "unlink " + a
		mntErr = mounts.Unlink(ctx, d.fsys, a)
		osErr = unix.Unlink(d.host(a))
	case 4:
		desc = "rmdir " + a
		mntErr = mounts.Rmdir(ctx, d.fsys, a)
		osErr = unix.Rmdir(d.host(a))
	case 5:
		flags := []mounts.RenameFlags{0, 0, mounts.RenameNoReplace, mounts.RenameExchange}[d.rnd.IntN(4)]
		if !d.exchange && flags == mounts.RenameExchange {
			flags = 0
		}
		desc = fmt.Sprintf("rename %s %s flags=%d", a, b, flags)
		mntErr = mounts.Rename(ctx, d.fsys, a, b, flags)
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
		mntErr = mounts.Link(ctx, d.fsys, a, b)
		osErr = unix.Linkat(unix.AT_FDCWD, d.host(a), unix.AT_FDCWD, d.host(b), 0)
		links = true
	case 7:
		// /dev/null: following a symlink in the middle of a path gives
		// the ENOTDIR of a device on Linux, the same a mount that never
		// follows one there gives.
		desc = "symlink /dev/null " + a
		mntErr = mounts.Symlink(ctx, d.fsys, "/dev/null", a)
		osErr = unix.Symlink("/dev/null", d.host(a))
	case 8:
		attr := "user." + string(rune('x'+d.rnd.IntN(2)))
		flags := d.rnd.IntN(3)
		val := []byte(fmt.Sprint(step))
		desc = fmt.Sprintf("setxattr %s %s flags=%d", a, attr, flags)
		mntErr = mounts.SetXattr(ctx, d.fsys, a, attr, val, flags)
		osErr = unix.Lsetxattr(d.host(a), attr, val, flags)
		keeps = true
	case 9:
		keeps = true
		if d.rnd.IntN(2) == 0 {
			attr := "user." + string(rune('x'+d.rnd.IntN(2)))
			desc = fmt.Sprintf("removexattr %s %s", a, attr)
			mntErr = mounts.RemoveXattr(ctx, d.fsys, a, attr)
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
			// kernel's business, not the mount's.
			mode &^= 0o002
		}
		desc = fmt.Sprintf("chmod %s %04o", a, mode)
		mntErr = mounts.Chmod(ctx, d.fsys, a, mounts.PermMode(mode))
		osErr = unix.Fchmodat(unix.AT_FDCWD, d.host(a), mode, unix.AT_SYMLINK_NOFOLLOW)
	case 10:
		typ, ut := fs.ModeNamedPipe, uint32(unix.S_IFIFO)
		if d.rnd.IntN(2) == 0 {
			typ, ut = fs.ModeSocket, unix.S_IFSOCK
		}
		desc = fmt.Sprintf("mknod %s %v", a, typ)
		mntErr = mounts.Mknod(ctx, d.fsys, a, typ|0o644, 0)
		osErr = unix.Mknod(d.host(a), ut|0o644, 0)
	case 11:
		ids := []int{-1, 0, 1001, 1002}
		uid, gid := ids[d.rnd.IntN(len(ids))], ids[d.rnd.IntN(len(ids))]
		desc = fmt.Sprintf("lchown %s %d:%d", a, uid, gid)
		mntErr = mounts.Chown(ctx, d.fsys, a, uid, gid)
		osErr = unix.Lchown(d.host(a), uid, gid)
		keeps = true
	}
	d.log = append(d.log, desc)
	history := func() string { return strings.Join(d.log[max(0, len(d.log)-25):], "\n") }
	if got, want := ErrnoOf(d.t, mntErr), ErrnoOf(d.t, osErr); got != want {
		d.t.Fatalf("step %d: %s: mount %v (%v), linux %v (%v)\nhistory:\n%s", step, desc, got, mntErr, want, osErr, history())
	}
	if mntErr == nil {
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

// mntWrite opens (O_NOFOLLOW is implied: the contract's OpenFile does not
// follow a final link), writes or truncates, and closes through the mount.
func (d *differ) mntWrite(name string, flag int, data []byte, off, size int64) error {
	f, err := mounts.OpenFile(d.ctx(), d.fsys, name, flag, 0o644)
	if err != nil {
		return err
	}
	w, ok := f.(mounts.WritableFile)
	if !ok {
		return errors.Join(fmt.Errorf("OpenFile(%s, %#x) returned a %T, not a mounts.WritableFile", name, flag, f), f.Close())
	}
	if size >= 0 {
		err = w.Truncate(size)
	} else {
		_, err = w.WriteAt(data, off)
	}
	return errors.Join(err, f.Close())
}

// osWrite does the same with system calls.
func (d *differ) osWrite(name string, flag int, data []byte, off, size int64) error {
	// O_NONBLOCK: a FIFO without a reader fails with ENXIO, as a mount
	// refuses every special file, instead of waiting.
	fd, err := unix.Open(d.host(name), flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	if size >= 0 {
		err = unix.Ftruncate(fd, size)
	} else {
		// Linux's pwrite ignores the offset with O_APPEND, as the
		// contract's WriteAt does.
		_, err = unix.Pwrite(fd, data, off)
	}
	return errors.Join(err, unix.Close(fd))
}

// ErrnoOf maps an error of a mount or of a system call to its errno, so that
// differential tests can compare the two: 0 for nil, the errno an error
// wraps, else the one of the fs.Err* sentinel it wraps. Any other error
// fails t.
func ErrnoOf(t testing.TB, err error) syscall.Errno {
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

// compareTrees checks the mount and the directory hold the same names,
// types, modes, owners, xattrs, link counts, sizes, contents and targets,
// that inode numbers pair one to one (hard links shared alike), and that
// ReadDir lists each entry with the number Stat gives it.
func (d *differ) compareTrees() {
	t := d.t
	t.Helper()
	mntToHost := map[uint64]uint64{}
	hostToMnt := map[uint64]uint64{}
	ctx := context.Background()
	var walk func(name string)
	walk = func(name string) {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(d.host(name), &st), "lstat %s", name)
		a, err := d.fsys.Stat(ctx, name)
		require.NoError(t, err, "stat %s", name)
		if host, ok := mntToHost[a.Ino]; ok {
			assert.Equal(t, host, st.Ino, "%s: the mount shares a number the host does not", name)
		}
		if mnt, ok := hostToMnt[st.Ino]; ok {
			assert.Equal(t, mnt, a.Ino, "%s: the host shares an inode the mount does not", name)
		}
		mntToHost[a.Ino], hostToMnt[st.Ino] = st.Ino, a.Ino
		hostType := mounts.FileModeOf(st.Mode).Type()
		require.Equal(t, hostType, a.Mode.Type(), "%s type", name)
		if name != "." {
			// Mode bits (setuid, setgid, sticky included) and
			// owners; the root is the test's temporary directory.
			assert.Equal(t, fmt.Sprintf("%04o %d:%d", st.Mode&0o7777, st.Uid, st.Gid),
				fmt.Sprintf("%04o %d:%d", mounts.UnixPerm(a.Mode), a.Uid, a.Gid), "%s mode and owner", name)
		}
		if hostType != fs.ModeSymlink {
			assert.Equal(t, hostXattrs(t, d.host(name)), mountXattrs(t, d.fsys, name), "%s xattrs", name)
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

// hostXattrs lists the user.* xattrs of path with their values.
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

// mountXattrs lists the xattrs of name on fsys with their values.
func mountXattrs(t *testing.T, fsys mounts.FS, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	names, err := mounts.ListXattr(ctx, fsys, name)
	require.NoError(t, err)
	out := map[string]string{}
	for _, attr := range names {
		v, err := mounts.GetXattr(ctx, fsys, name, attr)
		require.NoError(t, err)
		out[attr] = string(v)
	}
	return out
}
