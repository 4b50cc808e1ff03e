package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/mounts/writablegit"
)

// wsEnv is a workspace of a writable git mount over a repository of many
// files on /repo and a memory mount on /memory.
type wsEnv struct {
	src    string
	commit string
	git    *gitfs.FS
	repo   *writablegit.FS
	mem    *memfs.FS
	ws     *checkpoint.Workspace
}

const repoFiles = 300

func newWS(t *testing.T) *wsEnv {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("the git program is needed:", err)
	}
	files := map[string]string{}
	for i := range repoFiles {
		files[fmt.Sprintf("src/d%d/f%d.txt", i%10, i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 20)
	}
	src, commit := testutil.GitRepo(t, files)
	e := &wsEnv{src: src, commit: commit}
	e.git, e.repo = openGit(t, src)
	e.mem = memfs.New(memfs.Options{})
	e.ws = newCheckpoints(t, e.repo, e.mem)
	return e
}

func openGit(t *testing.T, src string) (*gitfs.FS, *writablegit.FS) {
	t.Helper()
	return openGitOver(t, src, memfs.New(memfs.Options{}))
}

func openGitOver(t *testing.T, src string, upper mounts.FS) (*gitfs.FS, *writablegit.FS) {
	t.Helper()
	ctx := context.Background()
	g, err := gitfs.Open(ctx, gitfs.Options{Src: src, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	w, err := writablegit.New(ctx, g, upper, overlayfs.Options{})
	require.NoError(t, err)
	return g, w
}

func newCheckpoints(t *testing.T, repo *writablegit.FS, mem *memfs.FS) *checkpoint.Workspace {
	t.Helper()
	ws, err := checkpoint.New([]checkpoint.Mount{
		{Prefix: "/repo", Type: "git", Source: repo.Describe().Source, Commit: repo.BaseCommit(), Tree: repo, Export: repo},
		{Prefix: "/memory", Type: "memory", Source: "memory", Tree: mem},
	}, checkpoint.Options{})
	require.NoError(t, err)
	return ws
}

// fill writes a varied memory tree: a file of several chunks, an empty
// one, a symlink, a hard link, an xattr, a FIFO, nested directories.
func fill(t *testing.T, m mounts.FS) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, mounts.MkdirAll(ctx, m, "a/b/c", 0o750))
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320000 bytes: 5 chunks of 64 KiB
	big[70000] = 'X'
	require.NoError(t, mounts.WriteFile(ctx, m, "a/big.bin", big, 0o600))
	require.NoError(t, mounts.WriteFile(ctx, m, "a/b/c/empty", nil, 0o644))
	require.NoError(t, mounts.WriteFile(ctx, m, "notes.md", []byte("# notes\n"), 0o644))
	require.NoError(t, mounts.Symlink(ctx, m, "../notes.md", "a/link"))
	require.NoError(t, mounts.Link(ctx, m, "notes.md", "a/b/hard"))
	require.NoError(t, mounts.SetXattr(ctx, m, "notes.md", "user.tag", []byte("v"), 0))
	require.NoError(t, mounts.Mknod(ctx, m, "a/fifo", fs.ModeNamedPipe|0o644, 0))
}

// edit changes the writable git mount: edits, a deletion, a rename, a
// new file.
func edit(t *testing.T, w mounts.FS) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, w, "src/d1/f1.txt", []byte("edited\n"), 0o644))
	require.NoError(t, mounts.Unlink(ctx, w, "src/d2/f2.txt"))
	require.NoError(t, mounts.Rename(ctx, w, "src/d3", "src/moved", 0))
	require.NoError(t, mounts.WriteFile(ctx, w, "NEW.md", []byte("new file\n"), 0o644))
}

