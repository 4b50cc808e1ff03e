package mountstest_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// TestRunOSTempDir is the differential half of the suite: the expectations
// the round trips hold a mount to are those of a real Linux file system.
func TestRunOSTempDir(t *testing.T) {
	var opts []mountstest.Option
	if os.Geteuid() != 0 {
		opts = append(opts, mountstest.UnprivilegedChown())
	}
	if !userXattrs(t) {
		// Describes the directory; the suite then checks for ENOTSUP.
		opts = append(opts, mountstest.Caps(mounts.CapMutating&^mounts.CapSetXattr|mounts.CapStatFS))
	}
	mountstest.RunOS(t, t.TempDir(), opts...)
}

func userXattrs(t *testing.T) bool {
	p := filepath.Join(t.TempDir(), "probe")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	return unix.Setxattr(p, "user.probe", []byte("1"), 0) == nil
}

var fixtureFiles = map[string]string{
	"README.md":       "# fixture\n",
	"empty":           "",
	"src/main.go":     "package main\n",
	"src/lib/util.go": "package lib\n",
	"naïve café.txt":  "ünïcödé\n",
}

var fixtureLinks = map[string]string{
	"src/readme": "../README.md",
	"lib":        "src/lib",
}

// TestRunReadOnlyFake runs the suite against a pre-populated read-only map
// mount: the read side, the bad-name table and every missing-capability
// check (ErrReadOnly).
func TestRunReadOnlyFake(t *testing.T) {
	newFS := func(t *testing.T) mounts.FS { return newFake(fixtureFiles, fixtureLinks, "docs") }
	mountstest.Run(t, newFS,
		mountstest.Expect(fixtureFiles),
		mountstest.ExpectSymlinks(fixtureLinks),
		mountstest.ExpectDirs("docs"),
		mountstest.Caps(0))
}

// TestRunMkdirOnlyFake runs the suite against a writable mount that can only
// make directories: the read side seeds what it can, Mkdir round trips run,
// and every other mutating verb must be ErrNotSupported, not ErrReadOnly.
func TestRunMkdirOnlyFake(t *testing.T) {
	newFS := func(t *testing.T) mounts.FS { return mkdirFake{newFake(nil, nil)} }
	mountstest.Run(t, newFS, mountstest.Caps(mounts.CapMkdir))
}

// fake is a small map-backed mount, just enough of the contract to exercise
// the suite without a real mount package.
type fake struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode
	next  uint64
}

type fakeNode struct {
	mode   fs.FileMode
	data   string
	target string
	ino    uint64
	mtime  time.Time
}

func newFake(files, links map[string]string, dirs ...string) *fake {
	f := &fake{nodes: map[string]*fakeNode{}}
	f.add(".", &fakeNode{mode: fs.ModeDir | 0o755})
	mkparents := func(name string) {
		for dir, _ := mounts.Split(name); dir != "."; dir, _ = mounts.Split(dir) {
			if f.nodes[dir] == nil {
				f.add(dir, &fakeNode{mode: fs.ModeDir | 0o755})
			}
		}
	}
	for _, d := range dirs {
		mkparents(d + "/x")
	}
	for name, data := range files {
		mkparents(name)
		f.add(name, &fakeNode{mode: 0o644, data: data})
	}
	for name, target := range links {
		mkparents(name)
		f.add(name, &fakeNode{mode: fs.ModeSymlink | 0o777, target: target})
	}
	return f
}

func (f *fake) add(name string, n *fakeNode) {
	f.next++
	n.ino = f.next
	n.mtime = time.Unix(1_700_000_000, int64(f.next))
	f.nodes[name] = n
}

// lookup finds name, with ENOTDIR for a path through a non-directory.
func (f *fake) lookup(op, name string) (*fakeNode, error) {
	if err := mounts.CheckPath(op, name); err != nil {
		return nil, err
	}
	if name != "." {
		elems := strings.Split(name, "/")
		for i := 1; i < len(elems); i++ {
			n := f.nodes[strings.Join(elems[:i], "/")]
			if n == nil {
				return nil, mounts.PathErr(op, name, fs.ErrNotExist)
			}
			if !n.mode.IsDir() {
				return nil, mounts.PathErr(op, name, mounts.ErrNotDir)
			}
		}
	}
	n := f.nodes[name]
	if n == nil {
		return nil, mounts.PathErr(op, name, fs.ErrNotExist)
	}
	return n, nil
}

func (f *fake) Stat(_ context.Context, name string) (mounts.Attr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup("stat", name)
	if err != nil {
		return mounts.Attr{}, err
	}
	size := int64(len(n.data))
	if n.mode&fs.ModeSymlink != 0 {
		size = int64(len(n.target))
	}
	return mounts.Attr{Mode: n.mode, Size: size, Ino: n.ino, Nlink: 1, Mtime: n.mtime}, nil
}

func (f *fake) ReadDir(_ context.Context, name string) ([]mounts.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.mode.IsDir() {
		return nil, mounts.PathErr("readdir", name, mounts.ErrNotDir)
	}
	var out []mounts.DirEntry
	for child, cn := range f.nodes {
		if child != "." {
			if dir, base := mounts.Split(child); dir == name {
				out = append(out, mounts.DirEntry{Name: base, Type: cn.mode.Type(), Ino: cn.ino})
			}
		}
	}
	slices.SortFunc(out, func(a, b mounts.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *fake) Open(_ context.Context, name string) (mounts.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup("open", name)
	if err != nil {
		return nil, err
	}
	switch {
	case n.mode.IsDir():
		return nil, mounts.PathErr("open", name, mounts.ErrIsDir)
	case n.mode&fs.ModeSymlink != 0:
		return nil, mounts.PathErr("open", name, mounts.ErrLoop)
	}
	return &fakeFile{r: strings.NewReader(n.data), attr: mounts.Attr{Mode: n.mode, Size: int64(len(n.data)), Ino: n.ino, Nlink: 1, Mtime: n.mtime}}, nil
}

func (f *fake) ReadLink(_ context.Context, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup("readlink", name)
	if err != nil {
		return "", err
	}
	if n.mode&fs.ModeSymlink == 0 {
		return "", mounts.PathErr("readlink", name, fs.ErrInvalid)
	}
	return n.target, nil
}

type fakeFile struct {
	r    *strings.Reader
	attr mounts.Attr
}

func (ff *fakeFile) ReadAt(p []byte, off int64) (int, error) { return ff.r.ReadAt(p, off) }
func (ff *fakeFile) Stat() (mounts.Attr, error)              { return ff.attr, nil }
func (ff *fakeFile) Close() error                            { return nil }

var _ io.ReaderAt = (*fakeFile)(nil)

// mkdirFake is writable in exactly one way.
type mkdirFake struct{ *fake }

var _ mounts.MkdirFS = mkdirFake{}

func (m mkdirFake) Mkdir(_ context.Context, name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := mounts.CheckPath("mkdir", name); err != nil {
		return err
	}
	if _, err := m.lookup("mkdir", name); err == nil {
		return mounts.PathErr("mkdir", name, fs.ErrExist)
	}
	dir, _ := mounts.Split(name)
	parent, err := m.lookup("mkdir", dir)
	if err != nil {
		return mounts.PathErr("mkdir", name, unwrap(err))
	}
	if !parent.mode.IsDir() {
		return mounts.PathErr("mkdir", name, mounts.ErrNotDir)
	}
	m.add(name, &fakeNode{mode: fs.ModeDir | perm.Perm()})
	return nil
}

func unwrap(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
