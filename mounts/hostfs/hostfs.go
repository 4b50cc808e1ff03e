package hostfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// ErrBadSource is wrapped by Open's errors for a source that does not exist,
// is not a directory or cannot be read. The CLI turns it into exit code 2.
var ErrBadSource = errors.New("bad source")

// Options configure a host mount.
type Options struct {
	// ReadOnly omits every write capability: Open returns a *ReadOnlyFS.
	ReadOnly bool
	// Logger receives operational messages; nil is silent.
	Logger *slog.Logger
}

// ReadOnlyFS serves a host directory without any write capability. It is
// safe for concurrent use.
type ReadOnlyFS struct {
	root *os.Root
	// dir is the root directory itself, held open for the parent of
	// top-level names (the common case saves an openat and a close) and
	// for statfs.
	dir *os.File
	// conn reaches dir's descriptor without racing Close: a descriptor
	// number used after close could name another file by then.
	conn syscall.RawConn
	// dev is the device of the root: entries on it keep their inode numbers.
	dev uint64
	// escapes is the error os.Root returns for a name that would leave
	// the root. The os package does not export it; Open captures the
	// very value by asking the root for "..".
	escapes error
	// noOpenat2 is set once openat2(2) turned out to be missing.
	noOpenat2 atomic.Bool
	// euid and egid are the process's ids: new entries are given to the
	// caller only when running as root, and only if the caller differs.
	euid, egid int
	log        *slog.Logger
}

// FS serves a host directory with every write capability the host offers.
// It is safe for concurrent use. Its ReadOnlyFS field is a read-only view of
// the same directory.
type FS struct {
	*ReadOnlyFS
}

var (
	_ mounts.FS        = (*ReadOnlyFS)(nil)
	_ mounts.XattrFS   = (*ReadOnlyFS)(nil)
	_ mounts.StatFSer  = (*ReadOnlyFS)(nil)
	_ mounts.Describer = (*ReadOnlyFS)(nil)

	_ mounts.OpenFileFS = (*FS)(nil)
	_ mounts.TruncateFS = (*FS)(nil)
	_ mounts.MkdirFS    = (*FS)(nil)
	_ mounts.RemoveFS   = (*FS)(nil)
	_ mounts.RenameFS   = (*FS)(nil)
	_ mounts.SymlinkFS  = (*FS)(nil)
	_ mounts.MknodFS    = (*FS)(nil)
	_ mounts.LinkFS     = (*FS)(nil)
	_ mounts.ChmodFS    = (*FS)(nil)
	_ mounts.ChownFS    = (*FS)(nil)
	_ mounts.ChtimesFS  = (*FS)(nil)
	_ mounts.SetXattrFS = (*FS)(nil)
)

// Open serves dir. It returns a *FS, or a *ReadOnlyFS with opts.ReadOnly.
// A dir that does not exist, is not a directory or cannot be listed fails
// with an error wrapping ErrBadSource that names dir as given.
func Open(dir string, opts Options) (mounts.FS, error) {
	ro, err := open(dir, opts)
	if err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		return ro, nil
	}
	return &FS{ReadOnlyFS: ro}, nil
}

