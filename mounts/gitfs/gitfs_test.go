package gitfs

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// openFS opens opts with a private cache directory and closes it at the
// end of the test.
func openFS(t testing.TB, opts Options) *FS {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	f, err := Open(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// requirePathErr checks that err is a *fs.PathError for name wrapping want.
func requirePathErr(t testing.TB, err error, want error, name string) {
	t.Helper()
	require.Error(t, err)
	var pe *fs.PathError
	require.Truef(t, errors.As(err, &pe), "%v is not a *fs.PathError", err)
	assert.Equal(t, name, pe.Path, "error path of %v", err)
	assert.Truef(t, errors.Is(err, want), "got %v, want %v", err, want)
}

// gitBlobID is what git hash-object computes for content.
func gitBlobID(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// lsEntry is one line of git ls-tree -r -t -l.
type lsEntry struct {
	mode, typ, oid string
	size           int64 // -1 for trees and commits
}

// lsTree lists every entry of rev's tree, directories included.
func lsTree(t testing.TB, dir, rev string) map[string]lsEntry {
	t.Helper()
	out := gittest.Git(t, dir, "-c", "core.quotePath=false", "ls-tree", "-r", "-t", "-l", "-z", rev)
	m := map[string]lsEntry{}
	for _, line := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		meta, name, ok := strings.Cut(line, "\t")
		require.True(t, ok, line)
		f := strings.Fields(meta)
		require.Len(t, f, 4, line)
		size := int64(-1)
		if f[3] != "-" {
			n, err := strconv.ParseInt(f[3], 10, 64)
			require.NoError(t, err)
			size = n
		}
		m[name] = lsEntry{mode: f[0], typ: f[1], oid: f[2], size: size}
	}
	return m
}

// walk lists every name below "." with ReadDir, depth first.
func walk(t testing.TB, f mounts.FS, dir string, visit func(name string, e mounts.DirEntry)) {
	t.Helper()
	ents, err := f.ReadDir(context.Background(), dir)
	require.NoError(t, err)
	for _, e := range ents {
		name := mounts.Join(dir, e.Name)
		visit(name, e)
		if e.Type.IsDir() {
			walk(t, f, name, visit)
		}
	}
}

func TestOpenPinsTheRevision(t *testing.T) {
	fx := gittest.MainFixture(t)
	tests := []struct {
		name, rev, want string
	}{
		{"default is HEAD", "", fx.Head()},
		{"HEAD", "HEAD", fx.Head()},
		{"branch", "main", fx.Head()},
		{"full SHA", fx.Commits[3], fx.Commits[3]},
		{"short SHA", fx.Commits[3][:9], fx.Commits[3]},
		{"upper-case short SHA", strings.ToUpper(fx.Commits[3][:9]), fx.Commits[3]},
		{"ancestry", "HEAD~3", fx.Commits[len(fx.Commits)-4]},
		{"lightweight tag", "light", fx.Commits[5]},
		{"annotated tag peels to its commit", "annotated", fx.Commits[10]},
		{"tag ancestry", "annotated~2", fx.Commits[8]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := openFS(t, Options{Src: fx.Dir, Rev: tt.rev})
			assert.Equal(t, tt.want, f.Commit())
			got, err := f.GetXattr(context.Background(), ".", "user.git.commit")
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.Equal(t, mounts.Description{Type: "git", Source: "git@" + tt.want[:12], Immutable: true}, f.Describe())
		})
	}
}

func TestTreeIsFaithfulToGit(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()
	want := lsTree(t, fx.Dir, fx.Head())

	seen := map[string]bool{}
	walk(t, f, ".", func(name string, e mounts.DirEntry) {
		seen[name] = true
		w, ok := want[name]
		if !assert.Truef(t, ok, "%q is served but not in git ls-tree", name) {
			return
		}
		a, err := f.Stat(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, e.Type, a.Mode.Type(), "%s: ReadDir type vs Stat", name)
		assert.Equal(t, e.Ino, a.Ino, "%s: ReadDir Ino vs Stat", name)
		assert.Equal(t, fx.HeadTime(), a.Mtime.UTC(), "%s: mtime is the committer time", name)
		assert.Equal(t, a.Mtime, a.Atime, name)
		assert.Equal(t, a.Mtime, a.Ctime, name)
		assert.Equal(t, uint32(os.Getuid()), a.Uid, name)
		assert.Equal(t, uint32(os.Getgid()), a.Gid, name)
		oid, err := f.GetXattr(ctx, name, "user.git.oid")
		require.NoError(t, err)
		assert.Equal(t, w.oid, string(oid), "%s: user.git.oid", name)

		switch w.mode {
		case "040000":
			assert.Equal(t, fs.ModeDir|0o755, a.Mode, name)
			subdirs := 0
			for other, o := range want {
				if d, _ := mounts.Split(other); d == name && (o.mode == "040000" || o.mode == "160000") {
					subdirs++
				}
			}
			assert.Equal(t, uint32(2+subdirs), a.Nlink, "%s: nlink", name)
		case "160000":
			assert.Equal(t, fs.ModeDir|0o755, a.Mode, name)
			ents, err := f.ReadDir(ctx, name)
			require.NoError(t, err)
			assert.Empty(t, ents, "a submodule is an empty directory")
			sub, err := f.GetXattr(ctx, name, "user.git.submodule")
			require.NoError(t, err)
			assert.Equal(t, fx.Sub, string(sub))
		case "120000":
			assert.Equal(t, fs.ModeSymlink|0o777, a.Mode, name)
			target, err := f.ReadLink(ctx, name)
			require.NoError(t, err)
			assert.Equal(t, w.oid, gitBlobID([]byte(target)), "%s: target", name)
			assert.Equal(t, int64(len(target)), a.Size, name)
		case "100755", "100644":
			perm := fs.FileMode(0o644)
			if w.mode == "100755" {
				perm = 0o755
			}
			assert.Equal(t, perm, a.Mode, name)
			assert.Equal(t, w.size, a.Size, "%s: size", name)
			assert.Equal(t, uint32(1), a.Nlink, name)
			content, err := mounts.ReadFile(ctx, f, name)
			require.NoError(t, err)
			assert.Equal(t, w.oid, gitBlobID(content), "%s: content hashes to its blob id", name)
		default:
			t.Errorf("%s: unexpected mode %s", name, w.mode)
		}
	})
	for name := range want {
		assert.Truef(t, seen[name], "%q is in git ls-tree but not served", name)
	}
	assert.Contains(t, seen, "dir with space/naïve ünïcode.txt")
	assert.Contains(t, seen, "empty.txt")
	assert.Contains(t, seen, "vendor/sub")

	target, err := f.ReadLink(ctx, "links/abs")
	require.NoError(t, err)
	assert.Equal(t, "/etc/hostname", target, "absolute targets are stored verbatim")
	target, err = f.ReadLink(ctx, "links/dangling")
	require.NoError(t, err)
	assert.Equal(t, "nowhere/at/all", target)
}

func TestLookupsReadOnlyTheTreesOnThePath(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	assert.Equal(t, 1, f.trees.lru.Len(), "Open decodes the root tree only")

	a, err := f.Stat(context.Background(), "big.bin")
	require.NoError(t, err)
	assert.Equal(t, int64(gittest.BigSize), a.Size)
	assert.Equal(t, int64(0), f.blobs.loads.Load(), "Stat takes the size from the header, not the content")
	assert.Equal(t, 1, f.trees.lru.Len())

	_, err = f.Stat(context.Background(), "a/b/c/deep.txt")
	require.NoError(t, err)
	// root, a, a/b and a/b/c (c for the link count of the directory, were
	// it the target); nothing else.
	assert.Equal(t, 4, f.trees.lru.Len())
	assert.Equal(t, int64(0), f.blobs.loads.Load())
}

func TestLargeDeltifiedBlobDecodesOnce(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()

	oid, err := f.GetXattr(ctx, "big.bin", "user.git.oid")
	require.NoError(t, err)
	require.True(t, isDelta(t, fx.Dir, string(oid)), "the fixture's large blob must be a delta in the pack")

	fl, err := f.Open(ctx, "big.bin")
	require.NoError(t, err)
	defer fl.Close()
	fl2, err := f.Open(ctx, "big.bin")
	require.NoError(t, err)
	defer fl2.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	for g, h := range []mounts.File{fl, fl2, fl, fl2} {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 3))
			buf := make([]byte, 128<<10)
			for range 200 {
				off := r.Int64N(gittest.BigSize)
				n, err := h.ReadAt(buf, off)
				end := min(off+int64(len(buf)), gittest.BigSize)
				if !assert.Equal(t, int(end-off), n) {
					return
				}
				if end == gittest.BigSize {
					assert.ErrorIs(t, err, io.EOF)
				} else {
					assert.NoError(t, err)
				}
				if !assert.True(t, bytes.Equal(fx.Big[off:end], buf[:n]), "bytes at %d", off) {
					return
				}
			}
		}(uint64(g) + rng.Uint64())
	}
	wg.Wait()
	n, err := fl.ReadAt(make([]byte, 10), gittest.BigSize-4)
	assert.Equal(t, 4, n)
	assert.ErrorIs(t, err, io.EOF)
	n, err = fl.ReadAt(make([]byte, 10), gittest.BigSize+10)
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, int64(1), f.blobs.loads.Load(), "two opens and 800 reads decode the blob once")
	assert.Equal(t, 0, spilledFiles(t, f), "spill files are unlinked at once")
}

