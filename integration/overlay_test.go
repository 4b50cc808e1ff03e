package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/union"
)

// The copy-on-write overlay through the kernel: a git commit made writable
// on /repo, next to a memory mount on /memory, as a workspace serves it.

// overlayRepo commits a small tree for the overlay tests.
func overlayRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	for name, content := range map[string]string{
		"README.md":      "# overlay\n",
		"lowerfile":      "to be removed\n",
		"a.txt":          "lower a\n",
		"dir1/f.txt":     "dir1 f\n",
		"dir1/sub/g.txt": "dir1 sub g\n",
		"run.sh":         "#!/bin/sh\necho hi\n",
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o755))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	testutil.GitInit(t, dir)
	testutil.GitCommitAt(t, dir, gitWhen, nil, "overlay")
	return dir
}

// overlayWorkspace mounts an overlay of a memory upper over repo's HEAD on
// /repo, and a memory mount on /memory.
type overlayWorkspace struct {
	dir string
	ov  *overlayfs.FS
	srv *fusefs.Server
}

func (w *overlayWorkspace) path(name string) string {
	return filepath.Join(w.dir, filepath.FromSlash(name))
}

// overlayConnections runs test on the overlay served both ways the kernel
// face can: through the main connection, and (Options.StackConnections, as the
// daemon mounts it) on a copy-on-write connection of its own, where the
// kernel opens files without asking.
func overlayConnections(t *testing.T, test func(t *testing.T, opts fusefs.Options)) {
	t.Run("main", func(t *testing.T) { test(t, fusefs.Options{}) })
	t.Run("copy-on-write", func(t *testing.T) { test(t, fusefs.Options{StackConnections: true}) })
}

