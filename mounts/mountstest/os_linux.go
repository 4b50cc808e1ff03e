package mountstest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// fullPOSIX is what RunOS assumes a directory offers unless told otherwise.
const fullPOSIX = mounts.CapMutating | mounts.CapXattr | mounts.CapStatFS

// RunOS runs the read side, the round trips and the missing-capability checks
// with system calls against dir: a FUSE mount point, so the suite runs
// through the kernel face, or a t.TempDir, which shows the expectations are
// those of Linux. By default dir is a full POSIX directory; [Caps] says what
// it offers otherwise (a read-only mount: Caps(0) plus [Expect]).
//
// A writable dir is used one subdirectory per subtest, created and left
// behind (the caller's cleanup removes dir); a read-only dir is only read.
func RunOS(t *testing.T, dir string, opts ...Option) {
	t.Helper()
	cfg := newConfig(opts)
	if cfg.dir != "." {
		t.Fatalf("At is for Run; RunOS checks the directory %s it is given", dir)
	}
	caps := fullPOSIX
	if cfg.capsSet {
		caps = cfg.caps
	}
	writable := caps&mounts.CapMutating != 0
	if writable && cfg.expectSet {
		t.Fatalf("Expect describes pre-populated read-only directories; %s is writable (%v)", dir, caps)
	}
	mask := processUmask(t)
	var seq atomic.Int64
	fresh := func(t *testing.T) target {
		if !writable {
			return &osTarget{root: dir, mask: mask}
		}
		root := filepath.Join(dir, fmt.Sprintf("%03d-%s", seq.Add(1), sanitize(t.Name())))
		require.NoError(t, os.Mkdir(root, 0o755), "create the subtest's directory")
		return &osTarget{root: root, mask: mask}
	}
	runAll(t, cfg, caps, &osTarget{root: dir, mask: mask}, fresh, false)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// processUmask reads the umask without changing it (umask(2) is process-wide
// and would race with other tests).
func processUmask(t *testing.T) fs.FileMode {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err, "read the umask")
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			require.NoError(t, err, "parse the umask")
			return fs.FileMode(m)
		}
	}
	t.Fatal("no Umask line in /proc/self/status")
	return 0
}

// osTarget drives a directory with system calls. Calls that must not follow
// a final symlink use the l* variants, as the contract's verbs do.
type osTarget struct {
	root string
	mask fs.FileMode
}

func (x *osTarget) path(name string) string {
	if name == "." {
		return x.root
	}
	return filepath.Join(x.root, filepath.FromSlash(name))
}

func (x *osTarget) ioFS() fs.FS        { return os.DirFS(x.root) }
func (x *osTarget) umask() fs.FileMode { return x.mask }

func (x *osTarget) checkShape(t *testing.T, err error, names ...string) {
	// The os package's errors carry host paths and come as *fs.PathError,
	// *os.LinkError or *os.SyscallError; only the errno is comparable.
}

func (x *osTarget) stat(name string) (mounts.Attr, error) {
	fi, err := os.Lstat(x.path(name))
	if err != nil {
		return mounts.Attr{}, err
	}
	return attrOf(fi), nil
}