// describeTree lists every name of fsys with what a restore must keep:
// type and mode, size, mtime, inode (hard links), target, content, xattrs.
func describeTree(t *testing.T, fsys mounts.FS) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	var walk func(name string)
	walk = func(name string) {
		a, err := fsys.Stat(ctx, name)
		require.NoError(t, err)
		line := fmt.Sprintf("%s %v size=%d mtime=%d ino=%d uid=%d", name, a.Mode, a.Size, a.Mtime.UnixNano(), a.Ino, a.Uid)
		switch a.Mode.Type() {
		case fs.ModeSymlink:
			target, err := fsys.ReadLink(ctx, name)
			require.NoError(t, err)
			line += " -> " + target
		case 0:
			b, err := mounts.ReadFile(ctx, fsys, name)
			require.NoError(t, err)
			line += fmt.Sprintf(" sha=%s", sum(b)[:12])
		}
		if a.Mode.Type() == 0 || a.Mode.IsDir() {
			xs, _ := mounts.ListXattr(ctx, fsys, name)
			for _, x := range xs {
				v, _ := mounts.GetXattr(ctx, fsys, name, x)
				line += fmt.Sprintf(" %s=%q", x, v)
			}
		}
		out = append(out, line)
		if a.Mode.IsDir() {
			ents, err := fsys.ReadDir(ctx, name)
			require.NoError(t, err)
			for _, e := range ents {
				walk(path.Join(name, e.Name))
			}
		}
	}
	walk(".")
	return out
}

func openSmall(t *testing.T, srv *testutil.S3Server, prefix string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{URL: "s3://" + testBucket + "/" + prefix, Endpoint: srv.Endpoint,
		MaxAttempts: 3, CacheDir: t.TempDir(), ChunkSize: 64 << 10})
	require.NoError(t, err)
	return s
}

// openObjects is openSmall with every chunk an object of its own (no
// packs), for the tests of what happens to one chunk object.
func openObjects(t *testing.T, srv *testutil.S3Server, prefix string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{URL: "s3://" + testBucket + "/" + prefix, Endpoint: srv.Endpoint,
		MaxAttempts: 3, CacheDir: t.TempDir(), ChunkSize: 64 << 10, PackBelow: -1})
	require.NoError(t, err)
	return s
}

func acquire(t *testing.T, s *Store, name, holder string) *Session {
	t.Helper()
	ss, err := s.Acquire(context.Background(), name, AcquireOptions{Holder: holder})
	require.NoError(t, err)
	return ss
}

