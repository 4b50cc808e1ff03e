package integration

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
	"github.com/vfsmount/vfsmount/union"
)

// The git mount through the kernel: the tree git would check out, byte for
// byte, read-only, with stable inode numbers.

const gitBigSize = 50 << 20

var gitWhen = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// gitBig is the large blob at HEAD: text, deltified against a longer
// earlier version.
func gitBig(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 128)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%09d %x pack me, delta me, read me at random offsets\n", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	return b.Bytes()[:n]
}

type gitRepo struct {
	dir, head string
	big       []byte
	when      time.Time // HEAD's committer time
}

// makeGitRepo builds the fixture of the issue: nested directories, an
// executable, symlinks (relative, absolute, dangling), a submodule entry,
// an empty blob, a 50 MiB blob, names with spaces and non-ASCII letters,
// and a history repacked into deltas.
func makeGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	write := func(name, content string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	testutil.GitInit(t, dir)
	big := gitBig(gitBigSize + 64<<10)
	write("data/big.bin", string(big), 0o644)
	var log strings.Builder
	var when time.Time
	for i := range 8 {
		when = gitWhen.Add(time.Duration(i) * time.Minute)
		for j := range 300 {
			fmt.Fprintf(&log, "entry %d.%d of a file that grows\n", i, j)
		}
		write("docs/changelog.txt", log.String(), 0o644)
		testutil.GitCommitAt(t, dir, when, nil, fmt.Sprint("commit ", i))
	}
	first := testutil.GitAt(t, dir, when, nil, "rev-parse", "HEAD")
	write("README.md", "# integration\n", 0o644)
	write("src/pkg/deep/deeper/leaf.go", "package deeper\n", 0o644)
	write("src/main.go", "package main\n\nfunc main() {}\n", 0o644)
	write("scripts/build.sh", "#!/bin/sh\nexit 0\n", 0o755)
	write("with space/ünïcödé naïve.txt", "non-ASCII\n", 0o644)
	write("empty", "", 0o644)
	for name, target := range map[string]string{
		"links/rel": "../src/main.go", "links/abs": "/etc/hostname", "links/dangling": "missing/target",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "links"), 0o755))
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	big = big[:gitBigSize]
	write("data/big.bin", string(big), 0o644)
	when = when.Add(time.Hour)
	testutil.GitAt(t, dir, when, nil, "add", "-A")
	testutil.GitAt(t, dir, when, nil, "update-index", "--add", "--cacheinfo", "160000,"+first+",third_party/sub")
	testutil.GitAt(t, dir, when, nil, "commit", "-q", "-m", "tree")
	testutil.GitAt(t, dir, when, nil, "repack", "-adfq")
	return &gitRepo{dir: dir, head: testutil.GitAt(t, dir, when, nil, "rev-parse", "HEAD"), big: big, when: when}
}

// gitMount serves repo at rev on /repo of a union (next to a memory
// mount), through the kernel, until unmount is called or the test ends.
// /repo is a connection of its own, as vfsmount mount serves it (see
// fusefs "# Connections").
type gitMount struct {
	dir     string
	srv     *fusefs.Server
	fsys    *gitfs.FS
	mounted bool
}

func mountGit(t *testing.T, repo *gitRepo) *gitMount {
	t.Helper()
	fusetest.Need(t)
	f, err := gitfs.Open(context.Background(), gitfs.Options{Src: repo.dir, CacheDir: t.TempDir(), CacheSize: 16 << 20})
	require.NoError(t, err)
	return mountGitFS(t, f)
}

