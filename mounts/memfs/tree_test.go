package memfs_test

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

func TestMkdir(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		wantErr error
	}{
		{"top", "n", nil},
		{"nested", "d/n", nil},
		{"existing dir", "d", fs.ErrExist},
		{"existing file", "f", fs.ErrExist},
		{"existing symlink", "l", fs.ErrExist},
		{"root", ".", fs.ErrExist},
		{"missing parent", "x/n", fs.ErrNotExist},
		{"below file", "f/n", mounts.ErrNotDir},
		{"below symlink", "l/n", mounts.ErrNotDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, _ := newFS(t, memfs.Options{})
			build(t, fsys, "f", "d/", "l->d")
			parent, _ := mounts.Split(tt.dir)
			before := stat(t, fsys, ".")
			err := fsys.Mkdir(context.Background(), tt.dir, 0o750)
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.dir, tt.wantErr)
				assert.Equal(t, before, stat(t, fsys, "."), "root unchanged")
				return
			}
			require.NoError(t, err)
			a := stat(t, fsys, tt.dir)
			assert.Equal(t, fs.ModeDir|0o750, a.Mode)
			assert.Equal(t, uint32(2), a.Nlink)
			p := stat(t, fsys, parent)
			assert.Equal(t, a.Mtime, p.Mtime, "parent mtime stamped")
			assert.Equal(t, a.Mtime, p.Ctime, "parent ctime stamped")
		})
	}
}

func TestDirNlink(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	build(t, fsys, "a/", "a/b/", "a/c/", "a/f", "a/l->f")
	assert.Equal(t, uint32(3), stat(t, fsys, ".").Nlink, "root: 2 + a")
	assert.Equal(t, uint32(4), stat(t, fsys, "a").Nlink, "a: 2 + b + c; files do not count")
	require.NoError(t, fsys.Rmdir(ctx, "a/b"))
	assert.Equal(t, uint32(3), stat(t, fsys, "a").Nlink)
	require.NoError(t, fsys.Rename(ctx, "a/c", "c", 0))
	assert.Equal(t, uint32(2), stat(t, fsys, "a").Nlink)
	assert.Equal(t, uint32(4), stat(t, fsys, ".").Nlink)
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name    string
		rmdir   bool
		target  string
		wantErr error
	}{
		{"unlink file", false, "f", nil},
		{"unlink symlink", false, "l", nil},
		{"unlink nested", false, "d/g", nil},
		{"unlink dir", false, "e", mounts.ErrIsDir},
		{"unlink root", false, ".", mounts.ErrBusy},
		{"unlink missing", false, "x", fs.ErrNotExist},
		{"unlink below file", false, "f/x", mounts.ErrNotDir},
		{"rmdir empty", true, "e", nil},
		{"rmdir non-empty", true, "d", mounts.ErrNotEmpty},
		{"rmdir file", true, "f", mounts.ErrNotDir},
		{"rmdir symlink to dir", true, "ld", mounts.ErrNotDir},
		{"rmdir root", true, ".", mounts.ErrBusy},
		{"rmdir missing", true, "x", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			fsys, _ := newFS(t, memfs.Options{})
			build(t, fsys, "f", "l->f", "d/", "d/g", "e/", "ld->e")
			var err error
			if tt.rmdir {
				err = fsys.Rmdir(ctx, tt.target)
			} else {
				err = fsys.Unlink(ctx, tt.target)
			}
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.target, tt.wantErr)
				if tt.target != "x" && tt.target != "f/x" {
					assert.True(t, exists(fsys, tt.target), "%s still there", tt.target)
				}
				return
			}
			require.NoError(t, err)
			assert.False(t, exists(fsys, tt.target), "%s gone", tt.target)
		})
	}
}

