package gitfs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// borrowingRepo is a source repository with history, a branch and tags,
// its objects partly packed and partly loose, for clones that borrow them.
type borrowingRepo struct {
	dir     string
	commits []string
}

func newBorrowingRepo(t *testing.T) *borrowingRepo {
	t.Helper()
	r := &borrowingRepo{dir: filepath.Join(t.TempDir(), "src")}
	gittest.InitRepo(t, r.dir)
	for i := range 4 {
		gittest.WriteFile(t, r.dir, "src/gen.txt", strings.Repeat("version "+string(rune('a'+i))+"\n", 100*(i+1)), 0o644)
		gittest.WriteFile(t, r.dir, "README.md", "# readme "+string(rune('a'+i))+"\n", 0o644)
		if i == 1 {
			gittest.WriteFile(t, r.dir, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755)
		}
		r.commits = append(r.commits, gittest.CommitAll(t, r.dir, i, "commit "+string(rune('a'+i))))
		if i == 1 {
			// The first commits packed, the later ones loose.
			gittest.Git(t, r.dir, "gc", "-q")
		}
	}
	gittest.Git(t, r.dir, "branch", "feature", r.commits[2])
	gittest.Git(t, r.dir, "tag", "light", r.commits[1])
	gittest.Git(t, r.dir, "tag", "-a", "-m", "annotated", "annotated", r.commits[0])
	return r
}

// requireServesLikeGit checks that f serves exactly the tree git shows
// for rev in dir: every entry, and every file's bytes.
func requireServesLikeGit(t *testing.T, f *FS, dir, rev string) {
	t.Helper()
	ctx := context.Background()
	want := gittest.Git(t, dir, "rev-parse", rev+"^{commit}")
	require.Equal(t, want, f.Commit(), "rev %s", rev)
	ents := lsTree(t, dir, rev)
	seen := 0
	walk(t, f, ".", func(name string, e mounts.DirEntry) {
		seen++
		le, ok := ents[name]
		require.Truef(t, ok, "%s is not in git's tree at %s", name, rev)
		if le.typ != "blob" || le.mode == "120000" {
			return
		}
		got, err := mounts.ReadFile(ctx, f, name)
		require.NoError(t, err, name)
		assert.Equal(t, gittest.Git(t, dir, "show", rev+":"+name), strings.TrimSpace(string(got)), "%s at %s", name, rev)
		assert.Equal(t, le.size, int64(len(got)), "%s at %s", name, rev)
	})
	assert.Equal(t, len(ents), seen, "every entry of git's tree at %s", rev)
}

func TestBorrowingClonesMountAtAnyRevision(t *testing.T) {
	src := newBorrowingRepo(t)
	root := t.TempDir()

	shared := filepath.Join(root, "shared")
	gittest.Git(t, root, "clone", "-q", "--shared", src.dir, shared)

	// --reference: the mirror holds the first commits, the clone fetches
	// the rest from the source into its own pack.
	mirror := filepath.Join(root, "mirror.git")
	gittest.Git(t, root, "clone", "-q", "--bare", src.dir, mirror)
	gittest.Git(t, mirror, "update-ref", "refs/heads/main", src.commits[1])
	gittest.Git(t, mirror, "update-ref", "-d", "refs/heads/feature")
	gittest.Git(t, mirror, "tag", "-d", "annotated")
	gittest.Git(t, mirror, "gc", "-q", "--prune=now")
	reference := filepath.Join(root, "reference")
	gittest.Git(t, root, "clone", "-q", "--reference", mirror, "file://"+src.dir, reference)
	packs, err := filepath.Glob(filepath.Join(reference, ".git", "objects", "pack", "*.pack"))
	require.NoError(t, err)
	require.NotEmpty(t, packs, "the clone holds what the mirror lacks")

	// A chain of two, each by a relative path, one of them quoted and
	// after a comment: chain -> mid.git -> base.git.
	base := filepath.Join(root, "base.git")
	gittest.Git(t, root, "clone", "-q", "--bare", src.dir, base)
	mid := filepath.Join(root, "mid.git")
	gittest.Git(t, root, "clone", "-q", "--bare", "--shared", base, mid)
	require.NoError(t, os.WriteFile(filepath.Join(mid, "objects", "info", "alternates"),
		[]byte("# borrowed from base\n\"../../base.git/objects\"\n"), 0o644))
	chain := filepath.Join(root, "chain")
	gittest.Git(t, root, "clone", "-q", "--shared", mid, chain)
	require.NoError(t, os.WriteFile(filepath.Join(chain, ".git", "objects", "info", "alternates"),
		[]byte("../../../mid.git/objects\n"), 0o644))
	gittest.Git(t, chain, "fsck", "--no-progress") // git reads the chain as written

	for _, c := range []struct{ name, dir string }{{"shared", shared}, {"reference", reference}, {"chain of two, relative", chain}} {
		t.Run(c.name, func(t *testing.T) {
			for _, rev := range []string{"HEAD", "main", "origin/feature", "light", "annotated", src.commits[1], src.commits[2][:10]} {
				f := openFS(t, Options{Src: c.dir, Rev: rev})
				requireServesLikeGit(t, f, c.dir, rev)
				dirs := f.ObjectDirs()
				assert.Greater(t, len(dirs), 1, "the alternates are object directories of the mount")
				assert.Equal(t, filepath.Join(c.dir, ".git", "objects"), dirs[0])
			}
		})
	}
}