// mountGitFS is mountGit of a git mount already open; the mount closes it.
func mountGitFS(t *testing.T, f *gitfs.FS) *gitMount {
	t.Helper()
	fusetest.Need(t)
	u, err := union.New(map[string]mounts.FS{"/repo": f, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	dir := t.TempDir()
	srv, err := fusefs.Mount(dir, u, fusefs.Options{StackConnections: true})
	if err != nil {
		f.Close()
		fusetest.MountFailed(t, err)
	}
	m := &gitMount{dir: dir, srv: srv, fsys: f, mounted: true}
	if below, err := fusefs.MountsBelow(dir); err != nil || len(below) != 1 {
		t.Fatalf("/repo is not a connection of its own: %v %v", below, err)
	}
	t.Cleanup(func() { m.unmount(t) })
	return m
}

func (m *gitMount) unmount(t *testing.T) {
	if !m.mounted {
		return
	}
	m.mounted = false
	if err := m.srv.Unmount(); err != nil {
		t.Errorf("unmount: %v", err)
		if st, _ := fusefs.Probe(m.dir); st != fusefs.StateNone {
			assert.NoError(t, fusefs.ForceUnmount(m.dir))
		}
	}
	m.fsys.Close()
}

func (m *gitMount) repo(name string) string { return filepath.Join(m.dir, "repo", name) }

// gitLsEntry is one line of git ls-tree -r -t.
type gitLsEntry struct{ mode, typ, oid string }

func gitLsTree(t *testing.T, repo *gitRepo) map[string]gitLsEntry {
	out := testutil.GitAt(t, repo.dir, repo.when, nil, "-c", "core.quotePath=false", "ls-tree", "-r", "-t", "-z", repo.head)
	m := map[string]gitLsEntry{}
	for _, line := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		meta, name, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		m[name] = gitLsEntry{f[0], f[1], f[2]}
	}
	return m
}

// walkMount lists every path below root, relative, with its lstat.
func gitWalk(t *testing.T, root string) map[string]os.FileInfo {
	m := map[string]os.FileInfo{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		m[rel] = fi
		return err
	}))
	return m
}