func attrOf(fi fs.FileInfo) mounts.Attr {
	st := fi.Sys().(*syscall.Stat_t)
	return mounts.Attr{
		Mode:   fi.Mode(),
		Size:   st.Size,
		Ino:    st.Ino,
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

func (x *osTarget) readDir(name string) ([]mounts.DirEntry, error) {
	ents, err := os.ReadDir(x.path(name)) // sorted by name
	if err != nil {
		return nil, err
	}
	out := make([]mounts.DirEntry, len(ents))
	for i, e := range ents {
		out[i] = mounts.DirEntry{Name: e.Name(), Type: e.Type()}
	}
	return out, nil
}

func (x *osTarget) readFile(name string) ([]byte, error) { return os.ReadFile(x.path(name)) }
func (x *osTarget) readLink(name string) (string, error) { return os.Readlink(x.path(name)) }

func (x *osTarget) openFile(name string, flag int, perm fs.FileMode) (handle, error) {
	f, err := os.OpenFile(x.path(name), flag, perm)
	if err != nil {
		return nil, err
	}
	return osHandle{f}, nil
}

func (x *osTarget) truncate(name string, size int64) error { return os.Truncate(x.path(name), size) }
func (x *osTarget) mkdir(name string, perm fs.FileMode) error {
	return os.Mkdir(x.path(name), perm)
}

// unlink and rmdir are the system calls themselves: os.Remove tries both.
func (x *osTarget) unlink(name string) error {
	return pathErr("unlink", name, syscall.Unlink(x.path(name)))
}
func (x *osTarget) rmdir(name string) error {
	return pathErr("rmdir", name, syscall.Rmdir(x.path(name)))
}

func (x *osTarget) rename(oldname, newname string, flags mounts.RenameFlags) error {
	var f uint
	if flags&mounts.RenameNoReplace != 0 {
		f |= unix.RENAME_NOREPLACE
	}
	if flags&mounts.RenameExchange != 0 {
		f |= unix.RENAME_EXCHANGE
	}
	err := unix.Renameat2(unix.AT_FDCWD, x.path(oldname), unix.AT_FDCWD, x.path(newname), f)
	return pathErr("rename", oldname, err)
}

func (x *osTarget) symlink(target, name string) error { return os.Symlink(target, x.path(name)) }
func (x *osTarget) mknod(name string, mode fs.FileMode, dev uint32) error {
	return pathErr("mknod", name, unix.Mknod(x.path(name), mounts.TypeBits(mode)|mounts.UnixPerm(mode), int(dev)))
}
func (x *osTarget) mayCreateDevice() bool { return os.Geteuid() == 0 }
func (x *osTarget) link(oldname, newname string) error {
	return os.Link(x.path(oldname), x.path(newname))
}
func (x *osTarget) chmod(name string, mode fs.FileMode) error { return os.Chmod(x.path(name), mode) }
func (x *osTarget) chown(name string, uid, gid int) error {
	return os.Lchown(x.path(name), uid, gid)
}

func (x *osTarget) chtimes(name string, atime, mtime time.Time) error {
	ts := []unix.Timespec{timespec(atime), timespec(mtime)}
	err := unix.UtimesNanoAt(unix.AT_FDCWD, x.path(name), ts, unix.AT_SYMLINK_NOFOLLOW)
	return pathErr("chtimes", name, err)
}

// timespec maps the contract's "zero time leaves it unchanged" to UTIME_OMIT.
func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(t.UnixNano())
}

func (x *osTarget) getXattr(name, attr string) ([]byte, error) {
	p := x.path(name)
	for {
		sz, err := unix.Lgetxattr(p, attr, nil)
		if err != nil {
			return nil, pathErr("getxattr", name, err)
		}
		buf := make([]byte, sz)
		n, err := unix.Lgetxattr(p, attr, buf)
		if err == unix.ERANGE { // grew in between
			continue
		}
		if err != nil {
			return nil, pathErr("getxattr", name, err)
		}
		return buf[:n], nil
	}
}

func (x *osTarget) listXattr(name string) ([]string, error) {
	p := x.path(name)
	sz, err := unix.Llistxattr(p, nil)
	if err != nil {
		return nil, pathErr("listxattr", name, err)
	}
	buf := make([]byte, sz)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return nil, pathErr("listxattr", name, err)
	}
	var out []string
	for s := range strings.SplitSeq(string(buf[:n]), "\x00") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

func (x *osTarget) setXattr(name, attr string, data []byte, flags int) error {
	return pathErr("setxattr", name, unix.Lsetxattr(x.path(name), attr, data, flags))
}

func (x *osTarget) removeXattr(name, attr string) error {
	return pathErr("removexattr", name, unix.Lremovexattr(x.path(name), attr))
}

func (x *osTarget) statFS() (mounts.FSStat, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(x.root, &st); err != nil {
		return mounts.FSStat{}, pathErr("statfs", ".", err)
	}
	return mounts.FSStat{
		Bsize: uint32(st.Bsize), Blocks: st.Blocks, Bfree: st.Bfree, Bavail: st.Bavail,
		Files: st.Files, Ffree: st.Ffree, NameLen: uint32(st.Namelen),
	}, nil
}

// pathErr wraps a raw errno, keeping nil nil.
func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return mounts.PathErr(op, name, err)
}

// osHandle writes with pwrite(2) directly: os.File.WriteAt refuses files
// opened with O_APPEND, while Linux appends whatever the offset, which is
// what the contract's WritableFile promises too.
type osHandle struct{ f *os.File }

func (h osHandle) ReadAt(p []byte, off int64) (int, error) { return h.f.ReadAt(p, off) }
func (h osHandle) WriteAt(p []byte, off int64) (int, error) {
	var done int
	for done < len(p) {
		n, err := unix.Pwrite(int(h.f.Fd()), p[done:], off+int64(done))
		if err != nil {
			return done, pathErr("write", h.f.Name(), err)
		}
		if n == 0 {
			return done, io.ErrShortWrite
		}
		done += n
	}
	return done, nil
}
func (h osHandle) Truncate(size int64) error { return h.f.Truncate(size) }
func (h osHandle) Stat() (mounts.Attr, error) {
	fi, err := h.f.Stat()
	if err != nil {
		return mounts.Attr{}, err
	}
	return attrOf(fi), nil
}
func (h osHandle) Close() error { return h.f.Close() }