func open(dir string, opts Options) (*ReadOnlyFS, error) {
	bad := func(why string, err error) error {
		if err != nil {
			return fmt.Errorf("%w %q: %s: %w", ErrBadSource, dir, why, unwrapErrno(err))
		}
		return fmt.Errorf("%w %q: %s", ErrBadSource, dir, why)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, bad("does not exist", nil)
	case err != nil:
		return nil, bad("cannot stat", err)
	case !fi.IsDir():
		return nil, bad("is not a directory", nil)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, bad("cannot open", err)
	}
	d, err := root.OpenFile(".", os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		root.Close()
		return nil, bad("cannot open", err)
	}
	// Reading an entry proves the directory is readable by this process;
	// mode bits would say nothing for root, ACLs or LSM rules.
	if _, err := unix.Getdents(int(d.Fd()), make([]byte, 4096)); err != nil {
		d.Close()
		root.Close()
		return nil, bad("cannot be read", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		d.Close()
		root.Close()
		return nil, bad("cannot stat", err)
	}
	_, escapes := root.Lstat("..")
	escapes = unwrapErrno(escapes)
	if escapes == nil {
		// Cannot happen: os.Root documents that ".." is refused.
		d.Close()
		root.Close()
		return nil, bad("os.Root did not confine \"..\"", nil)
	}
	conn, err := d.SyscallConn()
	if err != nil {
		d.Close()
		root.Close()
		return nil, bad("cannot open", err)
	}
	f := &ReadOnlyFS{root: root, dir: d, conn: conn, dev: st.Dev, escapes: escapes,
		euid: os.Geteuid(), egid: os.Getegid()}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f.log = log
	log.Debug("host mount opened", "src", dir, "readonly", opts.ReadOnly)
	return f, nil
}

// Close releases the root; later calls fail with fs.ErrClosed. Files opened
// before stay usable until closed. Close is idempotent.
func (f *ReadOnlyFS) Close() error {
	f.dir.Close() // a second Close reports os.ErrClosed: nothing to tell
	return f.root.Close()
}

// Describe reports the mount type. The source is "host", never the path.
// A host directory is often a checkout whose .gitignore files describe
// its own build output, so searches honour them (IgnoreFiles).
func (f *ReadOnlyFS) Describe() mounts.Description {
	return mounts.Description{Type: "host", Source: "host", External: true, IgnoreFiles: true}
}

// unwrapErrno strips *fs.PathError, *os.LinkError and *os.SyscallError
// layers, whose text would carry host paths, down to the errno.
func unwrapErrno(err error) error {
	for {
		switch e := err.(type) {
		case *fs.PathError:
			err = e.Err
		case *os.LinkError:
			err = e.Err
		case *os.SyscallError:
			err = e.Err
		default:
			return err
		}
	}
}

// fail turns an error from os or unix into the mount's *fs.PathError.
func (f *ReadOnlyFS) fail(op, name string, err error) error {
	err = unwrapErrno(err)
	switch {
	case errors.Is(err, f.escapes):
		err = mounts.ErrEscapes
	case errors.Is(err, unix.EINVAL):
		// syscall.Errno does not match fs.ErrInvalid by itself, and
		// the contract promises it (readlink of a non-link, a
		// directory moved below itself).
		err = fs.ErrInvalid
	}
	return mounts.PathErr(op, name, err)
}

// inParent runs fn with a descriptor of the directory holding name, resolved
// inside the root, and name's final component. fn must not follow base if it
// is a symlink. For "." base is "." and dirfd is the root. Errors come back
// as the mount's *fs.PathError for op and name.
func (f *ReadOnlyFS) inParent(op, name string, fn func(dirfd int, base string) error) error {
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	err := f.withRoot(func(rootfd int) error {
		dirfd, base, release, err := f.parent(rootfd, name)
		if err != nil {
			return err
		}
		defer release()
		return fn(dirfd, base)
	})
	if err != nil {
		return f.fail(op, name, err)
	}
	return nil
}

// inParents is inParent for the two names of a rename or link. Errors name
// the first.
func (f *ReadOnlyFS) inParents(op, name1, name2 string, fn func(dir1 int, base1 string, dir2 int, base2 string) error) error {
	if err := mounts.CheckPath(op, name1); err != nil {
		return err
	}
	if err := mounts.CheckPath(op, name2); err != nil {
		return err
	}
	err := f.withRoot(func(rootfd int) error {
		dir1, base1, release1, err := f.parent(rootfd, name1)
		if err != nil {
			return err
		}
		defer release1()
		dir2, base2, release2, err := f.parent(rootfd, name2)
		if err != nil {
			return err
		}
		defer release2()
		return fn(dir1, base1, dir2, base2)
	})
	if err != nil {
		return f.fail(op, name1, err)
	}
	return nil
}

// withRoot runs fn with the root's descriptor, held open for the call.
// After Close it fails with fs.ErrClosed.
func (f *ReadOnlyFS) withRoot(fn func(rootfd int) error) error {
	var ferr error
	if err := f.conn.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return fs.ErrClosed
	}
	return ferr
}

// parent resolves the directory holding a checked name inside the root. The
// caller calls release when done with dirfd. Errors are raw.
//
// Where the kernel has openat2(2) (Linux 5.6), one call with RESOLVE_BENEATH
// and RESOLVE_NO_MAGICLINKS resolves the whole parent path, confined by the
// kernel: an escape fails with EXDEV, reported as mounts.ErrEscapes. Elsewhere,
// and when openat2 reports a concurrent rename it could not rule out
// (EAGAIN), os.Root walks the path one component at a time. The two agree:
// symlinks are followed while they stay below the root, absolute ones never.
func (f *ReadOnlyFS) parent(rootfd int, name string) (dirfd int, base string, release func(), err error) {
	dir, base := mounts.Split(name)
	if dir == "." {
		return rootfd, base, func() {}, nil
	}
	if !f.noOpenat2.Load() {
		fd, err := unix.Openat2(rootfd, dir, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		})
		switch {
		case err == nil:
			return fd, base, func() { unix.Close(fd) }, nil
		case errors.Is(err, unix.EXDEV):
			return -1, "", nil, mounts.ErrEscapes
		case errors.Is(err, unix.ENOSYS):
			f.noOpenat2.Store(true)
			f.log.Debug("openat2 unavailable; resolving with os.Root alone")
		case errors.Is(err, unix.EAGAIN):
		default:
			return -1, "", nil, err
		}
	}
	d, err := f.root.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", nil, err
	}
	return int(d.Fd()), base, func() { d.Close() }, nil
}