func TestGitThroughKernel(t *testing.T) {
	repo := makeGitRepo(t)
	m := mountGit(t, repo)
	want := gitLsTree(t, repo)
	got := gitWalk(t, m.repo("."))

	t.Run("the tree is git ls-tree", func(t *testing.T) {
		var wantNames, gotNames []string
		for name := range want {
			wantNames = append(wantNames, name)
		}
		for name := range got {
			gotNames = append(gotNames, name)
		}
		assert.ElementsMatch(t, wantNames, gotNames)
	})

	t.Run("modes, targets, times, blob ids", func(t *testing.T) {
		var paths []string
		for name, w := range want {
			fi := got[name]
			if !assert.NotNil(t, fi, name) {
				continue
			}
			assert.Equal(t, repo.when, fi.ModTime().UTC(), "%s: mtime is the committer time", name)
			switch w.mode {
			case "040000", "160000":
				assert.Equal(t, fs.ModeDir|0o755, fi.Mode(), name)
			case "100644":
				assert.Equal(t, fs.FileMode(0o644), fi.Mode(), name)
				paths = append(paths, name)
			case "100755":
				assert.Equal(t, fs.FileMode(0o755), fi.Mode(), name)
				paths = append(paths, name)
			case "120000":
				assert.Equal(t, fs.ModeSymlink, fi.Mode().Type(), name)
				target, err := os.Readlink(m.repo(name))
				require.NoError(t, err)
				assert.Equal(t, w.oid, gitBlobID([]byte(target)), "%s: target %q", name, target)
			}
		}
		// git hash-object reads every file from the mount.
		out := testutil.GitAt(t, repo.dir, repo.when, strings.NewReader(strings.Join(paths, "\n")+"\n"),
			"-C", m.repo("."), "hash-object", "--stdin-paths")
		for i, oid := range strings.Split(out, "\n") {
			assert.Equal(t, want[paths[i]].oid, oid, "git hash-object %s", paths[i])
		}
		sub, err := gitXattr(m.repo("third_party/sub"), "user.git.submodule")
		require.NoError(t, err)
		assert.Equal(t, testutil.GitAt(t, repo.dir, repo.when, nil, "rev-parse", "HEAD:third_party/sub"), sub)
		commit, err := gitXattr(m.repo("."), "user.git.commit")
		require.NoError(t, err)
		assert.Equal(t, repo.head, commit)
	})

	t.Run("byte for byte as git archive", func(t *testing.T) {
		ref := t.TempDir()
		archive := exec.Command("git", "-c", "tar.umask=022", "archive", "--format=tar", repo.head)
		archive.Dir = repo.dir
		tar := exec.Command("tar", "-x", "-C", ref)
		pipe, err := archive.StdoutPipe()
		require.NoError(t, err)
		tar.Stdin = pipe
		require.NoError(t, tar.Start())
		require.NoError(t, archive.Run())
		require.NoError(t, tar.Wait())
		out, err := exec.Command("diff", "-r", "--no-dereference", ref, m.repo(".")).CombinedOutput()
		assert.NoError(t, err, "diff -r against git archive:\n%s", out)
		refs := gitWalk(t, ref)
		assert.Len(t, got, len(refs))
		for name, r := range refs {
			if g := got[name]; assert.NotNil(t, g, name) {
				assert.Equal(t, r.Mode(), g.Mode(), "%s: mode as git archive extracts it", name)
				if r.Mode().IsRegular() {
					assert.Equal(t, r.ModTime(), g.ModTime(), "%s: mtime as git archive sets it", name)
				}
			}
		}
	})

	t.Run("random reads of the large blob", func(t *testing.T) {
		f, err := os.Open(m.repo("data/big.bin"))
		require.NoError(t, err)
		defer f.Close()
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 7))
				buf := make([]byte, 200<<10)
				for range 100 {
					off := r.Int64N(gitBigSize)
					n, err := f.ReadAt(buf, off)
					end := min(off+int64(len(buf)), gitBigSize)
					if err != nil && err != io.EOF {
						t.Errorf("ReadAt(%d): %v", off, err)
						return
					}
					if !assert.Equal(t, int(end-off), n) || !assert.True(t, bytes.Equal(repo.big[off:end], buf[:n]), "bytes at %d", off) {
						return
					}
				}
			}()
		}
		wg.Wait()
	})

	t.Run("writes are EROFS", func(t *testing.T) {
		tests := []struct {
			name string
			do   func() error
		}{
			{"create", func() error { return os.WriteFile(m.repo("new.txt"), []byte("x"), 0o644) }},
			{"open for writing", func() error {
				f, err := os.OpenFile(m.repo("README.md"), os.O_WRONLY, 0)
				if err == nil {
					f.Close()
				}
				return err
			}},
			{"truncate", func() error { return os.Truncate(m.repo("README.md"), 0) }},
			{"mkdir", func() error { return os.Mkdir(m.repo("d"), 0o755) }},
			{"mkdir in a submodule", func() error { return os.Mkdir(m.repo("third_party/sub/d"), 0o755) }},
			{"unlink", func() error { return os.Remove(m.repo("README.md")) }},
			{"rmdir", func() error { return syscall.Rmdir(m.repo("links")) }},
			{"rename", func() error { return os.Rename(m.repo("README.md"), m.repo("R.md")) }},
			{"symlink", func() error { return os.Symlink("README.md", m.repo("l")) }},
			{"chmod", func() error { return os.Chmod(m.repo("README.md"), 0o600) }},
			{"chtimes", func() error { return os.Chtimes(m.repo("README.md"), time.Now(), time.Now()) }},
			{"setxattr", func() error { return unix.Setxattr(m.repo("README.md"), "user.x", []byte("v"), 0) }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assert.ErrorIs(t, tt.do(), syscall.EROFS)
			})
		}
		assert.Equal(t, "# integration\n", readFile(t, m.repo("README.md")), "nothing changed")
	})

	t.Run("inode numbers survive a remount", func(t *testing.T) {
		inos := func(root string) map[string]uint64 {
			out := map[string]uint64{}
			for name, fi := range gitWalk(t, root) {
				out[name] = fi.Sys().(*syscall.Stat_t).Ino
			}
			return out
		}
		before := inos(m.repo("."))
		m.unmount(t)
		again := mountGit(t, repo)
		assert.Equal(t, before, inos(again.repo(".")))
		seen := map[uint64]string{}
		for name, n := range before {
			if other, dup := seen[n]; dup {
				t.Errorf("%s and %s share inode %d", name, other, n)
			}
			seen[n] = name
		}
	})
}