// TestPushResume pushes a checkpoint of both mounts, and resumes it with
// another client and an empty cache: the memory tree is the checkpoint's
// in every attribute, the writable git mount over the same commit shows
// its changes; only the git mount's changes were sent, not its files.
func TestPushResume(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s := openSmall(t, srv, "p")
	e := newWS(t)
	fill(t, e.mem)
	edit(t, e.repo)
	c1, err := e.ws.Create(ctx, "first")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "after", []byte("not in c1"), 0o644))

	ss := acquire(t, s, "ws1", "node-a")
	res, err := ss.Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Ref.Seq)
	assert.Equal(t, res.Uploaded, res.Chunks, "a first push uploads every chunk")
	assert.Greater(t, res.Sent, res.Changed, "sent = chunks + manifest + head")

	m, err := s.Manifest(ctx, res.Ref.Manifest)
	require.NoError(t, err)
	repo, ok := (&Resumed{Manifest: m}).Mount("/repo")
	require.True(t, ok)
	assert.Equal(t, LayerUpper, repo.Layer)
	assert.Equal(t, e.commit, repo.Commit)
	assert.Less(t, len(repo.Tree.Inodes), 30, "the upper holds the changes, not the %d files of the commit", repoFiles)

	// Another machine: another client, an empty cache.
	s2 := openSmall(t, srv, "p")
	r, err := s2.Resume(ctx, "ws1")
	require.NoError(t, err)
	assert.Equal(t, c1.ID, r.Ref.ID)
	mem2, err := r.Tree(ctx, "/memory", memfs.Options{})
	require.NoError(t, err)
	want, err := e.mem.CheckpointView(ctx, c1.ID)
	require.NoError(t, err)
	assert.Equal(t, describeTree(t, want), describeTree(t, mem2))

	up2, err := r.Tree(ctx, "/repo", memfs.Options{})
	require.NoError(t, err)
	require.NoError(t, r.CheckCommit("/repo", e.commit))
	_, repo2 := openGitOver(t, e.src, up2)
	wantRepo, err := e.repo.CheckpointView(ctx, c1.ID)
	require.NoError(t, err)
	assert.Equal(t, describeTree(t, wantRepo), describeTree(t, repo2))
	b, err := mounts.ReadFile(ctx, repo2, "src/d1/f1.txt")
	require.NoError(t, err)
	assert.Equal(t, "edited\n", string(b))
	_, err = repo2.Stat(ctx, "src/d2/f2.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	// The resumed mount is writable and diverges.
	require.NoError(t, mounts.WriteFile(ctx, repo2, "src/d4/f4.txt", []byte("resumed\n"), 0o644))

	// Lazily, with a third client: listable before any chunk is
	// fetched, the same tree once read.
	s3 := openSmall(t, srv, "p")
	r3, err := s3.Resume(ctx, "ws1")
	require.NoError(t, err)
	lazyMem, err := r3.LazyTree("/memory", memfs.Options{})
	require.NoError(t, err)
	ents, err := lazyMem.ReadDir(ctx, "a")
	require.NoError(t, err)
	assert.NotEmpty(t, ents)
	assert.Equal(t, 2, lazyMem.Pending(), "a/big.bin and notes.md (and its hard link) wait for their first read")
	assert.Zero(t, s3.cache.bytes(), "no chunk fetched yet")
	assert.Equal(t, describeTree(t, want), describeTree(t, lazyMem))
	lazyUp, err := r3.LazyTree("/repo", memfs.Options{})
	require.NoError(t, err)
	_, lazyRepo := openGitOver(t, e.src, lazyUp)
	require.NoError(t, lazyUp.LoadAll(ctx, 4))
	assert.Equal(t, describeTree(t, wantRepo), describeTree(t, lazyRepo))
}

// TestPushIncremental: a second push sends the changed files' chunks, the
// manifest and the head; nothing unchanged is read or sent again, and
// content another workspace of the store sent is not sent either.
func TestPushIncremental(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s := openSmall(t, srv, "p")
	e := newWS(t)
	for i := range 50 {
		require.NoError(t, mounts.WriteFile(ctx, e.mem, fmt.Sprintf("f%02d", i), bytes.Repeat([]byte{byte(i)}, 10000), 0o644))
	}
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	ss := acquire(t, s, "inc", "node-a")
	r1, err := ss.Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	assert.Equal(t, 50, r1.Read)

	for i := range 3 {
		require.NoError(t, mounts.WriteFile(ctx, e.mem, fmt.Sprintf("f%02d", i), bytes.Repeat([]byte{byte(100 + i)}, 10000), 0o644))
	}
	edit(t, e.repo)
	c2, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	r2, err := ss.Push(ctx, e.ws, c2.ID, PushOptions{})
	require.NoError(t, err)
	t.Logf("second push: read %d files, changed %d bytes, sent %d bytes, uploaded %d of %d chunks", r2.Read, r2.Changed, r2.Sent, r2.Uploaded, r2.Chunks)
	assert.Equal(t, 2, r2.Ref.Seq)
	assert.Equal(t, 3+2, r2.Read, "3 memory files and the 2 written in the git mount")
	assert.Equal(t, int64(30000+len("edited\n")+len("new file\n")), r2.Changed)
	assert.Equal(t, 5, r2.Uploaded)
	assert.Less(t, r2.Sent, int64(30000+40000), "the manifest and head are small next to 500 KB unchanged")

	// Another workspace of the same content sends no chunk.
	e2 := newWS(t)
	for i := range 50 {
		require.NoError(t, mounts.WriteFile(ctx, e2.mem, fmt.Sprintf("g%02d", i), bytes.Repeat([]byte{byte(i)}, 10000), 0o644))
	}
	c, err := e2.ws.Create(ctx, "")
	require.NoError(t, err)
	r3, err := acquire(t, s, "other", "node-b").Push(ctx, e2.ws, c.ID, PushOptions{})
	require.NoError(t, err)
	assert.Equal(t, 0, r3.Uploaded, "every chunk was in the store")

	// NAME@SEQ and NAME@ID both find a checkpoint.
	r, err := s.Resume(ctx, "inc@1")
	require.NoError(t, err)
	assert.Equal(t, c1.ID, r.Ref.ID)
	r, err = s.Resume(ctx, "inc@"+c2.ID)
	require.NoError(t, err)
	assert.Equal(t, 2, r.Ref.Seq)
	_, err = s.Resume(ctx, "inc@9")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, `workspace "inc" has no checkpoint 9`)
	_, err = s.Resume(ctx, "nosuch")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, `"nosuch"`)
}