// TestConcurrentOpensOfAColdBlobDecodeOnce: files opened at once on a blob
// nobody has decoded share one decode, whichever of them starts it.
func TestConcurrentOpensOfAColdBlobDecodeOnce(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()
	const opens = 8
	files := make([]mounts.File, opens)
	var wg sync.WaitGroup
	for i := range opens {
		wg.Go(func() {
			fl, err := f.Open(ctx, "big.bin")
			if assert.NoError(t, err) {
				files[i] = fl
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(1), f.blobs.loads.Load(), "eight opens of a cold blob, one decode")
	buf := make([]byte, 4096)
	for i, fl := range files {
		require.NotNil(t, fl, i)
		off := int64(i) * (gittest.BigSize / opens)
		n, err := fl.ReadAt(buf, off)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(fx.Big[off:off+int64(n)], buf[:n]), "file %d at %d", i, off)
		require.NoError(t, fl.Close())
	}
}

// spilledFiles counts the names left in the spill directory.
func spilledFiles(t testing.TB, f *FS) int {
	ents, err := os.ReadDir(f.blobs.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	return len(ents)
}

// isDelta reports whether oid is stored as a delta in dir's pack.
func isDelta(t testing.TB, dir, oid string) bool {
	packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	require.NoError(t, err)
	for _, p := range packs {
		for _, line := range strings.Split(gittest.Git(t, dir, "verify-pack", "-v", p), "\n") {
			f := strings.Fields(line)
			// "SHA type size size-in-pack offset depth base" for deltas.
			if len(f) == 7 && f[0] == oid {
				return true
			}
		}
	}
	return false
}

func TestInodesAreStable(t *testing.T) {
	fx := gittest.MainFixture(t)
	collect := func(f *FS) map[string]uint64 {
		m := map[string]uint64{}
		a, err := f.Stat(context.Background(), ".")
		require.NoError(t, err)
		m["."] = a.Ino
		walk(t, f, ".", func(name string, e mounts.DirEntry) { m[name] = e.Ino })
		return m
	}
	first := collect(openFS(t, Options{Src: fx.Dir}))
	second := collect(openFS(t, Options{Src: fx.Dir, Rev: fx.Head()[:10]}))
	assert.Equal(t, first, second, "a remount of the same commit gives the same numbers")

	seen := map[uint64]string{}
	for name, n := range first {
		assert.NotZero(t, n, name)
		assert.Less(t, n, uint64(1)<<56, "%s: the top 8 bits belong to the union", name)
		if other, dup := seen[n]; dup {
			t.Errorf("%q and %q share inode %d", name, other, n)
		}
		seen[n] = name
	}

	sub := openFS(t, Options{Src: fx.Dir, Subdir: "a/b"})
	a, err := sub.Stat(context.Background(), "c/deep.txt")
	require.NoError(t, err)
	assert.Equal(t, first["a/b/c/deep.txt"], a.Ino, "a subdir mount numbers entries as the whole commit does")
}

func TestSubdir(t *testing.T) {
	fx := gittest.MainFixture(t)
	ctx := context.Background()
	for _, subdir := range []string{"a/b", "/a/b/", "a/b/"} {
		f := openFS(t, Options{Src: fx.Dir, Subdir: subdir})
		ents, err := f.ReadDir(ctx, ".")
		require.NoError(t, err)
		assert.Equal(t, []mounts.DirEntry{
			{Name: "c", Type: fs.ModeDir, Ino: ents[0].Ino},
			{Name: "sibling.txt", Ino: ents[1].Ino},
		}, ents)
		content, err := mounts.ReadFile(ctx, f, "c/deep.txt")
		require.NoError(t, err)
		assert.Equal(t, "deep\n", string(content))
		assert.Equal(t, "git@"+fx.Head()[:12]+":a/b", f.Describe().Source)
		oid, err := f.GetXattr(ctx, ".", "user.git.oid")
		require.NoError(t, err)
		assert.Equal(t, gittest.Git(t, fx.Dir, "rev-parse", "HEAD:a/b"), string(oid))
	}
}

func TestNamesAndErrors(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()
	openErr := func(name string) error { _, err := f.Open(ctx, name); return err }
	statErr := func(name string) error { _, err := f.Stat(ctx, name); return err }
	readDirErr := func(name string) error { _, err := f.ReadDir(ctx, name); return err }
	readLinkErr := func(name string) error { _, err := f.ReadLink(ctx, name); return err }
	xattrErr := func(name string) error { _, err := f.GetXattr(ctx, name, "user.git.commit"); return err }
	tests := []struct {
		name string
		call func(string) error
		arg  string
		want error
	}{
		{"missing", statErr, "no/such/file", fs.ErrNotExist},
		{"missing leaf", openErr, "a/b/nope", fs.ErrNotExist},
		{"through a file", statErr, "README.md/x", mounts.ErrNotDir},
		{"into a submodule", statErr, "vendor/sub/x", fs.ErrNotExist},
		{".git refused", statErr, ".git", fs.ErrInvalid},
		{".git below refused", readDirErr, "a/.git/b", fs.ErrInvalid},
		{"unclean", statErr, "a/../README.md", fs.ErrInvalid},
		{"rooted", statErr, "/README.md", fs.ErrInvalid},
		{"control character", openErr, "a\nb", fs.ErrInvalid},
		{"too long", statErr, strings.Repeat("x", 256), mounts.ErrNameTooLong},
		{"open a directory", openErr, "a", mounts.ErrIsDir},
		{"open a submodule", openErr, "vendor/sub", mounts.ErrIsDir},
		{"open a symlink", openErr, "links/rel", mounts.ErrLoop},
		{"readdir a file", readDirErr, "README.md", mounts.ErrNotDir},
		{"readlink a file", readLinkErr, "README.md", fs.ErrInvalid},
		{"readlink a directory", readLinkErr, "a", fs.ErrInvalid},
		{"commit xattr only on the root", xattrErr, "README.md", mounts.ErrNoAttr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requirePathErr(t, tt.call(tt.arg), tt.want, tt.arg)
		})
	}
	_, err := f.GetXattr(ctx, "README.md", "user.git.submodule")
	requirePathErr(t, err, mounts.ErrNoAttr, "README.md")
	list, err := f.ListXattr(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, []string{"user.git.commit", "user.git.oid"}, list)
	list, err = f.ListXattr(ctx, "vendor/sub")
	require.NoError(t, err)
	assert.Equal(t, []string{"user.git.oid", "user.git.submodule"}, list)
}

func TestReadOnlyByMethodAbsence(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()
	assert.Equal(t, mounts.CapXattr|mounts.CapStatFS|mounts.CapSearch, mounts.Capabilities(f))
	assert.False(t, mounts.Writable(f))
	_, err := mounts.OpenFile(ctx, f, "README.md", os.O_RDWR, 0)
	requirePathErr(t, err, mounts.ErrReadOnly, "README.md")
	requirePathErr(t, mounts.Mkdir(ctx, f, "new", 0o755), mounts.ErrReadOnly, "new")
	requirePathErr(t, mounts.Unlink(ctx, f, "README.md"), mounts.ErrReadOnly, "README.md")
	requirePathErr(t, mounts.SetXattr(ctx, f, ".", "user.x", nil, 0), mounts.ErrReadOnly, ".")
	st, err := mounts.StatFS(ctx, f)
	require.NoError(t, err)
	assert.Equal(t, mounts.FSStat{Bsize: 4096, NameLen: 255}, st)
}

func TestFileHandles(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()
	fl, err := f.Open(ctx, "README.md")
	require.NoError(t, err)
	a, err := fl.Stat()
	require.NoError(t, err)
	assert.Equal(t, int64(len("# fixture\n")), a.Size)
	_, err = fl.ReadAt(make([]byte, 1), -1)
	requirePathErr(t, err, fs.ErrInvalid, "README.md")
	require.NoError(t, fl.Close())
	requirePathErr(t, fl.Close(), fs.ErrClosed, "README.md")
	_, err = fl.ReadAt(make([]byte, 1), 0)
	requirePathErr(t, err, fs.ErrClosed, "README.md")

	empty, err := f.Open(ctx, "empty.txt")
	require.NoError(t, err)
	n, err := empty.ReadAt(make([]byte, 4), 0)
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF)
	require.NoError(t, empty.Close())

	// A file outlives the mount's Close.
	g := openFS(t, Options{Src: fx.Dir})
	kept, err := g.Open(ctx, "a/b/sibling.txt")
	require.NoError(t, err)
	require.NoError(t, g.Close())
	buf := make([]byte, 8)
	n, err = kept.ReadAt(buf, 0)
	assert.Equal(t, "sibling\n", string(buf[:n]))
	assert.NoError(t, err)
	require.NoError(t, kept.Close())
	_, err = g.Stat(ctx, "README.md")
	requirePathErr(t, err, fs.ErrClosed, "README.md")
}

// logBuffer is a slog handler target safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogger(l *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestCorruptObjectsGiveEIO(t *testing.T) {
	dir, head := gittest.SmallRepo(t, map[string]string{
		"ok.txt": "fine\n", "gone.txt": "this object will be deleted\n", "bad.txt": "this object will be garbled\n",
	})
	objPath := func(name string) string {
		oid := gittest.Git(t, dir, "rev-parse", head+":"+name)
		return filepath.Join(dir, ".git", "objects", oid[:2], oid[2:])
	}
	require.NoError(t, os.Remove(objPath("gone.txt")))
	bad := objPath("bad.txt")
	require.NoError(t, os.Chmod(bad, 0o644))
	require.NoError(t, os.WriteFile(bad, []byte("x\x9c not zlib at all"), 0o644))

	var logs logBuffer
	f := openFS(t, Options{Src: dir, Logger: newLogger(&logs)})
	ctx := context.Background()
	for range 3 {
		_, err := f.Stat(ctx, "gone.txt")
		requirePathErr(t, err, syscall.EIO, "gone.txt")
		_, err = f.Open(ctx, "bad.txt")
		requirePathErr(t, err, syscall.EIO, "bad.txt")
	}
	content, err := mounts.ReadFile(ctx, f, "ok.txt")
	require.NoError(t, err, "the mount stays up")
	assert.Equal(t, "fine\n", string(content))
	assert.Equal(t, 2, strings.Count(logs.String(), "cannot read object"), "one line per broken object:\n%s", logs.String())
}