// TestGitMountsTestThroughKernel runs the conformance suite's read side
// with system calls against a git mount.
func TestGitMountsTestThroughKernel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a/b"), 0o755))
	files := map[string]string{"README.md": "# r\n", "a/b/deep.txt": "deep\n", "a/x y ü.txt": "name\n", "empty": ""}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	require.NoError(t, os.Symlink("a/b/deep.txt", filepath.Join(dir, "link")))
	testutil.GitInit(t, dir)
	testutil.GitCommitAt(t, dir, gitWhen, nil, "one")
	m := mountGit(t, &gitRepo{dir: dir})
	mountstest.RunOS(t, m.repo("."), mountstest.Caps(mounts.CapXattr|mounts.CapStatFS),
		mountstest.Expect(files), mountstest.ExpectSymlinks(map[string]string{"link": "a/b/deep.txt"}))
}

// TestGitBrokenObjectsThroughKernel: a blob missing from the repository
// and one that does not inflate fail with EIO for their own file only;
// the directory still lists, its other files read, the mount stays up.
func TestGitBrokenObjectsThroughKernel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
	for name, content := range map[string]string{"ok.txt": "fine\n", "gone.txt": "deleted\n", "bad.txt": "garbled\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "d", name), []byte(content), 0o644))
	}
	testutil.GitInit(t, dir)
	testutil.GitCommitAt(t, dir, gitWhen, nil, "one")
	object := func(name string) string {
		oid := testutil.GitAt(t, dir, gitWhen, nil, "rev-parse", "HEAD:d/"+name)
		return filepath.Join(dir, ".git", "objects", oid[:2], oid[2:])
	}
	require.NoError(t, os.Remove(object("gone.txt")))
	require.NoError(t, os.Chmod(object("bad.txt"), 0o644))
	require.NoError(t, os.WriteFile(object("bad.txt"), []byte("x\x9c not zlib at all"), 0o644))
	m := mountGit(t, &gitRepo{dir: dir})

	for range 2 {
		ents, err := os.ReadDir(m.repo("d"))
		require.NoError(t, err, "the directory lists")
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		assert.Equal(t, []string{"bad.txt", "gone.txt", "ok.txt"}, names)
		_, err = os.Stat(m.repo("d/gone.txt"))
		assert.ErrorIs(t, err, syscall.EIO, "a missing blob has no size")
		_, err = os.ReadFile(m.repo("d/bad.txt"))
		assert.ErrorIs(t, err, syscall.EIO, "a blob that does not inflate")
		b, err := os.ReadFile(m.repo("d/ok.txt"))
		require.NoError(t, err, "the mount stays up")
		assert.Equal(t, "fine\n", string(b))
	}
}

// TestGitBorrowingCloneThroughKernel: a clone made with --shared holds
// none of its objects; the mount reads them from its alternate. When the
// alternate that holds one file's blob is gone, that file is EIO and the
// rest of the tree is served.
func TestGitBorrowingCloneThroughKernel(t *testing.T) {
	fusetest.Need(t)
	root := t.TempDir()
	src := filepath.Join(root, "src")
	require.NoError(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	for name, content := range map[string]string{"a.txt": "alpha\n", "d/b.txt": "beta\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(content), 0o644))
	}
	testutil.GitInit(t, src)
	testutil.GitCommitAt(t, src, gitWhen, nil, "one")
	clone := filepath.Join(root, "clone")
	testutil.GitAt(t, root, gitWhen, nil, "clone", "-q", "--shared", src, clone)
	// One more blob, only in a second alternate, which then goes away.
	lone := filepath.Join(root, "lone.git")
	testutil.GitAt(t, root, gitWhen, nil, "init", "-q", "--bare", lone)
	require.NoError(t, os.WriteFile(filepath.Join(clone, "d", "borrowed.txt"), []byte("gone soon\n"), 0o644))
	testutil.GitAt(t, lone, gitWhen, nil, "hash-object", "-w", filepath.Join(clone, "d", "borrowed.txt"))
	alternates := filepath.Join(clone, ".git", "objects", "info", "alternates")
	first, err := os.ReadFile(alternates)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(alternates, append(first, filepath.Join(lone, "objects")+"\n"...), 0o644))
	testutil.GitCommitAt(t, clone, gitWhen, nil, "two")
	testutil.GitAt(t, clone, gitWhen, nil, "repack", "-adlq")
	require.NoError(t, os.Rename(lone, lone+".gone"))

	m := mountGit(t, &gitRepo{dir: clone})
	for _, name := range []string{"a.txt", "d/b.txt"} {
		b, err := os.ReadFile(m.repo(name))
		require.NoError(t, err, name)
		assert.Equal(t, testutil.GitAt(t, src, gitWhen, nil, "show", "HEAD:"+name), strings.TrimSpace(string(b)), name)
	}
	ents, err := os.ReadDir(m.repo("d"))
	require.NoError(t, err, "the directory lists")
	assert.Len(t, ents, 2)
	_, err = os.ReadFile(m.repo("d/borrowed.txt"))
	assert.ErrorIs(t, err, syscall.EIO, "its alternate is gone")
	b, err := os.ReadFile(m.repo("a.txt"))
	require.NoError(t, err, "the mount stays up")
	assert.Equal(t, "alpha\n", string(b))
}