// ino folds a host (device, inode) pair into 56 bits; see the package doc.
func (f *ReadOnlyFS) ino(dev, ino uint64) uint64 {
	if dev == f.dev && ino < 1<<48 {
		return ino
	}
	h := fnv.New64a()
	var b [16]byte
	for i := range 8 {
		b[i] = byte(dev >> (8 * i))
		b[8+i] = byte(ino >> (8 * i))
	}
	h.Write(b[:])
	return h.Sum64()&(1<<55-1) | 1<<55
}

func (f *ReadOnlyFS) attr(st *unix.Stat_t) mounts.Attr {
	return mounts.Attr{
		Mode:   mounts.FileModeOf(st.Mode),
		Size:   st.Size,
		Ino:    f.ino(st.Dev, st.Ino),
		Nlink:  uint32(st.Nlink),
		Uid:    st.Uid,
		Gid:    st.Gid,
		Atime:  time.Unix(st.Atim.Unix()),
		Mtime:  time.Unix(st.Mtim.Unix()),
		Ctime:  time.Unix(st.Ctim.Unix()),
		Blocks: st.Blocks,
		Rdev:   uint32(st.Rdev),
	}
}

// Stat returns the attributes of name without following a final symlink.
func (f *ReadOnlyFS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	var st unix.Stat_t
	err := f.inParent("stat", name, func(dirfd int, base string) error {
		return unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return mounts.Attr{}, err
	}
	return f.attr(&st), nil
}

// ReadDir lists a directory, sorted by name. A symlink, even to a
// directory, is ErrNotDir: callers resolve links themselves.
func (f *ReadOnlyFS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	return f.readDirFlags(ctx, name, 0)
}

// ReadDirQuiet implements mounts.QuietReadFS: ReadDir, leaving the
// directory's access time as it was.
func (f *ReadOnlyFS) ReadDirQuiet(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	return f.readDirFlags(ctx, name, unix.O_NOATIME)
}

// OpenQuiet implements mounts.QuietReadFS: Open, leaving the file's
// access time as it was.
func (f *ReadOnlyFS) OpenQuiet(ctx context.Context, name string) (mounts.File, error) {
	fl, err := f.openFile(ctx, "open", name, os.O_RDONLY|unix.O_NOATIME, 0)
	if err != nil {
		return nil, err
	}
	return fl, nil
}

func (f *ReadOnlyFS) readDirFlags(ctx context.Context, name string, extra int) ([]mounts.DirEntry, error) {
	const op = "readdir"
	var out []mounts.DirEntry
	err := f.inParent(op, name, func(dirfd int, base string) error {
		fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|extra, 0)
		if errors.Is(err, unix.ELOOP) {
			err = unix.ENOTDIR
		}
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		out, err = readDir(ctx, fd)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b mounts.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// readDir reads a directory with getdents64(2). It does not use os.File's
// ReadDir: on a file system that reports DT_UNKNOWN, that one lstat's
// entries by a path built from the file's name, not relative to the
// descriptor; here such an entry is fstatat'ed relative to fd.
func readDir(ctx context.Context, fd int) ([]mounts.DirEntry, error) {
	var out []mounts.DirEntry
	buf := make([]byte, 32<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino u64, off s64, reclen u16,
			// type u8, name NUL-terminated.
			if len(b) < 19 {
				return nil, unix.EIO
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, unix.EIO
			}
			typ, rawName := b[18], b[19:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(rawName, 0); i >= 0 {
				rawName = rawName[:i]
			}
			name := string(rawName)
			if name == "." || name == ".." {
				continue
			}
			mode, ok := direntMode(typ)
			if !ok {
				var st unix.Stat_t
				if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					if errors.Is(err, unix.ENOENT) {
						continue // removed since the listing
					}
					return nil, err
				}
				mode = mounts.FileModeOf(st.Mode).Type()
			}
			out = append(out, mounts.DirEntry{Name: name, Type: mode})
		}
	}
}

// direntMode maps a d_type to type bits; ok is false for DT_UNKNOWN.
func direntMode(typ byte) (fs.FileMode, bool) {
	switch typ {
	case unix.DT_REG:
		return 0, true
	case unix.DT_DIR:
		return fs.ModeDir, true
	case unix.DT_LNK:
		return fs.ModeSymlink, true
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, true
	case unix.DT_SOCK:
		return fs.ModeSocket, true
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case unix.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}

// ReadLink returns the target of a symlink as stored.
func (f *ReadOnlyFS) ReadLink(ctx context.Context, name string) (string, error) {
	var target string
	err := f.inParent("readlink", name, func(dirfd int, base string) error {
		buf := make([]byte, 256)
		for {
			n, err := unix.Readlinkat(dirfd, base, buf)
			if err != nil {
				return err
			}
			if n < len(buf) {
				target = string(buf[:n])
				return nil
			}
			buf = make([]byte, 2*len(buf))
		}
	})
	return target, err
}

// Open opens a regular file for reading.
func (f *ReadOnlyFS) Open(ctx context.Context, name string) (mounts.File, error) {
	fl, err := f.openFile(ctx, "open", name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return fl, nil
}

// openFile opens name relative to its parent, never following a final
// symlink (ELOOP) and never blocking on a FIFO, and refuses anything but a
// regular file. A file it creates gets exactly perm (the caller applied its
// umask already) and the caller's owner (see chownNew).
func (f *ReadOnlyFS) openFile(ctx context.Context, op, name string, flag int, perm fs.FileMode) (*file, error) {
	const allowed = os.O_RDONLY | os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_EXCL |
		os.O_TRUNC | os.O_APPEND | os.O_SYNC | unix.O_DSYNC | unix.O_NOATIME
	if flag&^allowed != 0 {
		if err := mounts.CheckPath(op, name); err != nil {
			return nil, err
		}
		return nil, mounts.PathErr(op, name, fs.ErrInvalid)
	}
	var out *file
	err := f.inParent(op, name, func(dirfd int, base string) error {
		// Created without setuid and setgid: those come after the
		// file is given to its caller (see chownNew).
		fd, created, err := openat(dirfd, base, flag, mounts.UnixPerm(perm)&0o777)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			unix.Close(fd)
			return mounts.ErrIsDir
		default:
			// A FIFO, socket or device: O_NONBLOCK kept the open
			// from waiting for a writer; its content is the
			// kernel's, not a file's.
			unix.Close(fd)
			return mounts.ErrSpecial
		}
		if created {
			// Owner first: a chown clears setuid and setgid.
			if err := f.chownNew(ctx, dirfd, base); err != nil {
				unix.Close(fd)
				return err
			}
			if want := mounts.UnixPerm(perm); st.Mode&0o7777 != want {
				if err := unix.Fchmod(fd, want); err != nil {
					unix.Close(fd)
					return err
				}
			}
		}
		// O_NONBLOCK only guarded the open against FIFOs; a regular
		// file handed to the kernel for passthrough should not carry it.
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
			unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
		}
		out = &file{f: os.NewFile(uintptr(fd), name), fd: fd, name: name, fsys: f, created: created}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// openat opens base in dirfd. With O_CREATE but not O_EXCL it first tries an
// exclusive create, so it knows whether the file is new; the loop is bounded
// because another process may create and remove the name in between.
func openat(dirfd int, base string, flag int, perm uint32) (fd int, created bool, err error) {
	const always = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	if flag&os.O_CREATE == 0 {
		fd, err = unix.Openat(dirfd, base, flag|always, 0)
		return fd, false, err
	}
	if flag&os.O_EXCL != 0 {
		fd, err = unix.Openat(dirfd, base, flag|always, perm)
		return fd, err == nil, err
	}
	for range 8 {
		fd, err = unix.Openat(dirfd, base, flag|os.O_EXCL|always, perm)
		if err == nil {
			return fd, true, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return -1, false, err
		}
		fd, err = unix.Openat(dirfd, base, flag&^os.O_CREATE|always, 0)
		if !errors.Is(err, unix.ENOENT) {
			return fd, false, err
		}
	}
	return -1, false, err
}

// StatFS reports the usage of the host file system holding the root.
func (f *ReadOnlyFS) StatFS(ctx context.Context) (mounts.FSStat, error) {
	var st unix.Statfs_t
	if err := f.withRoot(func(rootfd int) error { return unix.Fstatfs(rootfd, &st) }); err != nil {
		return mounts.FSStat{}, f.fail("statfs", ".", err)
	}
	return mounts.FSStat{
		Bsize:   uint32(st.Bsize),
		Blocks:  st.Blocks,
		Bfree:   st.Bfree,
		Bavail:  st.Bavail,
		Files:   st.Files,
		Ffree:   st.Ffree,
		NameLen: uint32(st.Namelen),
	}, nil
}

var _ mounts.SyncFS = (*ReadOnlyFS)(nil)

// Sync fsyncs name on the host: a directory's entries or a file's data
// (fsync of a directory through the kernel face, which git, SQLite and
// rsync rely on). A symlink is not followed; there is nothing to sync.
func (f *ReadOnlyFS) Sync(ctx context.Context, name string) error {
	return f.inParent("sync", name, func(dirfd int, base string) error {
		fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ELOOP) {
			return nil
		}
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fsync(fd)
	})
}