func TestUnlinkWhileOpen(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	w := openW(t, fsys, "f", os.O_RDWR|os.O_CREATE)
	_, err := w.WriteAt([]byte("still here"), 0)
	require.NoError(t, err)
	r, err := fsys.Open(ctx, "f")
	require.NoError(t, err)
	used := func() uint64 {
		st, err := fsys.StatFS(ctx)
		require.NoError(t, err)
		return st.Files - st.Ffree
	}
	require.Equal(t, uint64(1), used())

	require.NoError(t, fsys.Unlink(ctx, "f"))
	assert.False(t, exists(fsys, "f"))
	a, err := w.Stat()
	require.NoError(t, err, "fstat after unlink")
	assert.Equal(t, uint32(0), a.Nlink)

	// The orphan still reads and writes, and a new file of the same name
	// is another file.
	_, err = w.WriteAt([]byte("!"), 10)
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", []byte("new"), 0o644))
	buf := make([]byte, 11)
	n, err := r.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "still here!", string(buf[:n]))
	assert.Equal(t, "new", readFile(t, fsys, "f"))
	assert.Equal(t, uint64(2), used(), "the orphan still counts")

	require.NoError(t, w.Close())
	assert.Equal(t, uint64(2), used(), "one handle left")
	n, err = r.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "still here!", string(buf[:n]))
	require.NoError(t, r.Close())
	assert.Equal(t, uint64(1), used(), "last close frees the orphan")
}

func TestRenameOverOpenFile(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	build(t, fsys, "old", "new")
	r, err := fsys.Open(ctx, "new")
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, fsys.Rename(ctx, "old", "new", 0))
	assert.Equal(t, "old", readFile(t, fsys, "new"))
	buf := make([]byte, 3)
	_, err = r.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "new", string(buf), "the replaced file lives on in its handle")
}