func TestInvalidEntriesAreHiddenAndLoggedOnce(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, map[string]string{"keep.txt": "keep\n"})
	blob := gittest.Git(t, dir, "rev-parse", "HEAD:keep.txt")
	bin, err := hex.DecodeString(blob)
	require.NoError(t, err)
	var raw bytes.Buffer
	for _, e := range []struct{ mode, name string }{
		{"100644", ".git"}, {"100644", ".."}, {"100644", "."}, {"100644", "a\x01b"},
		{"100644", strings.Repeat("n", 256)}, {"100600", "odd-mode"},
		{"100644", "keep.txt"}, {"100644", "ok too.txt"},
	} {
		raw.WriteString(e.mode + " " + e.name + "\x00")
		raw.Write(bin)
	}
	tree := gittest.GitAt(t, dir, gittest.Time, raw.Bytes(), "hash-object", "-t", "tree", "-w", "--literally", "--stdin")
	commit := gittest.Git(t, dir, "commit-tree", "-m", "crafted", tree)

	var logs logBuffer
	f := openFS(t, Options{Src: dir, Rev: commit, Logger: newLogger(&logs)})
	for range 2 {
		ents, err := f.ReadDir(context.Background(), ".")
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name)
		}
		assert.Equal(t, []string{"keep.txt", "ok too.txt"}, names)
	}
	assert.Equal(t, 6, strings.Count(logs.String(), "tree entry hidden"), "each hidden entry logged once:\n%s", logs.String())
}