func gitBlobID(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

func gitXattr(path, name string) (string, error) {
	buf := make([]byte, 256)
	n, err := unix.Getxattr(path, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// TestGitWorkspaceLifecycle: the stacked /repo connection of a vfsmount
// serving a git mount is cleared with the workspace after a kill -9, and
// unmounted with it by vfsmount umount.
func TestGitWorkspaceLifecycle(t *testing.T) {
	repo := makeGitRepo(t)
	dir := t.TempDir()
	args := []string{"--mount", "type=git,src=" + repo.dir + ",dst=/repo", "--mount", "type=memory,dst=/memory"}
	readme := filepath.Join(dir, "repo", "README.md")
	stacked := func(t *testing.T) {
		t.Helper()
		below, err := fusefs.MountsBelow(dir)
		require.NoError(t, err)
		require.Equal(t, []string{filepath.Join(dir, "repo")}, below, "/repo is a connection of its own")
		b, err := os.ReadFile(readme)
		require.NoError(t, err)
		require.Equal(t, "# integration\n", string(b))
	}

	d := startDaemon(t, dir, nil, args...)
	stacked(t)
	d.kill(t)
	code, _ := runVfsmount(t, "status", dir)
	assert.Equal(t, 1, code, "status of a stale mount")

	d = startDaemon(t, dir, nil, args...)
	d.logs(t, "cleared a stale FUSE mount")
	stacked(t)

	code, stderr := runVfsmount(t, "umount", dir)
	require.Equal(t, 0, code, stderr)
	select {
	case <-d.done:
		assert.NoError(t, d.err, "vfsmount exits 0 when unmounted from outside")
	case <-time.After(30 * time.Second):
		t.Fatalf("vfsmount still runs after umount:\n%s", d.stderr)
	}
	below, err := fusefs.MountsBelow(dir)
	require.NoError(t, err)
	assert.Empty(t, below)
	st, err := fusefs.Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, fusefs.StateNone, st)
}

// TestGitWorkspaceIncomplete: a workspace whose stacked /repo connection
// was unmounted by hand still answers through its main connection, but
// status calls it incomplete (exit 1), a new mount refuses it, and umount
// clears it.
func TestGitWorkspaceIncomplete(t *testing.T) {
	repo := makeGitRepo(t)
	dir := t.TempDir()
	args := []string{"--mount", "type=git,src=" + repo.dir + ",dst=/repo", "--mount", "type=memory,dst=/memory"}
	d := startDaemon(t, dir, nil, args...)
	status := func() (int, string) {
		t.Helper()
		var stdout bytes.Buffer
		cmd := exec.Command(vfsmountBinary(t), "status", dir)
		cmd.Stdout = &stdout
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stdout.String()
		}
		require.NoError(t, err)
		return 0, stdout.String()
	}
	code, out := status()
	require.Equal(t, 0, code, out)
	assert.Equal(t, dir+": live\n", out)

	require.NoError(t, unix.Unmount(filepath.Join(dir, "repo"), 0), "unmount /repo's connection by hand")
	b, err := os.ReadFile(filepath.Join(dir, "repo", "README.md"))
	require.NoError(t, err, "the main connection still serves /repo")
	assert.Equal(t, "# integration\n", string(b))
	code, out = status()
	assert.Equal(t, 1, code, "status of a workspace missing a stacked connection")
	assert.Equal(t, dir+": incomplete\n", out)

	code, stderr := runVfsmount(t, "mount", "--mount", "type=memory,dst=/memory", dir)
	assert.Equal(t, 1, code, "mount over an incomplete workspace")
	assert.Contains(t, stderr, "missing a stacked connection")
	select {
	case <-d.done:
		t.Fatalf("the running vfsmount was stopped: %v\n%s", d.err, d.stderr)
	default:
	}
	st, err := fusefs.Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, fusefs.StateIncomplete, st, "the running vfsmount's mount is left alone")

	code, stderr = runVfsmount(t, "umount", dir)
	require.Equal(t, 0, code, stderr)
	select {
	case <-d.done:
		assert.NoError(t, d.err, "vfsmount exits 0 when unmounted from outside")
	case <-time.After(30 * time.Second):
		t.Fatalf("vfsmount still runs after umount:\n%s", d.stderr)
	}
	code, out = status()
	assert.Equal(t, 2, code)
	assert.Equal(t, dir+": not mounted\n", out)
}

