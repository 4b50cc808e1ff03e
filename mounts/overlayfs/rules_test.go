package overlayfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// ruleFiles is the lower of the rule tests: a git commit.
var ruleFiles = map[string]string{
	"README.md":       "readme\n",
	"a.txt":           "lower a\n",
	"b.txt":           "lower b\n",
	"dir1/f.txt":      "dir1 f\n",
	"dir1/sub/g.txt":  "dir1 sub g\n",
	"dir1/sub/h.txt":  "dir1 sub h\n",
	"full/one.txt":    "one\n",
	"full/two/3.txt":  "three\n",
	"bin/run.sh":      "#!/bin/sh\n",
	"deep/a/b/c/d.go": "package d\n",
}

var ruleLinks = map[string]string{"link": "a.txt"}

var (
	ruleOnce sync.Once
	ruleRoot string // removed by TestMain
	ruleDir  string
)

// ruleLower is a git mount of the rule tests' commit, built once.
func ruleLower(t *testing.T) mounts.FS {
	t.Helper()
	ruleOnce.Do(func() {
		root, err := os.MkdirTemp("", "overlayfs-rules-")
		require.NoError(t, err)
		ruleRoot = root
		ruleDir = gitRepoAt(t, filepath.Join(root, "repo"), ruleFiles, ruleLinks)
	})
	require.NotEmpty(t, ruleDir, "the rule tests' repository failed to build earlier")
	return gitLower(t, ruleDir)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if ruleRoot != "" {
		os.RemoveAll(ruleRoot)
	}
	os.Exit(code)
}

func stat(t *testing.T, fsys mounts.FS, name string) mounts.Attr {
	t.Helper()
	a, err := fsys.Stat(bg, name)
	require.NoError(t, err, "stat %s", name)
	return a
}

func read(t *testing.T, fsys mounts.FS, name string) string {
	t.Helper()
	b, err := mounts.ReadFile(bg, fsys, name)
	require.NoError(t, err, "read %s", name)
	return string(b)
}

func names(t *testing.T, fsys mounts.FS, dir string) []string {
	t.Helper()
	ents, err := fsys.ReadDir(bg, dir)
	require.NoError(t, err, "readdir %s", dir)
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name
	}
	return out
}