func TestSources(t *testing.T) {
	fx := gittest.MainFixture(t)
	root := t.TempDir()
	bare := filepath.Join(root, "bare.git")
	gittest.Git(t, root, "clone", "-q", "--bare", fx.Dir, bare)
	wt := filepath.Join(root, "wt")
	gittest.Git(t, fx.Dir, "worktree", "add", "-q", "--detach", wt, fx.Commits[2])
	t.Cleanup(func() { gittest.Git(t, fx.Dir, "worktree", "remove", "--force", wt) })

	tests := []struct {
		name, src, rev, want string
	}{
		{"worktree", fx.Dir, "", fx.Head()},
		{"its .git directory", filepath.Join(fx.Dir, ".git"), "", fx.Head()},
		{"bare", bare, "", fx.Head()},
		{"bare, by tag", bare, "light", fx.Commits[5]},
		{"linked worktree with a .git file", wt, "", fx.Commits[2]},
		{"linked worktree sees the common refs", wt, "main", fx.Head()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := openFS(t, Options{Src: tt.src, Rev: tt.rev})
			assert.Equal(t, tt.want, f.Commit())
			_, err := f.Stat(context.Background(), "src/gen.txt")
			assert.NoError(t, err)
		})
	}
}

func TestBadInput(t *testing.T) {
	fx := gittest.MainFixture(t)
	root := t.TempDir()
	notRepo := filepath.Join(root, "plain")
	require.NoError(t, os.Mkdir(notRepo, 0o755))
	aFile := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(aFile, []byte("x"), 0o644))
	unborn := filepath.Join(root, "unborn")
	gittest.InitRepo(t, unborn)
	blob := gittest.Git(t, fx.Dir, "rev-parse", "HEAD:README.md")

	tests := []struct {
		name    string
		opts    Options
		want    error
		mention string
	}{
		{"empty src", Options{}, ErrBadSource, "src"},
		{"missing path", Options{Src: filepath.Join(root, "nope")}, ErrBadSource, "nope"},
		{"plain directory", Options{Src: notRepo}, ErrBadSource, "plain"},
		{"a file", Options{Src: aFile}, ErrBadSource, "file"},
		{"unreachable URL", Options{Src: "file://" + filepath.Join(root, "nope.git")}, ErrBadSource, "nope.git"},
		{"offline without a clone", Options{Src: "file://" + fx.Dir, Offline: true}, ErrBadSource, fx.Dir},
		{"unborn HEAD", Options{Src: unborn}, ErrBadRev, `"HEAD"`},
		{"missing branch", Options{Src: fx.Dir, Rev: "no-such-branch"}, ErrBadRev, "no-such-branch"},
		{"missing SHA", Options{Src: fx.Dir, Rev: strings.Repeat("0", 40)}, ErrBadRev, "0000"},
		{"a blob is not a commit", Options{Src: fx.Dir, Rev: blob}, ErrBadRev, blob},
		{"malformed rev", Options{Src: fx.Dir, Rev: "main..other"}, ErrBadRev, "main..other"},
		{"too far back", Options{Src: fx.Dir, Rev: "HEAD~100"}, ErrBadRev, "HEAD~100"},
		{"missing subdir", Options{Src: fx.Dir, Subdir: "no/such"}, ErrBadSubdir, "no/such"},
		{"subdir is a file", Options{Src: fx.Dir, Subdir: "README.md"}, ErrBadSubdir, "README.md"},
		{"subdir is a submodule", Options{Src: fx.Dir, Subdir: "vendor/sub"}, ErrBadSubdir, "vendor/sub"},
		{"subdir .git", Options{Src: fx.Dir, Subdir: ".git"}, ErrBadSubdir, ".git"},
		{"subdir escapes", Options{Src: fx.Dir, Subdir: "../x"}, ErrBadSubdir, "../x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.CacheDir = t.TempDir()
			f, err := Open(context.Background(), tt.opts)
			if f != nil {
				f.Close()
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.mention)
		})
	}
}