func TestRename(t *testing.T) {
	// Tree: f, g, d/ (with d/x), e/ (empty), l->f, h (hard link of f).
	tests := []struct {
		name     string
		old, new string
		flags    mounts.RenameFlags
		errPath  string
		wantErr  error
		check    func(t *testing.T, fsys mounts.FS)
	}{
		{name: "file to new name", old: "f", new: "n", check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "f", readFile(t, fsys, "n"))
			assert.False(t, exists(fsys, "f"))
		}},
		{name: "file over file", old: "f", new: "g", check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "f", readFile(t, fsys, "g"))
			assert.False(t, exists(fsys, "f"))
		}},
		{name: "file into dir", old: "g", new: "d/g", check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "g", readFile(t, fsys, "d/g"))
		}},
		{name: "dir to new name", old: "d", new: "e/d2", check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "d/x", readFile(t, fsys, "e/d2/x"))
			assert.Equal(t, uint32(3), stat(t, fsys, "e").Nlink)
		}},
		{name: "dir over empty dir", old: "d", new: "e", check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "d/x", readFile(t, fsys, "e/x"))
			assert.False(t, exists(fsys, "d"))
			assert.Equal(t, uint32(3), stat(t, fsys, ".").Nlink, "root: 2 + e")
		}},
		{name: "symlink", old: "l", new: "d/l", check: func(t *testing.T, fsys mounts.FS) {
			target, err := fsys.ReadLink(context.Background(), "d/l")
			require.NoError(t, err)
			assert.Equal(t, "f", target)
		}},
		{name: "same name", old: "f", new: "f", check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "f", readFile(t, fsys, "f"))
		}},
		{name: "onto own hard link does nothing", old: "f", new: "h", check: func(t *testing.T, fsys mounts.FS) {
			assert.True(t, exists(fsys, "f"), "POSIX: both names stay")
			assert.Equal(t, uint32(2), stat(t, fsys, "h").Nlink)
		}},
		{name: "over a hard link of another file", old: "g", new: "h", check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "g", readFile(t, fsys, "h"))
			assert.Equal(t, uint32(1), stat(t, fsys, "f").Nlink, "f lost its second name")
		}},
		{name: "no-replace to free name", old: "f", new: "n", flags: mounts.RenameNoReplace, check: func(t *testing.T, fsys mounts.FS) {
			assert.True(t, exists(fsys, "n"))
		}},
		{name: "no-replace existing", old: "f", new: "g", flags: mounts.RenameNoReplace, errPath: "g", wantErr: fs.ErrExist},
		{name: "no-replace same name", old: "f", new: "f", flags: mounts.RenameNoReplace, errPath: "f", wantErr: fs.ErrExist},
		{name: "dir over file", old: "e", new: "f", errPath: "f", wantErr: mounts.ErrNotDir},
		{name: "file over dir", old: "f", new: "e", errPath: "e", wantErr: mounts.ErrIsDir},
		{name: "dir over non-empty dir", old: "e", new: "d", errPath: "d", wantErr: mounts.ErrNotEmpty},
		{name: "dir into itself", old: "d", new: "d/sub", errPath: "d", wantErr: fs.ErrInvalid},
		{name: "file over its own parent", old: "d/x", new: "d", errPath: "d", wantErr: mounts.ErrNotEmpty},
		{name: "missing source", old: "zz", new: "n", errPath: "zz", wantErr: fs.ErrNotExist},
		{name: "missing target parent", old: "f", new: "zz/n", errPath: "zz/n", wantErr: fs.ErrNotExist},
		{name: "target parent is a file", old: "f", new: "g/n", errPath: "g/n", wantErr: mounts.ErrNotDir},
		{name: "source below symlink", old: "l/x", new: "n", errPath: "l/x", wantErr: mounts.ErrNotDir},
		{name: "root as source", old: ".", new: "n", errPath: ".", wantErr: mounts.ErrBusy},
		{name: "root as target", old: "f", new: ".", errPath: ".", wantErr: mounts.ErrBusy},
		{name: "both flags", old: "f", new: "g", flags: mounts.RenameNoReplace | mounts.RenameExchange, errPath: "f", wantErr: fs.ErrInvalid},
		{name: "unknown flag", old: "f", new: "g", flags: 1 << 5, errPath: "f", wantErr: fs.ErrInvalid},
		{name: "exchange files", old: "f", new: "g", flags: mounts.RenameExchange, check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "g", readFile(t, fsys, "f"))
			assert.Equal(t, "f", readFile(t, fsys, "g"))
		}},
		{name: "exchange file and dir across parents", old: "d/x", new: "e", flags: mounts.RenameExchange, check: func(t *testing.T, fsys mounts.FS) {
			assert.Equal(t, "d/x", readFile(t, fsys, "e"))
			assert.True(t, stat(t, fsys, "d/x").IsDir())
			assert.Equal(t, uint32(3), stat(t, fsys, "d").Nlink, "d gained a subdirectory")
			assert.Equal(t, uint32(3), stat(t, fsys, ".").Nlink, "root lost e as a directory")
		}},
		{name: "exchange missing target", old: "f", new: "n", flags: mounts.RenameExchange, errPath: "n", wantErr: fs.ErrNotExist},
		{name: "exchange with own descendant", old: "d", new: "d/x", flags: mounts.RenameExchange, errPath: "d", wantErr: fs.ErrInvalid},
		{name: "exchange with own ancestor", old: "d/x", new: "d", flags: mounts.RenameExchange, errPath: "d/x", wantErr: fs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			fsys, _ := newFS(t, memfs.Options{})
			build(t, fsys, "f", "g", "d/", "d/x", "e/", "l->f")
			require.NoError(t, fsys.Link(ctx, "f", "h"))
			err := fsys.Rename(ctx, tt.old, tt.new, tt.flags)
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.errPath, tt.wantErr)
				assert.Equal(t, "f", readFile(t, fsys, "f"), "nothing moved")
				assert.Equal(t, "d/x", readFile(t, fsys, "d/x"), "nothing moved")
				return
			}
			require.NoError(t, err)
			tt.check(t, fsys)
		})
	}
}