func newOverlayWorkspace(t *testing.T, repo string, opts fusefs.Options) *overlayWorkspace {
	t.Helper()
	g, err := gitfs.Open(context.Background(), gitfs.Options{Src: repo, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	ov, err := overlayfs.New(context.Background(), g, memfs.New(memfs.Options{}), overlayfs.Options{OwnXattrs: []string{"user.git."}})
	require.NoError(t, err)
	u, err := union.New(map[string]mounts.FS{"/repo": ov, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	dir, srv := mountKernelWith(t, u, opts)
	var root, mnt syscall.Stat_t
	require.NoError(t, syscall.Stat(dir, &root))
	require.NoError(t, syscall.Stat(filepath.Join(dir, "repo"), &mnt))
	require.Equal(t, opts.StackConnections, root.Dev != mnt.Dev, "/repo on a connection of its own")
	return &overlayWorkspace{dir: dir, ov: ov, srv: srv}
}

// lsInodes parses `ls -i` lines ("1234 name") into name -> number.
func lsInodes(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	got := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		ino, name, ok := strings.Cut(strings.TrimSpace(line), " ")
		require.True(t, ok, "ls -i line %q", line)
		n, err := strconv.ParseUint(ino, 10, 64)
		require.NoError(t, err, "ls -i line %q", line)
		got[name] = n
	}
	return got
}

// TestOverlayShellThroughKernel: a shell writes, moves a lower directory,
// removes a lower file, links, chmods and lists inode numbers in /repo, and
// the overlay keeps every number the commit showed.
func TestOverlayShellThroughKernel(t *testing.T) {
	overlayConnections(t, func(t *testing.T, opts fusefs.Options) {
		w := newOverlayWorkspace(t, overlayRepo(t), opts)
		before := map[string]uint64{}
		for _, name := range []string{"dir1", "dir1/f.txt", "dir1/sub", "a.txt"} {
			before[name] = statIno(t, w.path("repo/"+name))
		}
		script := `set -e
	cd repo
	ls -i dir1 | sort -k2
	echo --
	echo hello > f
	mv dir1 dir2
	rm lowerfile
	ln a.txt hard
	chmod 600 a.txt
	ls -id dir2/f.txt dir2/sub a.txt hard f
	echo --
	ls -i dir2 | sort -k2
	echo --
	ls
	`
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = w.dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "shell: %s", out)
		parts := strings.Split(string(out), "--\n")
		require.Len(t, parts, 4, "shell output: %s", out)

		listed := lsInodes(t, parts[0])
		assert.Equal(t, before["dir1/f.txt"], listed["f.txt"], "ls -i of the lower directory")
		assert.Equal(t, before["dir1/sub"], listed["sub"])

		after := lsInodes(t, parts[1])
		assert.Equal(t, before["dir1/f.txt"], after["dir2/f.txt"], "mv keeps the numbers below the directory")
		assert.Equal(t, before["dir1/sub"], after["dir2/sub"])
		assert.Equal(t, before["a.txt"], after["a.txt"], "chmod (a copy-up) keeps the number")
		assert.Equal(t, after["a.txt"], after["hard"], "the hard link shares it")
		assert.NotEqual(t, after["a.txt"], after["f"], "a new file has a number of its own")
		assert.Equal(t, lsInodes(t, parts[2]), map[string]uint64{"f.txt": after["dir2/f.txt"], "sub": after["dir2/sub"]},
			"a listing of the moved directory reports the numbers stat does")
		assert.Equal(t, []string{"README.md", "a.txt", "dir2", "f", "hard", "link", "run.sh"},
			strings.Fields(parts[3]), "ls after the changes")

		// And from this process, through the kernel and the library alike.
		assert.Equal(t, before["dir1"], statIno(t, w.path("repo/dir2")), "the moved directory keeps its number")
		assert.Equal(t, "hello\n", readFile(t, w.path("repo/f")))
		assert.Equal(t, "dir1 sub g\n", readFile(t, w.path("repo/dir2/sub/g.txt")))
		_, err = os.Stat(w.path("repo/dir1"))
		assert.ErrorIs(t, err, syscall.ENOENT)
		_, err = os.Stat(w.path("repo/lowerfile"))
		assert.ErrorIs(t, err, syscall.ENOENT)
		fi, err := os.Stat(w.path("repo/a.txt"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		assert.Equal(t, uint64(2), fi.Sys().(*syscall.Stat_t).Nlink)
		a, err := w.ov.Stat(context.Background(), "dir2/sub/g.txt")
		require.NoError(t, err)
		assert.Equal(t, int64(len("dir1 sub g\n")), a.Size)

		changes, err := w.ov.Changes(context.Background())
		require.NoError(t, err)
		var got []string
		for _, c := range changes {
			got = append(got, fmt.Sprintf("%s %s %s", c.Kind, c.Path, c.From))
		}
		assert.Equal(t, []string{
			"modified a.txt ", "deleted dir1 ", "added dir2 dir1", "added f ", "added hard a.txt", "deleted lowerfile ",
		}, got, "the changes the shell made")

		// A rename out of the overlay crosses mounts: EXDEV, and mv copies.
		assert.ErrorIs(t, syscall.Rename(w.path("repo/f"), w.path("memory/f")), syscall.EXDEV)
		out, err = exec.Command("mv", w.path("repo/dir2"), w.path("memory/dir2")).CombinedOutput()
		require.NoError(t, err, "mv across mounts: %s", out)
		assert.Equal(t, "dir1 sub g\n", readFile(t, w.path("memory/dir2/sub/g.txt")))
		_, err = os.Stat(w.path("repo/dir2"))
		assert.ErrorIs(t, err, syscall.ENOENT)
	})
}

// TestOverlayOpenFiles: files of the commit opened through the kernel keep
// working as on a local file system when their name goes (unlink, rename
// over) and when their content changes by name or through the library.
// On a copy-on-write connection the kernel opens files without telling
// the server, which then serves such files from ones it pinned or cached.
func TestOverlayOpenFiles(t *testing.T) {
	overlayConnections(t, func(t *testing.T, opts fusefs.Options) {
		w := newOverlayWorkspace(t, overlayRepo(t), opts)
		pread := func(f *os.File, n int) string {
			t.Helper()
			buf := make([]byte, n)
			k, err := f.ReadAt(buf, 0)
			if !errors.Is(err, io.EOF) {
				require.NoError(t, err)
			}
			return string(buf[:k])
		}

		t.Run("read after unlink", func(t *testing.T) {
			f, err := os.Open(w.path("repo/lowerfile"))
			require.NoError(t, err)
			defer f.Close()
			require.NoError(t, os.Remove(w.path("repo/lowerfile")))
			assert.Equal(t, "to be removed\n", pread(f, 100))
			var st syscall.Stat_t
			require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
			assert.Zero(t, st.Nlink)
		})
		t.Run("write after unlink", func(t *testing.T) {
			f, err := os.OpenFile(w.path("repo/dir1/f.txt"), os.O_RDWR, 0)
			require.NoError(t, err)
			defer f.Close()
			_, err = f.WriteAt([]byte("X"), 0)
			require.NoError(t, err)
			require.NoError(t, os.Remove(w.path("repo/dir1/f.txt")))
			_, err = f.WriteAt([]byte("Y"), 1)
			require.NoError(t, err)
			assert.Equal(t, "XYr1 f\n", pread(f, 100))
			require.NoError(t, f.Sync())
		})
		t.Run("read after rename over", func(t *testing.T) {
			f, err := os.Open(w.path("repo/README.md"))
			require.NoError(t, err)
			defer f.Close()
			require.NoError(t, os.Rename(w.path("repo/run.sh"), w.path("repo/README.md")))
			assert.Equal(t, "# overlay\n", pread(f, 100))
			assert.Equal(t, "#!/bin/sh\necho hi\n", readFile(t, w.path("repo/README.md")))
		})
		t.Run("truncate and rewrite by name", func(t *testing.T) {
			name := w.path("repo/dir1/sub/g.txt")
			assert.Equal(t, "dir1 sub g\n", readFile(t, name))
			require.NoError(t, os.Truncate(name, 4))
			require.NoError(t, os.Truncate(name, 8))
			// Out of the page cache, so the next read asks the
			// server, which must not answer from the commit's blob.
			f, err := os.Open(name)
			require.NoError(t, err)
			require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
			assert.Equal(t, "dir1\x00\x00\x00\x00", pread(f, 100))
			f.Close()
			require.NoError(t, os.WriteFile(name, []byte("new"), 0o644))
			assert.Equal(t, "new", readFile(t, name))
		})
		t.Run("library change", func(t *testing.T) {
			// Held open, so that the kernel keeps (and does not
			// forget) the inode across the change.
			f, err := os.Open(w.path("repo/a.txt"))
			require.NoError(t, err)
			defer f.Close()
			assert.Equal(t, "lower a\n", pread(f, 100))
			require.NoError(t, mounts.WriteFile(context.Background(), w.ov, "a.txt", []byte("from the tool face\n"), 0o644))
			w.srv.Invalidate("repo/a.txt")
			if opts.StackConnections {
				// The kernel reads the inode, not an open file of the
				// server's: the held file shows the change too.
				// (Through the main connection it keeps the handle
				// of what it opened, the commit's file, as an open
				// file of Linux's overlayfs does across a copy-up.)
				assert.Equal(t, "from the tool face\n", pread(f, 100))
			}
			assert.Equal(t, "from the tool face\n", readFile(t, w.path("repo/a.txt")))
		})
	})
}

// TestOverlayMountsTestThroughKernel runs the conformance suite with system
// calls in the overlay, each case in a new directory of a populated commit.
func TestOverlayMountsTestThroughKernel(t *testing.T) {
	overlayConnections(t, func(t *testing.T, opts fusefs.Options) {
		w := newOverlayWorkspace(t, overlayRepo(t), opts)
		mountstest.RunOS(t, w.path("repo"))
	})
}

// TestOverlayPOSIX runs go-fuse's POSIX checks in the overlay.
func TestOverlayPOSIX(t *testing.T) {
	overlayConnections(t, func(t *testing.T, opts fusefs.Options) {
		w := newOverlayWorkspace(t, overlayRepo(t), opts)
		runPOSIX(t, func(check string) string { return w.path("repo/posix-" + check) }, posixUnsupported)
	})
}

// TestOverlayDifferential applies one seeded random sequence of operations
// to a plain copy of a commit and, through the kernel, to the overlay over
// that commit, then compares every operation's outcome and the trees. A
// name that is renamed must show the number it had; the lower's names are
// what most operations pick, so they meet copy-up, whiteouts, opaque
// directories and redirects.
func TestOverlayDifferential(t *testing.T) {
	overlayConnections(t, func(t *testing.T, opts fusefs.Options) {
		const ops = 2000
		rng := diffRand(t)
		names := []string{"a", "b", "c", "d", "e"}

		// The commit: files and symlinks at random paths of those names.
		repo := filepath.Join(t.TempDir(), "repo")
		require.NoError(t, os.MkdirAll(repo, 0o755))
		for i := range 40 {
			parts := make([]string, 1+rng.IntN(3))
			for j := range parts {
				parts[j] = names[rng.IntN(len(names))]
			}
			p := filepath.Join(repo, filepath.Join(parts...))
			if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
				continue
			}
			if _, err := os.Lstat(p); err == nil {
				continue
			}
			if i%7 == 0 {
				require.NoError(t, os.Symlink(names[rng.IntN(len(names))], p))
				continue
			}
			require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte{byte('A' + i)}, 1+rng.IntN(5000)), 0o644))
			if i%5 == 0 {
				require.NoError(t, os.Chmod(p, 0o755))
			}
		}
		testutil.GitInit(t, repo)
		testutil.GitCommitAt(t, repo, gitWhen, nil, "random")
		ref := filepath.Join(t.TempDir(), "ref")
		out, err := exec.Command("cp", "-a", repo, ref).CombinedOutput()
		require.NoError(t, err, "cp: %s", out)
		require.NoError(t, os.RemoveAll(filepath.Join(ref, ".git")))
		w := newOverlayWorkspace(t, repo, opts)
		mnt := w.path("repo")
		require.Equal(t, treeOf(t, ref), treeOf(t, mnt), "the untouched overlay is the commit")

		tp := &treePicker{rng: rng, ref: ref, names: names}
		scan, pick, existing, fresh := tp.scan, tp.pick, tp.existing, tp.fresh
		type op struct {
			desc     string
			do       func(root string) error
			from, to string // a rename: to must then have from's number
		}
		gen := func() op {
			scan()
			p, q := existing(), fresh()
			switch k := rng.IntN(14); k {
			case 0, 1, 2:
				data := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(9000))
				off := int64(rng.IntN(20000))
				return op{desc: fmt.Sprintf("write %s @%d len %d", p, off, len(data)), do: func(root string) error {
					f, err := os.OpenFile(filepath.Join(root, p), os.O_WRONLY|os.O_CREATE, 0o644)
					if err != nil {
						return err
					}
					_, werr := f.WriteAt(data, off)
					return errors.Join(werr, f.Close())
				}}
			case 3:
				size := int64(rng.IntN(30000))
				return op{desc: fmt.Sprintf("truncate %s %d", p, size), do: func(root string) error { return os.Truncate(filepath.Join(root, p), size) }}
			case 4, 5:
				return op{desc: fmt.Sprintf("rename %s %s", p, q), from: p, to: q,
					do: func(root string) error { return os.Rename(filepath.Join(root, p), filepath.Join(root, q)) }}
			case 6:
				return op{desc: "unlink " + p, do: func(root string) error { return unix.Unlink(filepath.Join(root, p)) }}
			case 7, 8:
				p = fresh()
				return op{desc: "mkdir " + p, do: func(root string) error { return os.Mkdir(filepath.Join(root, p), 0o755) }}
			case 9:
				return op{desc: "rmdir " + p, do: func(root string) error { return unix.Rmdir(filepath.Join(root, p)) }}
			case 10:
				target := pick(names)
				p = fresh()
				return op{desc: fmt.Sprintf("symlink %s -> %s", p, target), do: func(root string) error { return os.Symlink(target, filepath.Join(root, p)) }}
			case 11:
				mode := fs.FileMode(rng.IntN(0o1000)) | 0o700
				return op{desc: fmt.Sprintf("chmod %s %o", p, mode), do: func(root string) error { return os.Chmod(filepath.Join(root, p), mode) }}
			case 12:
				// Rare: it takes whole lower subtrees away.
				if rng.IntN(4) != 0 {
					p = fresh()
					return op{desc: "mkdir " + p, do: func(root string) error { return os.Mkdir(filepath.Join(root, p), 0o755) }}
				}
				return op{desc: "rm -r " + p, do: func(root string) error { return os.RemoveAll(filepath.Join(root, p)) }}
			default:
				return op{desc: fmt.Sprintf("link %s %s", p, q), do: func(root string) error { return os.Link(filepath.Join(root, p), filepath.Join(root, q)) }}
			}
		}
		lino := func(name string) uint64 {
			var st unix.Stat_t
			if unix.Lstat(filepath.Join(mnt, name), &st) != nil {
				return 0
			}
			return st.Ino
		}
		var diverged []string
		succeeded, i := 0, 0
		// ops operations, and more while the tree is too small to be
		// worth comparing (a seed whose rm -r took most of it away), as
		// the last operation left it.
		for ; i < ops || (tp.small() && i < 4*ops); i++ {
			o := gen()
			before := uint64(0)
			if o.from != "" && filepath.Clean(o.from) != filepath.Clean(o.to) {
				before = lino(o.from)
			}
			want, got := errnoOf(o.do(ref)), errnoOf(o.do(mnt))
			if want != got {
				diverged = append(diverged, fmt.Sprintf("op %d %s: plain %v, mount %v", i, o.desc, want, got))
			}
			if want == nil {
				succeeded++
				if before != 0 && lino(o.to) != before {
					diverged = append(diverged, fmt.Sprintf("op %d %s: the number went from %d to %d", i, o.desc, before, lino(o.to)))
				}
			}
		}
		assert.Empty(t, diverged, "operations with different outcomes")
		want := treeOf(t, ref)
		t.Logf("%d of %d operations succeeded; %d entries in the final tree", succeeded, i, len(want))
		require.Greater(t, succeeded, i/4, "the sequence must mostly do things, not fail")
		require.Greater(t, len(want), 10, "the sequence must leave a tree worth comparing")
		// No waiting: every change went through the kernel, which
		// knows of it (the overlay changes only through this process).
		assert.Equal(t, want, treeOf(t, mnt), "the tree seen through the mount")
		changes, err := w.ov.Changes(context.Background())
		require.NoError(t, err)
		assert.NotEmpty(t, changes)
	})
}