func TestAmbiguousShortSHA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	gittest.InitRepo(t, dir)
	// fast-import makes 800 commits at once; among them two share their
	// first four hex digits (the birthday bound is about 300).
	var script bytes.Buffer
	for i := range 800 {
		msg := fmt.Sprintf("c%d", i)
		fmt.Fprintf(&script, "commit refs/heads/main\ncommitter F <f@e> %d +0000\ndata %d\n%s\n", gittest.Time.Unix()+int64(i), len(msg), msg)
	}
	gittest.GitAt(t, dir, gittest.Time, script.Bytes(), "fast-import", "--quiet")
	byPrefix := map[string][]string{}
	var prefix string
	for _, c := range strings.Fields(gittest.Git(t, dir, "rev-list", "main")) {
		byPrefix[c[:4]] = append(byPrefix[c[:4]], c)
		if len(byPrefix[c[:4]]) == 2 {
			prefix = c[:4]
		}
	}
	require.NotEmpty(t, prefix, "no two commits share 4 hex digits")

	_, err := Open(context.Background(), Options{Src: dir, Rev: prefix, CacheDir: t.TempDir()})
	assert.ErrorIs(t, err, ErrBadRev)
	assert.ErrorContains(t, err, "ambiguous")
	assert.ErrorContains(t, err, prefix)

	one := byPrefix[prefix][0]
	f := openFS(t, Options{Src: dir, Rev: one[:12]})
	assert.Equal(t, one, f.Commit(), "a longer prefix is unique")
}