// TestGitTreePackThroughKernel: a mount whose cache directory holds its
// tree's pack (written by an index build of the same commit) serves its
// files through the kernel from the pack. The mount is of a blobless
// clone, offline: it has no blob to decode, so every file read whole and
// right comes from the pack; without the pack the same read is EIO.
func TestGitTreePackThroughKernel(t *testing.T) {
	fusetest.Need(t)
	ctx := context.Background()
	src := t.TempDir()
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("d%d/f%02d.txt", i%4, i)] = strings.Repeat(fmt.Sprintf("file %d\n", i), 50+i)
	}
	testutil.WriteFiles(t, src, files)
	testutil.Git(t, src, "init", "-q")
	testutil.Git(t, src, "add", "-A")
	testutil.Git(t, src, "commit", "-qm", "files")
	testutil.Git(t, src, "config", "uploadpack.allowFilter", "true")
	clone := filepath.Join(t.TempDir(), "clone")
	testutil.Git(t, filepath.Dir(clone), "clone", "-q", "--filter=blob:none", "--no-checkout", "file://"+src, clone)

	cache := t.TempDir()
	full, err := gitfs.Open(ctx, gitfs.Options{Src: src, CacheDir: cache, Index: gitfs.IndexEager})
	require.NoError(t, err)
	ready, err := full.WaitIndex(ctx)
	require.NoError(t, err)
	require.True(t, ready)
	require.NoError(t, full.Close())

	f, err := gitfs.Open(ctx, gitfs.Options{Src: clone, CacheDir: cache, Offline: true})
	require.NoError(t, err)
	m := mountGitFS(t, f)
	for name, want := range files { // in map order, and a scan of each directory
		fi, err := os.Stat(m.repo(name))
		require.NoError(t, err)
		assert.Equal(t, int64(len(want)), fi.Size(), name)
		got, err := os.ReadFile(m.repo(name))
		require.NoError(t, err, name)
		assert.Equal(t, want, string(got), name)
	}
	m.unmount(t)

	packs, err := filepath.Glob(filepath.Join(cache, "blobs", "trees", "*.pack"))
	require.NoError(t, err)
	require.Len(t, packs, 1)
	require.NoError(t, os.Remove(packs[0]))
	f, err = gitfs.Open(ctx, gitfs.Options{Src: clone, CacheDir: cache, Offline: true})
	require.NoError(t, err)
	m = mountGitFS(t, f)
	_, err = os.ReadFile(m.repo("d0/f00.txt"))
	require.ErrorIs(t, err, syscall.EIO, "without the pack, an offline blobless clone has nothing to read")
}