// TestReadsCopyNothing: stat, read, listing, readlink, xattrs and a walk
// with attributes leave the upper as it was made.
func TestReadsCopyNothing(t *testing.T) {
	o, upper := newOverlay(t, ruleLower(t))
	before := tree(t, upper, true)
	got := tree(t, o, true)
	require.Len(t, got, len(ruleFiles)+len(ruleLinks)+9, "the whole lower shows: files, links, 9 directories")
	for name := range ruleFiles {
		f, err := o.Open(bg, name)
		require.NoError(t, err)
		buf := make([]byte, 4)
		_, _ = f.ReadAt(buf, 0)
		require.NoError(t, f.Close())
		_, err = o.ListXattr(bg, name)
		require.NoError(t, err)
		_, err = o.GetXattr(bg, name, "user.git.oid")
		require.NoError(t, err, "the lower's own attributes show on untouched entries")
	}
	_, _, err := o.StatDir(bg, "dir1")
	require.NoError(t, err)
	assert.Equal(t, "a.txt", must(o.ReadLink(bg, "link")))
	assert.Empty(t, upperNames(t, upper), "nothing was copied up")
	assert.Equal(t, before, tree(t, upper, true), "the upper is unchanged")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCopyUp: a change copies the whole file up, with its attributes and
// its inode number, and the directories above it (empty but for it).
func TestCopyUp(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, o mounts.FS)
		check  func(t *testing.T, o mounts.FS)
	}{
		{"write", func(t *testing.T, o mounts.FS) {
			f, err := mounts.OpenFile(bg, o, "dir1/sub/g.txt", os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.(mounts.WritableFile).WriteAt([]byte("D"), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, func(t *testing.T, o mounts.FS) {
			assert.Equal(t, "Dir1 sub g\n", read(t, o, "dir1/sub/g.txt"))
		}},
		{"truncate", func(t *testing.T, o mounts.FS) {
			require.NoError(t, mounts.Truncate(bg, o, "dir1/sub/g.txt", 3))
		}, func(t *testing.T, o mounts.FS) {
			assert.Equal(t, "dir", read(t, o, "dir1/sub/g.txt"))
		}},
		{"chmod", func(t *testing.T, o mounts.FS) {
			require.NoError(t, mounts.Chmod(bg, o, "dir1/sub/g.txt", 0o600))
		}, func(t *testing.T, o mounts.FS) {
			assert.Equal(t, fs.FileMode(0o600), stat(t, o, "dir1/sub/g.txt").Mode)
			assert.Equal(t, "dir1 sub g\n", read(t, o, "dir1/sub/g.txt"))
		}},
		{"setxattr", func(t *testing.T, o mounts.FS) {
			require.NoError(t, mounts.SetXattr(bg, o, "dir1/sub/g.txt", "user.k", []byte("v"), 0))
		}, func(t *testing.T, o mounts.FS) {
			assert.Equal(t, []string{"user.k"}, must(mounts.ListXattr(bg, o, "dir1/sub/g.txt")),
				"the lower's own attributes are not copied up; the overlay's are hidden")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, upper := newOverlay(t, ruleLower(t))
			before := stat(t, o, "dir1/sub/g.txt")
			dirIno := stat(t, o, "dir1").Ino
			tt.change(t, o)
			tt.check(t, o)
			after := stat(t, o, "dir1/sub/g.txt")
			assert.Equal(t, before.Ino, after.Ino, "the inode number survives the copy-up")
			assert.Equal(t, dirIno, stat(t, o, "dir1").Ino, "so does the parent's")
			assert.Equal(t, before.Uid, after.Uid, "owner")
			if tt.name == "chmod" || tt.name == "setxattr" {
				assert.True(t, before.Mtime.Equal(after.Mtime), "mtime kept: %v, %v", before.Mtime, after.Mtime)
			}
			assert.Equal(t, []string{"dir1", "dir1/sub", "dir1/sub/g.txt"}, upperNames(t, upper),
				"only the file and its parents are in the upper")
			assert.Equal(t, []string{"g.txt", "h.txt"}, names(t, o, "dir1/sub"), "the rest still shows")
			assert.Equal(t, "dir1 sub h\n", read(t, o, "dir1/sub/h.txt"))
		})
	}
}

// TestWhiteouts: a removed lower name is a whiteout, invisible itself, and
// the overlay's attributes are neither shown nor settable.
func TestWhiteouts(t *testing.T) {
	o, upper := newOverlay(t, ruleLower(t))
	require.NoError(t, mounts.Unlink(bg, o, "a.txt"))
	_, err := o.Stat(bg, "a.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.NotContains(t, names(t, o, "."), "a.txt")
	assert.Equal(t, []string{"a.txt"}, upperNames(t, upper), "the whiteout")
	attrs, err := upper.ListXattr(bg, "tree/a.txt")
	require.NoError(t, err)
	assert.Contains(t, attrs, "user.vfsmount.overlay.whiteout")
	assert.ErrorIs(t, mounts.Unlink(bg, o, "a.txt"), fs.ErrNotExist)

	// The name can be made again, and removed again.
	require.NoError(t, mounts.WriteFile(bg, o, "a.txt", []byte("again"), 0o640))
	assert.Equal(t, "again", read(t, o, "a.txt"))
	assert.Equal(t, fs.FileMode(0o640), stat(t, o, "a.txt").Mode)
	require.NoError(t, mounts.Unlink(bg, o, "a.txt"))
	_, err = o.Stat(bg, "a.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// A whole lower directory, bottom up.
	require.NoError(t, mounts.RemoveAll(bg, o, "full"))
	_, err = o.Stat(bg, "full/one.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, []string{"a.txt", "full"}, upperNames(t, upper), "one whiteout per removed top name")

	// A name only the upper has leaves nothing behind.
	require.NoError(t, mounts.WriteFile(bg, o, "new.txt", nil, 0o644))
	require.NoError(t, mounts.Unlink(bg, o, "new.txt"))
	assert.Equal(t, []string{"a.txt", "full"}, upperNames(t, upper))

	t.Run("reserved attributes", func(t *testing.T) {
		require.NoError(t, mounts.Chmod(bg, o, "b.txt", 0o600))
		list, err := o.ListXattr(bg, "b.txt")
		require.NoError(t, err)
		for _, a := range list {
			assert.False(t, strings.HasPrefix(a, "user.vfsmount.overlay."), "listed %s", a)
		}
		_, err = o.GetXattr(bg, "b.txt", "user.vfsmount.overlay.origin")
		assert.ErrorIs(t, err, mounts.ErrNoAttr)
		assert.ErrorIs(t, mounts.SetXattr(bg, o, "b.txt", "user.vfsmount.overlay.whiteout", []byte("y"), 0), fs.ErrPermission)
		assert.ErrorIs(t, mounts.RemoveXattr(bg, o, "b.txt", "user.vfsmount.overlay.origin"), fs.ErrPermission)
		assert.ErrorIs(t, mounts.SetXattr(bg, o, "README.md", "user.vfsmount.overlay.opaque", []byte("y"), 0), fs.ErrPermission)
		assert.NotContains(t, upperNames(t, upper), "README.md", "a refused call copies nothing")
		assert.Equal(t, "lower b\n", read(t, o, "b.txt"))
	})
}

// TestOpaque: a lower directory removed and made again is empty, and
// stays so across renames.
func TestOpaque(t *testing.T) {
	o, _ := newOverlay(t, ruleLower(t))
	ino := stat(t, o, "full").Ino
	require.NoError(t, mounts.RemoveAll(bg, o, "full"))
	require.NoError(t, mounts.Mkdir(bg, o, "full", 0o700))
	assert.Empty(t, names(t, o, "full"), "nothing of the lower shows")
	_, err := o.Stat(bg, "full/one.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	a := stat(t, o, "full")
	assert.Equal(t, fs.ModeDir|0o700, a.Mode)
	assert.Equal(t, uint32(2), a.Nlink)
	assert.NotEqual(t, ino, a.Ino, "a new directory has a new number")
	require.NoError(t, mounts.WriteFile(bg, o, "full/new.txt", []byte("n"), 0o644))
	assert.Equal(t, []string{"new.txt"}, names(t, o, "full"))
	require.NoError(t, mounts.Rename(bg, o, "full", "moved", 0))
	assert.Equal(t, []string{"new.txt"}, names(t, o, "moved"))
	_, err = o.Stat(bg, "full")
	assert.ErrorIs(t, err, fs.ErrNotExist, "the lower full stays removed")
	// And back over its old name, where the lower full still is.
	require.NoError(t, mounts.Rename(bg, o, "moved", "full", 0))
	assert.Equal(t, []string{"new.txt"}, names(t, o, "full"))
}

// TestRenameLowerDirectory: mv dir1 dir2 moves no content: the upper holds
// an empty directory that points at dir1's lower contents, and a whiteout.
func TestRenameLowerDirectory(t *testing.T) {
	o, upper := newOverlay(t, ruleLower(t))
	inos := map[string]uint64{}
	for _, n := range []string{"dir1", "dir1/f.txt", "dir1/sub", "dir1/sub/g.txt"} {
		inos[n] = stat(t, o, n).Ino
	}
	require.NoError(t, mounts.Rename(bg, o, "dir1", "dir2", 0))
	assert.Equal(t, []string{"dir1", "dir2"}, upperNames(t, upper), "a redirect and a whiteout, no copies")
	_, err := o.Stat(bg, "dir1")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, []string{"f.txt", "sub"}, names(t, o, "dir2"))
	assert.Equal(t, "dir1 sub g\n", read(t, o, "dir2/sub/g.txt"))
	for n, ino := range inos {
		assert.Equal(t, ino, stat(t, o, "dir2"+strings.TrimPrefix(n, "dir1")).Ino, "inode of %s after the rename", n)
	}
	assert.Equal(t, uint32(3), stat(t, o, "dir2").Nlink, "2 plus sub")

	// Changes inside the moved directory, and moves out of it.
	require.NoError(t, mounts.WriteFile(bg, o, "dir2/sub/g.txt", []byte("changed"), 0o644))
	assert.Equal(t, "changed", read(t, o, "dir2/sub/g.txt"))
	require.NoError(t, mounts.Rename(bg, o, "dir2/sub", "sub2", 0))
	assert.Equal(t, []string{"g.txt", "h.txt"}, names(t, o, "sub2"))
	assert.Equal(t, "dir1 sub h\n", read(t, o, "sub2/h.txt"))
	assert.Equal(t, "changed", read(t, o, "sub2/g.txt"))
	assert.Equal(t, []string{"f.txt"}, names(t, o, "dir2"))
	assert.Equal(t, inos["dir1/sub/g.txt"], stat(t, o, "sub2/g.txt").Ino)

	// Back to where it was.
	require.NoError(t, mounts.Rename(bg, o, "dir2", "dir1", 0))
	assert.Equal(t, []string{"f.txt"}, names(t, o, "dir1"))
	assert.Equal(t, "dir1 f\n", read(t, o, "dir1/f.txt"))
	_, err = o.Stat(bg, "dir2")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// A lower directory over an empty lower directory it replaces.
	require.NoError(t, mounts.RemoveAll(bg, o, "full/two"))
	require.NoError(t, mounts.Unlink(bg, o, "full/one.txt"))
	require.NoError(t, mounts.Rename(bg, o, "deep", "full", 0))
	assert.Equal(t, []string{"a"}, names(t, o, "full"), "the replaced directory's lower does not merge")
	assert.Equal(t, "package d\n", read(t, o, "full/a/b/c/d.go"))
	// Across: into a lower directory, below others.
	require.NoError(t, mounts.Rename(bg, o, "full/a/b", "dir1/b", 0))
	assert.Equal(t, []string{"b", "f.txt"}, names(t, o, "dir1"))
	assert.Equal(t, "package d\n", read(t, o, "dir1/b/c/d.go"))
}

// TestRenameOverLowerFile: a file (lower or not) replaces a lower file and
// keeps its own number.
func TestRenameOverLowerFile(t *testing.T) {
	o, _ := newOverlay(t, ruleLower(t))
	ino := stat(t, o, "a.txt").Ino
	require.NoError(t, mounts.Rename(bg, o, "a.txt", "b.txt", 0))
	assert.Equal(t, "lower a\n", read(t, o, "b.txt"))
	assert.Equal(t, ino, stat(t, o, "b.txt").Ino)
	_, err := o.Stat(bg, "a.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, mounts.Rename(bg, o, "README.md", "b.txt", mounts.RenameNoReplace), fs.ErrExist)

	require.NoError(t, mounts.WriteFile(bg, o, "new", []byte("new"), 0o644))
	newIno := stat(t, o, "new").Ino
	require.NoError(t, mounts.Rename(bg, o, "new", "README.md", 0))
	assert.Equal(t, "new", read(t, o, "README.md"))
	assert.Equal(t, newIno, stat(t, o, "README.md").Ino)

	// Exchange of two lower entries of different types.
	dirIno := stat(t, o, "bin").Ino
	require.NoError(t, mounts.Rename(bg, o, "bin", "b.txt", mounts.RenameExchange))
	assert.Equal(t, "lower a\n", read(t, o, "bin"))
	assert.Equal(t, "#!/bin/sh\n", read(t, o, "b.txt/run.sh"))
	assert.Equal(t, dirIno, stat(t, o, "b.txt").Ino)
}

// TestHardLinkToLowerFile: the lower file is copied up, then linked: both
// names are one file with the lower's number.
func TestHardLinkToLowerFile(t *testing.T) {
	o, _ := newOverlay(t, ruleLower(t))
	ino := stat(t, o, "a.txt").Ino
	require.NoError(t, mounts.Link(bg, o, "a.txt", "dir1/hard"))
	a, b := stat(t, o, "a.txt"), stat(t, o, "dir1/hard")
	assert.Equal(t, ino, a.Ino)
	assert.Equal(t, ino, b.Ino)
	assert.Equal(t, uint32(2), a.Nlink)
	require.NoError(t, mounts.WriteFile(bg, o, "dir1/hard", []byte("via the link"), 0o644))
	assert.Equal(t, "via the link", read(t, o, "a.txt"))
	require.NoError(t, mounts.Unlink(bg, o, "a.txt"))
	assert.Equal(t, uint32(1), stat(t, o, "dir1/hard").Nlink)
	assert.Equal(t, ino, stat(t, o, "dir1/hard").Ino)
	assert.ErrorIs(t, mounts.Link(bg, o, "dir1", "dir1-link"), fs.ErrPermission)
}

// TestInodeNumbers: lower numbers show as they are; new entries get
// numbers with bit 55 set; every number survives copy-up, renames and a
// reopen of a persisted upper over the same lower.
func TestInodeNumbers(t *testing.T) {
	lower, lm := memLower(t, "f", "d/", "d/g", "l->f", "p")
	require.NoError(t, lm.Unlink(bg, "p"))
	require.NoError(t, lm.Mknod(bg, "p", fs.ModeNamedPipe|0o644, 0))
	path := filepath.Join(t.TempDir(), "upper.db")
	open := func() (*overlayfs.FS, *boltstore.Store) {
		s, err := boltstore.Open(path, boltstore.Options{})
		require.NoError(t, err)
		upper, err := s.Load(memfs.Options{})
		require.NoError(t, err)
		o, err := overlayfs.New(bg, lower, upper, overlayfs.Options{})
		require.NoError(t, err)
		return o, s
	}
	o, s := open()
	lowerIno := map[string]uint64{}
	for _, n := range []string{".", "f", "d", "d/g", "l", "p"} {
		lowerIno[n] = stat(t, lower, n).Ino
		assert.Equal(t, lowerIno[n], stat(t, o, n).Ino, "%s shows the lower's number", n)
	}
	require.NoError(t, mounts.Chmod(bg, o, "f", 0o600))
	require.NoError(t, mounts.Rename(bg, o, "d", "e", 0))
	require.NoError(t, mounts.Rename(bg, o, "e/g", "g", 0))
	require.NoError(t, mounts.Chown(bg, o, "l", 4242, 4343))
	require.NoError(t, mounts.Rename(bg, o, "p", "q", 0))
	require.NoError(t, mounts.WriteFile(bg, o, "new", nil, 0o644))
	require.NoError(t, mounts.Mkdir(bg, o, "newdir", 0o755))
	require.NoError(t, mounts.Symlink(bg, o, "x", "newlink"))
	for old, now := range map[string]string{".": ".", "f": "f", "d": "e", "d/g": "g", "l": "l", "p": "q"} {
		assert.Equal(t, lowerIno[old], stat(t, o, now).Ino, "%s (was %s) keeps its number", now, old)
	}
	for _, n := range []string{"new", "newdir", "newlink"} {
		ino := stat(t, o, n).Ino
		assert.NotZero(t, ino&(1<<55), "%s: a new number has bit 55", n)
		assert.Less(t, ino, uint64(1)<<56, "%s: fits in 56 bits", n)
	}
	want := tree(t, o, true)
	require.NoError(t, s.Close())

	o, s = open()
	defer s.Close()
	assert.Equal(t, want, tree(t, o, true), "the reopened overlay is the same tree, numbers included")
	assert.Equal(t, fs.FileMode(0o600), stat(t, o, "f").Mode)
}

// TestReopenGuards: an upper is reopened only over its own lower, and an
// upper that is not one is refused.
func TestReopenGuards(t *testing.T) {
	lowerA, _ := memLower(t, "a")
	lowerB, _ := memLower(t, "b")
	upper := memfs.New(memfs.Options{})
	_, err := overlayfs.New(bg, lowerA, upper, overlayfs.Options{LowerID: "git@aaaa"})
	require.NoError(t, err)
	_, err = overlayfs.New(bg, lowerB, upper, overlayfs.Options{LowerID: "git@bbbb"})
	require.ErrorIs(t, err, overlayfs.ErrOtherLower)
	assert.Contains(t, err.Error(), "git@aaaa")
	assert.Contains(t, err.Error(), "git@bbbb")
	_, err = overlayfs.New(bg, lowerB, upper, overlayfs.Options{LowerID: "git@aaaa"})
	assert.NoError(t, err, "the same lower identity")

	stranger := memfs.New(memfs.Options{})
	build(t, stranger, "somefile")
	_, err = overlayfs.New(bg, lowerA, stranger, overlayfs.Options{})
	assert.ErrorIs(t, err, overlayfs.ErrBadUpper)
	assert.Equal(t, []string{"somefile"}, names(t, stranger, "."), "a refused upper is left alone")

	_, err = overlayfs.New(bg, lowerA, frozen{memfs.New(memfs.Options{})}, overlayfs.Options{})
	assert.ErrorIs(t, err, overlayfs.ErrBadUpper, "an upper that cannot write")

	// What an interrupted operation left in the work directory goes.
	require.NoError(t, mounts.WriteFile(bg, upper, "work/leftover", []byte("x"), 0o644))
	_, err = overlayfs.New(bg, lowerA, upper, overlayfs.Options{LowerID: "git@aaaa"})
	require.NoError(t, err)
	assert.Empty(t, names(t, upper, "work"))
}

func TestDescribe(t *testing.T) {
	g := ruleLower(t)
	o, _ := newOverlay(t, g)
	d := o.Describe()
	assert.Equal(t, "git", d.Type)
	assert.Equal(t, mounts.Describe(g).Source, d.Source)
	assert.True(t, strings.HasPrefix(d.Source, "git@"))
	assert.False(t, d.Immutable)
	assert.True(t, mounts.Writable(o))
	assert.Equal(t, memCaps|mounts.CapSearch, mounts.Capabilities(o), "the git lower narrows searches; the memory upper freezes")
	assert.Len(t, o.LowerID(), 40, "the full commit SHA")
}

// TestChanges lists what differs from the lower, and only that.
func TestChanges(t *testing.T) {
	o, _ := newOverlay(t, ruleLower(t))
	cs, err := o.Changes(bg)
	require.NoError(t, err)
	assert.Empty(t, cs, "an untouched overlay has no changes")

	require.NoError(t, mounts.WriteFile(bg, o, "README.md", []byte("changed"), 0o644))
	require.NoError(t, mounts.Chmod(bg, o, "bin/run.sh", 0o644))
	require.NoError(t, mounts.Unlink(bg, o, "b.txt"))
	require.NoError(t, mounts.Rename(bg, o, "dir1", "dir2", 0))
	require.NoError(t, mounts.Rename(bg, o, "a.txt", "deep/a/moved.txt", 0))
	require.NoError(t, mounts.WriteFile(bg, o, "deep/a/b/new.go", []byte("new"), 0o644))
	require.NoError(t, mounts.RemoveAll(bg, o, "full"))
	require.NoError(t, mounts.Mkdir(bg, o, "full", 0o755))
	require.NoError(t, mounts.Unlink(bg, o, "link"))
	require.NoError(t, mounts.Mkdir(bg, o, "link", 0o755))
	cs, err = o.Changes(bg)
	require.NoError(t, err)
	want := []overlayfs.Change{
		{Kind: overlayfs.Modified, Path: "README.md", Mode: 0o644, LowerMode: 0o644},
		{Kind: overlayfs.Deleted, Path: "a.txt", LowerMode: 0o644},
		{Kind: overlayfs.Deleted, Path: "b.txt", LowerMode: 0o644},
		{Kind: overlayfs.Modified, Path: "bin/run.sh", Mode: 0o644, LowerMode: 0o755},
		{Kind: overlayfs.Added, Path: "deep/a/b/new.go", Mode: 0o644},
		{Kind: overlayfs.Added, Path: "deep/a/moved.txt", Mode: 0o644, From: "a.txt"},
		{Kind: overlayfs.Deleted, Path: "dir1", LowerMode: fs.ModeDir | 0o755},
		{Kind: overlayfs.Added, Path: "dir2", Mode: fs.ModeDir | 0o755, From: "dir1"},
		{Kind: overlayfs.Modified, Path: "full", Mode: fs.ModeDir | 0o755, LowerMode: fs.ModeDir | 0o755, Opaque: true},
		{Kind: overlayfs.Modified, Path: "link", Mode: fs.ModeDir | 0o755, LowerMode: fs.ModeSymlink | 0o777, Opaque: true},
	}
	assert.Equal(t, want, cs)
}

// TestErrorsNameTheCaller: errors from either layer carry the caller's
// names, never the upper's layout or a redirected lower name.
func TestErrorsNameTheCaller(t *testing.T) {
	o, _ := newOverlay(t, ruleLower(t))
	require.NoError(t, mounts.Rename(bg, o, "dir1", "dir2", 0))
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"dir2/missing", func() error { _, err := o.Stat(bg, "dir2/missing"); return err }()},
		{"dir2/f.txt/x", func() error { _, err := o.Stat(bg, "dir2/f.txt/x"); return err }()},
		{"dir2/f.txt", func() error { _, err := o.ReadDir(bg, "dir2/f.txt"); return err }()},
		{"dir2/f.txt", mounts.Mkdir(bg, o, "dir2/f.txt", 0o755)},
	} {
		var pe *fs.PathError
		if assert.True(t, errors.As(tc.err, &pe), "%v", tc.err) {
			assert.Equal(t, tc.name, pe.Path)
		}
	}
	f, err := o.Open(bg, "dir2/f.txt")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	var pe *fs.PathError
	if assert.True(t, errors.As(f.Close(), &pe)) {
		assert.Equal(t, "dir2/f.txt", pe.Path)
	}
}