func TestURLSourceIsClonedOnceAndReused(t *testing.T) {
	dir, first := gittest.SmallRepo(t, map[string]string{"a.txt": "one\n"})
	url := "file://" + dir
	cache := t.TempDir()
	var progress bytes.Buffer
	f := openFS(t, Options{Src: url, CacheDir: cache, Progress: &progress})
	assert.Equal(t, first, f.Commit())
	content, err := mounts.ReadFile(context.Background(), f, "a.txt")
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(content))
	clones, err := filepath.Glob(filepath.Join(cache, "git", "*.git"))
	require.NoError(t, err)
	require.Len(t, clones, 1)
	assert.FileExists(t, filepath.Join(clones[0], "HEAD"))
	assert.NoDirExists(t, filepath.Join(clones[0], ".git"), "the clone is bare")

	// A new commit upstream: a mount of HEAD reuses the clone as it is
	// (no fetch), a mount of the new SHA fetches it.
	gittest.WriteFile(t, dir, "a.txt", "two\n", 0o644)
	second := gittest.CommitAll(t, dir, 1, "second")
	f = openFS(t, Options{Src: url, CacheDir: cache})
	assert.Equal(t, first, f.Commit(), "HEAD is in the clone: no fetch")
	_, err = Open(context.Background(), Options{Src: url, CacheDir: cache, Rev: second, Offline: true})
	assert.ErrorIs(t, err, ErrBadRev, "offline never fetches")
	f = openFS(t, Options{Src: url, CacheDir: cache, Rev: second})
	assert.Equal(t, second, f.Commit(), "a missing rev fetches")
	f = openFS(t, Options{Src: url, CacheDir: cache, Rev: "main"})
	assert.Equal(t, second, f.Commit(), "the fetch updated the branch")

	// With the source gone, the clone still serves, offline or not.
	require.NoError(t, os.RemoveAll(dir))
	f = openFS(t, Options{Src: url, CacheDir: cache, Rev: first, Offline: true})
	assert.Equal(t, first, f.Commit())
	clones2, err := filepath.Glob(filepath.Join(cache, "git", "*"))
	require.NoError(t, err)
	for _, c := range clones2 {
		assert.NotContains(t, filepath.Base(c), ".tmp-", "no half-made clone left behind")
	}
}