// TestResumeOtherCommit: a checkpoint over one commit, resumed where the
// source serves another, is refused naming both.
func TestResumeOtherCommit(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s := openSmall(t, srv, "p")
	e := newWS(t)
	edit(t, e.repo)
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	_, err = acquire(t, s, "w", "a").Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	r, err := s.Resume(ctx, "w")
	require.NoError(t, err)
	other := strings.Repeat("ab", 20)
	err = r.CheckCommit("/repo", other)
	require.ErrorIs(t, err, ErrOtherCommit)
	assert.ErrorContains(t, err, e.commit)
	assert.ErrorContains(t, err, other)
	// The overlay refuses it too (the upper records its lower).
	newCommit := testutil.GitCommit(t, e.src, map[string]string{"x": "y"}, "another")
	up, err := r.Tree(ctx, "/repo", memfs.Options{})
	require.NoError(t, err)
	g, err := gitfs.Open(ctx, gitfs.Options{Src: e.src, Rev: newCommit, CacheDir: t.TempDir()})
	require.NoError(t, err)
	defer g.Close()
	_, err = writablegit.New(ctx, g, up, overlayfs.Options{})
	assert.ErrorIs(t, err, overlayfs.ErrOtherLower)
}

// TestNewerFormatRefused: a head naming a manifest of a newer format is
// refused, and the manifest is left as it was.
func TestNewerFormatRefused(t *testing.T) {
	ctx := context.Background()
	s, srv := openTest(t, "p")
	data := []byte(`{"format": 99, "workspace": "future", "mounts": []}`)
	h := sum(data)
	_, err := s.put(ctx, s.key(manifestKeyPart(h)), data, cond{ifNoneMatch: true})
	require.NoError(t, err)
	_, _, err = s.casHead(ctx, &Head{Workspace: "future", Checkpoints: []Ref{{Seq: 1, ID: "c1", Manifest: h}}}, "")
	require.NoError(t, err)
	_, err = s.Resume(ctx, "future")
	require.ErrorIs(t, err, ErrNewerFormat)
	assert.ErrorContains(t, err, "format 99")
	got, err := os.ReadFile(srv.ObjectPath(testBucket, "p/manifests/"+h))
	require.NoError(t, err)
	assert.Equal(t, data, got, "left untouched")

	// A head of a newer format is refused too.
	hd, _ := json.Marshal(map[string]any{"format": 7, "workspace": "later"})
	_, err = s.put(ctx, s.key(headKeyPart("later")), hd, cond{})
	require.NoError(t, err)
	_, err = s.Resume(ctx, "later")
	assert.ErrorIs(t, err, ErrNewerFormat)
	assert.False(t, errors.Is(err, ErrCorrupt))
}