// TestURLOfABorrowingClone: a URL source is cloned into the cache by
// git's upload-pack, which reads the alternates of the repository it
// serves; the cached clone borrows nothing.
func TestURLOfABorrowingClone(t *testing.T) {
	src := newBorrowingRepo(t)
	shared := filepath.Join(t.TempDir(), "shared")
	gittest.Git(t, src.dir, "clone", "-q", "--shared", src.dir, shared)
	for _, rev := range []string{"HEAD", "light", src.commits[2]} {
		f := openFS(t, Options{Src: "file://" + shared, Rev: rev})
		requireServesLikeGit(t, f, shared, rev)
		assert.Len(t, f.ObjectDirs(), 1, "the cached clone has its own objects")
	}
}

func TestBrokenAlternates(t *testing.T) {
	src := newBorrowingRepo(t)
	root := t.TempDir()
	ctx := context.Background()

	t.Run("missing alternate of a clone that borrows everything", func(t *testing.T) {
		clone := filepath.Join(root, "gone")
		gittest.Git(t, root, "clone", "-q", "--shared", src.dir, clone)
		missing := filepath.Join(root, "moved-away", "objects")
		require.NoError(t, os.WriteFile(filepath.Join(clone, ".git", "objects", "info", "alternates"), []byte(missing+"\n"), 0o644))
		_, err := Open(ctx, Options{Src: clone, CacheDir: t.TempDir()})
		require.ErrorIs(t, err, ErrBadRev)
		assert.ErrorContains(t, err, missing, "names the alternate")
		assert.ErrorContains(t, err, "objects/info/alternates line 1")
		assert.ErrorContains(t, err, "does not exist")
	})

	t.Run("garbage line", func(t *testing.T) {
		clone := filepath.Join(root, "garbage")
		gittest.Git(t, root, "clone", "-q", "--shared", src.dir, clone)
		alt := filepath.Join(clone, ".git", "objects", "info", "alternates")
		require.NoError(t, os.WriteFile(alt, []byte("\x01\x02 garbage \xff\n"), 0o644))
		_, err := Open(ctx, Options{Src: clone, CacheDir: t.TempDir()})
		require.ErrorIs(t, err, ErrBadRev)
		assert.ErrorContains(t, err, "objects/info/alternates line 1")
		assert.ErrorContains(t, err, `garbage \xff`, "names the entry")
	})

	t.Run("the rest of the tree is still served", func(t *testing.T) {
		// A clone that has its own commits and trees, and borrows one
		// blob from an alternate that is gone.
		clone := filepath.Join(root, "partly")
		gittest.Git(t, root, "clone", "-q", src.dir, clone)
		gittest.Git(t, clone, "repack", "-adq")
		lone := filepath.Join(root, "lone.git")
		gittest.Git(t, root, "init", "-q", "--bare", lone)
		gittest.WriteFile(t, clone, "borrowed.txt", "only in the alternate\n", 0o644)
		blob := gittest.Git(t, lone, "hash-object", "-w", filepath.Join(clone, "borrowed.txt"))
		require.NoError(t, os.WriteFile(filepath.Join(clone, ".git", "objects", "info", "alternates"), []byte(filepath.Join(lone, "objects")+"\n"), 0o644))
		gittest.Git(t, clone, "add", "borrowed.txt")
		gittest.CommitAll(t, clone, 9, "borrow") // the blob is not copied: the alternate has it
		gittest.Git(t, clone, "repack", "-adlq") // -l: nor does a repack copy it
		gone := filepath.Join(root, "lone-gone.git")
		require.NoError(t, os.Rename(lone, gone))

		var logs logBuffer
		f := openFS(t, Options{Src: clone, Logger: newLogger(&logs)})
		assert.Contains(t, logs.String(), "alternate object directory skipped", "the mount warns at once")
		assert.Contains(t, logs.String(), filepath.Join(lone, "objects"))
		_, err := f.Stat(ctx, "borrowed.txt")
		requirePathErr(t, err, syscall.EIO, "borrowed.txt")
		assert.NotContains(t, err.Error(), root, "no host path reaches a reader")
		logged := logs.String()
		assert.Contains(t, logged, "cannot read object")
		assert.Contains(t, logged, blob, "the log names the object")
		assert.Contains(t, logged, "path=borrowed.txt", "and the file")
		got, err := mounts.ReadFile(ctx, f, "README.md")
		require.NoError(t, err, "the rest is served")
		assert.Equal(t, "# readme d\n", string(got))
	})
}

// TestExportOfABorrowingClone: a diff and a commit of a mount of a clone
// made with --shared, through a chain of alternates, run git with the
// source's objects as an alternate: git follows that directory's own
// alternates as it follows the repository's.
func TestExportOfABorrowingClone(t *testing.T) {
	src := newBorrowingRepo(t)
	root := t.TempDir()
	mid := filepath.Join(root, "mid")
	gittest.Git(t, root, "clone", "-q", "--shared", src.dir, mid)
	clone := filepath.Join(root, "clone")
	gittest.Git(t, root, "clone", "-q", "--shared", mid, clone)
	ctx := context.Background()
	f := openFS(t, Options{Src: clone})

	edited := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, edited, "README.md", []byte("# edited\n"), 0o644))
	edits := []Edit{{Path: "README.md"}}
	tr, err := f.WriteTree(ctx, edited, edits, false)
	require.NoError(t, err)
	patch, err := tr.Diff(ctx, Patch, nil)
	tr.Close()
	require.NoError(t, err)
	assert.Contains(t, patch, "-# readme d\n+# edited\n")

	tr, err = f.WriteTree(ctx, edited, edits, true)
	require.NoError(t, err)
	defer tr.Close()
	id, err := tr.Commit(ctx, "edit", "work", false)
	require.NoError(t, err)
	assert.Equal(t, "# edited", gittest.Git(t, clone, "show", id+":README.md"))
	assert.Equal(t, src.commits[3], gittest.Git(t, clone, "rev-parse", id+"^"))
}