func TestRepackUnderALiveMount(t *testing.T) {
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("content %d\n", i)
	}
	dir, _ := gittest.SmallRepo(t, files)
	f := openFS(t, Options{Src: dir})
	ctx := context.Background()
	got, err := mounts.ReadFile(ctx, f, "f00.txt")
	require.NoError(t, err, "served from a loose object")
	assert.Equal(t, files["f00.txt"], string(got))

	// git gc moves every loose object into a new pack and deletes them.
	gittest.Git(t, dir, "gc", "-q", "--prune=now")
	loose, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "??", "*"))
	require.NoError(t, err)
	require.Empty(t, loose, "gc left loose objects")

	for name, want := range files {
		got, err := mounts.ReadFile(ctx, f, name)
		if assert.NoError(t, err, name) {
			assert.Equal(t, want, string(got), name)
		}
	}
}

func TestStatDirIsReadDirAndStat(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()
	dirs := 0
	walk(t, f, ".", func(name string, e mounts.DirEntry) {
		if !e.Type.IsDir() {
			return
		}
		dirs++
		want, err := f.ReadDir(ctx, name)
		require.NoError(t, err)
		ents, attrs, err := f.StatDir(ctx, name)
		require.NoError(t, err)
		require.Equal(t, want, ents, name)
		require.Len(t, attrs, len(ents))
		for i, e := range ents {
			a, err := f.Stat(ctx, mounts.Join(name, e.Name))
			require.NoError(t, err)
			assert.Equal(t, a, attrs[i], "%s/%s", name, e.Name)
		}
	})
	require.Greater(t, dirs, 2, "the fixture has directories (and a submodule)")
	_, _, err := f.StatDir(ctx, "README.md")
	assert.ErrorIs(t, err, mounts.ErrNotDir)
	_, _, err = f.StatDir(ctx, "nope")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestAWalkIsWarmedAhead(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, map[string]string{
		"top.txt": "top", "y/5.txt": "five",
		"x/a/1.txt": "one", "x/a/2.txt": "two",
		"x/b/4.txt": "four", "x/b/c/3.txt": "three",
	})
	f := openFS(t, Options{Src: dir})
	ctx := context.Background()
	tree := func(name string) *tree {
		t.Helper()
		n, err := f.resolve(ctx, "stat", name)
		require.NoError(t, err)
		return f.trees.get(n.hash)
	}
	queued := func() int {
		f.walk.mu.Lock()
		defer f.walk.mu.Unlock()
		return len(f.walk.stack)
	}

	// A lone listing reads the listed trees and no further.
	_, _, err := f.StatDir(ctx, ".")
	require.NoError(t, err)
	assert.Zero(t, queued(), "a lone listing queues nothing")
	assert.Nil(t, tree("x/a"), "nor reads a tree below the listed ones")
	assert.Zero(t, f.walk.warmed.Load())

	// A directory listed after its parent is a walk: its subdirectories
	// and its parent's are warmed (x itself is warm: StatDir just read it).
	_, _, err = f.StatDir(ctx, "x")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.walk.warmed.Load() == 3 }, 10*time.Second, time.Millisecond,
		"x/a, x/b and y are warmed")
	for _, d := range []string{"x/a", "x/b", "y"} {
		tr := tree(d)
		require.NotNil(t, tr, d)
		assert.True(t, tr.warm.Load(), d)
		for i := range tr.entries {
			if e := &tr.entries[i]; e.kind == kindFile {
				assert.GreaterOrEqual(t, e.loadSize(), int64(0), "%s/%s: size read ahead", d, e.name)
			}
		}
	}
	assert.NotNil(t, tree("x/b/c"), "the trees x/b's listing needs are decoded")
	assert.Zero(t, queued())
	assert.Equal(t, int64(0), f.blobs.loads.Load(), "warming reads no content")

	// What a warmed directory lists is what Stat says.
	ents, attrs, err := f.StatDir(ctx, "x/b")
	require.NoError(t, err)
	for i, e := range ents {
		a, err := f.Stat(ctx, "x/b/"+e.Name)
		require.NoError(t, err)
		assert.Equal(t, a, attrs[i], e.Name)
	}
}

func TestAScanDecodesItsWalkAhead(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, map[string]string{
		"src/a.go": "package a", "src/b.go": "package b",
		"src/x/c.go": "package c", "src/x/d.go": "package d",
	})
	f := openFS(t, Options{Src: dir})
	ctx := context.Background()
	read := func(name string) {
		t.Helper()
		_, err := mounts.ReadFile(ctx, f, name)
		require.NoError(t, err)
	}

	// One file read is no scan.
	read("src/a.go")
	assert.False(t, f.walk.scanning())
	// A second file of the same directory is.
	read("src/b.go")
	assert.True(t, f.walk.scanning())
	loads := f.blobs.loads.Load()

	// The walk's next directory has its files decoded before they are
	// opened.
	for _, d := range []string{".", "src"} {
		_, _, err := f.StatDir(ctx, d)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return f.walk.decoded.Load() == 2 }, 10*time.Second, time.Millisecond,
		"src/x/c.go and src/x/d.go are decoded ahead")
	assert.Equal(t, loads+2, f.blobs.loads.Load())
	read("src/x/c.go")
	read("src/x/d.go")
	assert.Equal(t, loads+2, f.blobs.loads.Load(), "the opens found their content decoded")
}