func TestRenameKeepsInoAndStampsTimes(t *testing.T) {
	ctx := context.Background()
	fsys, c := newFS(t, memfs.Options{})
	build(t, fsys, "a/", "b/", "a/f")
	ino := stat(t, fsys, "a/f").Ino
	mtime := stat(t, fsys, "a/f").Mtime
	require.NoError(t, fsys.Rename(ctx, "a/f", "b/f", 0))
	now := c.last()
	f := stat(t, fsys, "b/f")
	assert.Equal(t, ino, f.Ino)
	assert.Equal(t, mtime, f.Mtime, "rename is no content change")
	assert.Equal(t, now, f.Ctime)
	for _, dir := range []string{"a", "b"} {
		a := stat(t, fsys, dir)
		assert.Equal(t, now, a.Mtime, "%s mtime", dir)
		assert.Equal(t, now, a.Ctime, "%s ctime", dir)
	}
}

func TestLink(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	build(t, fsys, "f", "d/", "l->f")
	require.NoError(t, fsys.Link(ctx, "f", "d/h"))
	require.NoError(t, fsys.Link(ctx, "d/h", "h2"))
	f, h := stat(t, fsys, "f"), stat(t, fsys, "d/h")
	assert.Equal(t, f.Ino, h.Ino, "hard links share the inode")
	assert.Equal(t, uint32(3), f.Nlink)
	assert.Equal(t, f, h)

	require.NoError(t, mounts.WriteFile(ctx, fsys, "h2", []byte("via h2"), 0))
	assert.Equal(t, "via h2", readFile(t, fsys, "f"), "one content")
	require.NoError(t, fsys.Unlink(ctx, "f"))
	assert.Equal(t, uint32(2), stat(t, fsys, "d/h").Nlink)
	require.NoError(t, fsys.Link(ctx, "l", "l2"))
	assert.Equal(t, uint32(2), stat(t, fsys, "l2").Nlink, "a symlink links itself")

	tests := []struct {
		name, old, new, errPath string
		want                    error
	}{
		{"dir", "d", "d2", "d", fs.ErrPermission},
		{"root", ".", "r", ".", fs.ErrPermission},
		{"existing target", "h2", "d/h", "d/h", fs.ErrExist},
		{"target root", "h2", ".", ".", fs.ErrExist},
		{"missing source", "zz", "n", "zz", fs.ErrNotExist},
		{"missing target parent", "h2", "zz/n", "zz/n", fs.ErrNotExist},
		{"target below file", "h2", "h2/n", "h2/n", mounts.ErrNotDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertPathErr(t, fsys.Link(ctx, tt.old, tt.new), tt.errPath, tt.want)
		})
	}
	assert.Equal(t, uint32(2), stat(t, fsys, "h2").Nlink, "failed links changed nothing")
}

func TestSymlink(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, target, link string
		want               error
	}{
		{"relative", "../x/y", "l", nil},
		{"absolute kept verbatim", "/etc/passwd", "abs", nil},
		{"dangling", "nowhere", "d/l", nil},
		{"existing", "x", "f", fs.ErrExist},
		{"root", "x", ".", fs.ErrExist},
		{"empty target", "", "e", fs.ErrInvalid},
		{"NUL in target", "a\x00b", "e", fs.ErrInvalid},
		{"target too long", strings.Repeat("a", 4096), "e", mounts.ErrNameTooLong},
		{"missing parent", "x", "zz/l", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, _ := newFS(t, memfs.Options{})
			build(t, fsys, "f", "d/")
			err := fsys.Symlink(ctx, tt.target, tt.link)
			if tt.want != nil {
				assertPathErr(t, err, tt.link, tt.want)
				return
			}
			require.NoError(t, err)
			got, err := fsys.ReadLink(ctx, tt.link)
			require.NoError(t, err)
			assert.Equal(t, tt.target, got)
			a := stat(t, fsys, tt.link)
			assert.Equal(t, fs.ModeSymlink|fs.ModePerm, a.Mode)
			assert.Equal(t, int64(len(tt.target)), a.Size)
		})
	}
}