// A file the kernel face opens with its pages kept (mounts.OpenOptions) and
// reads whole leaves nothing decoded behind; one read in part, or read by
// any other reader, stays decoded.
func TestFilesWhosePagesTheKernelKeepsAreNotKeptDecoded(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, map[string]string{"a": "alpha", "b": "bravo"})
	f := openFS(t, Options{Src: dir})
	kernel := mounts.OpenOptions{PagesKept: true}
	tool := mounts.OpenOptions{}
	read := func(o mounts.OpenOptions, name string, n int) {
		t.Helper()
		fl, err := f.OpenWith(context.Background(), name, o)
		require.NoError(t, err)
		buf := make([]byte, n)
		_, err = fl.ReadAt(buf, 0)
		if n >= 5 {
			require.ErrorIs(t, err, io.EOF)
		} else {
			require.NoError(t, err)
		}
		require.NoError(t, fl.Close())
	}
	// Content fetched into the cache: decoded, or read from the blob
	// store (where the writer behind a decode may have put it already).
	loads := func() int64 { return f.blobs.loads.Load() + f.blobs.store.hits.Load() }

	read(kernel, "a", 64)
	read(kernel, "a", 64)
	assert.Equal(t, int64(2), loads(), "read whole with its pages kept: fetched on each open")
	assert.Equal(t, int64(2), f.blobs.shed.Load())

	read(kernel, "b", 2)
	read(kernel, "b", 64)
	assert.Equal(t, int64(3), loads(), "read in part: kept for the rest")
	read(kernel, "b", 64)
	assert.Equal(t, int64(4), loads())

	read(tool, "a", 64)
	read(kernel, "a", 64)
	read(kernel, "a", 64)
	assert.Equal(t, int64(5), loads(), "a tool-face reader's content stays")
}

// TestOpenedInCaseDecodesAtTheFirstRead: a file opened in case it is read
// (mounts.OpenOptions.InCase) costs no decode until it is, and then reads
// what any open reads; closed unread, it leaves nothing pinned.
func TestOpenedInCaseDecodesAtTheFirstRead(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()
	inCase := mounts.OpenOptions{InCase: true}

	unread, err := f.OpenWith(ctx, "big.bin", inCase)
	require.NoError(t, err)
	require.NoError(t, unread.Close())
	assert.Equal(t, int64(0), f.blobs.loads.Load(), "opened and closed unread: nothing decoded")

	fl, err := f.OpenWith(ctx, "big.bin", inCase)
	require.NoError(t, err)
	assert.Equal(t, int64(0), f.blobs.loads.Load())
	got := make([]byte, gittest.BigSize)
	n, err := fl.ReadAt(got, 0)
	if !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	assert.Equal(t, gittest.BigSize, n)
	assert.Equal(t, int64(1), f.blobs.loads.Load(), "decoded at the first read")
	require.NoError(t, fl.Close())

	want, err := mounts.ReadFile(context.Background(), f, "big.bin")
	require.NoError(t, err)
	assert.Equal(t, want, got, "the same content as a plain open")
}

// TestContentInPlace: an open file hands over its blob's bytes in place
// (mounts.ContentFile), the same bytes ReadAt reads, and nothing once it
// is closed; through the union too, which forwards it.
func TestContentInPlace(t *testing.T) {
	fx := gittest.MainFixture(t)
	f := openFS(t, Options{Src: fx.Dir})
	ctx := context.Background()
	u, err := union.New(map[string]mounts.FS{"/": memfs.New(memfs.Options{}), "/repo": f})
	require.NoError(t, err)
	for _, fsys := range []struct {
		fs   mounts.FS
		name string
	}{{f, "a/b/sibling.txt"}, {u, "repo/a/b/sibling.txt"}} {
		fl, err := fsys.fs.Open(ctx, fsys.name)
		require.NoError(t, err)
		data, ok := mounts.Content(fl)
		require.True(t, ok, "%s: a blob in memory is handed over", fsys.name)
		assert.Equal(t, "sibling\n", string(data))
		buf := make([]byte, 64)
		n, _ := fl.ReadAt(buf, 0)
		assert.Equal(t, string(buf[:n]), string(data))
		require.NoError(t, fl.Close())
		_, ok = mounts.Content(fl)
		assert.False(t, ok, "%s: nothing after close", fsys.name)
	}
}