func TestInoUniqueAndStable(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	build(t, fsys, "a", "b/", "b/c", "l->a")
	seen := map[uint64]string{}
	for _, name := range []string{".", "a", "b", "b/c", "l"} {
		ino := stat(t, fsys, name).Ino
		assert.NotZero(t, ino)
		if other, dup := seen[ino]; dup {
			t.Errorf("%s and %s share ino %d", name, other, ino)
		}
		seen[ino] = name
	}
	ino := stat(t, fsys, "a").Ino
	require.NoError(t, fsys.Unlink(ctx, "a"))
	build(t, fsys, "a")
	assert.NotEqual(t, ino, stat(t, fsys, "a").Ino, "a new file gets a new number")
}

func TestInvalidNames(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	build(t, fsys, "f")
	long := strings.Repeat("x", 256)
	bad := []struct {
		name string
		want error
	}{
		{"/abs", fs.ErrInvalid}, {"a//b", fs.ErrInvalid}, {"a/../b", fs.ErrInvalid},
		{"..", fs.ErrInvalid}, {"./a", fs.ErrInvalid}, {"a/", fs.ErrInvalid},
		{"", fs.ErrInvalid}, {"a\x00b", fs.ErrInvalid}, {"a\nb", fs.ErrInvalid},
		{long, mounts.ErrNameTooLong}, {"d/" + long, mounts.ErrNameTooLong},
	}
	calls := map[string]func(name string) error{
		"stat":     func(n string) error { _, err := fsys.Stat(ctx, n); return err },
		"readdir":  func(n string) error { _, err := fsys.ReadDir(ctx, n); return err },
		"open":     func(n string) error { _, err := fsys.Open(ctx, n); return err },
		"readlink": func(n string) error { _, err := fsys.ReadLink(ctx, n); return err },
		"create": func(n string) error {
			_, err := fsys.OpenFile(ctx, n, os.O_WRONLY|os.O_CREATE, 0o644)
			return err
		},
		"truncate":    func(n string) error { return fsys.Truncate(ctx, n, 0) },
		"mkdir":       func(n string) error { return fsys.Mkdir(ctx, n, 0o755) },
		"unlink":      func(n string) error { return fsys.Unlink(ctx, n) },
		"rmdir":       func(n string) error { return fsys.Rmdir(ctx, n) },
		"rename from": func(n string) error { return fsys.Rename(ctx, n, "g", 0) },
		"rename to":   func(n string) error { return fsys.Rename(ctx, "f", n, 0) },
		"symlink":     func(n string) error { return fsys.Symlink(ctx, "f", n) },
		"link from":   func(n string) error { return fsys.Link(ctx, n, "g") },
		"link to":     func(n string) error { return fsys.Link(ctx, "f", n) },
		"chmod":       func(n string) error { return fsys.Chmod(ctx, n, 0o600) },
		"chown":       func(n string) error { return fsys.Chown(ctx, n, 1, 1) },
		"chtimes":     func(n string) error { return fsys.Chtimes(ctx, n, epoch, epoch) },
		"getxattr":    func(n string) error { _, err := fsys.GetXattr(ctx, n, "user.a"); return err },
		"listxattr":   func(n string) error { _, err := fsys.ListXattr(ctx, n); return err },
		"setxattr":    func(n string) error { return fsys.SetXattr(ctx, n, "user.a", nil, 0) },
		"removexattr": func(n string) error { return fsys.RemoveXattr(ctx, n, "user.a") },
	}
	for op, call := range calls {
		for _, b := range bad {
			t.Run(op+"/"+strings.ToValidUTF8(b.name[:min(len(b.name), 10)], "?"), func(t *testing.T) {
				assertPathErr(t, call(b.name), b.name, b.want)
			})
		}
	}
	ents, err := fsys.ReadDir(ctx, ".")
	require.NoError(t, err)
	assert.Len(t, ents, 1, "nothing was created")
	assert.Equal(t, "f", readFile(t, fsys, "f"), "nothing changed")
}
