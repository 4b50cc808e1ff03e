package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
	"github.com/vfsmount/vfsmount/union"
)

// peerCalls counts what the peer's mount is asked, so a test can tell a
// warm walk that crossed the link from one answered by the daemon.
type peerCalls struct {
	mounts.FS
	n     atomic.Int64 // every call but Stat and the quiet ones
	stats atomic.Int64 // Stat: the change stream's states are one too
	quiet atomic.Int64 // the read-ahead's

	mu    sync.Mutex
	opens map[string]int // by name, "quiet:" before a quiet open's
}

func (p *peerCalls) OpenQuiet(ctx context.Context, name string) (mounts.File, error) {
	p.quiet.Add(1)
	p.count("quiet:" + name)
	return p.FS.(mounts.QuietReadFS).OpenQuiet(ctx, name)
}

// count notes one open of a name ("quiet:" before it for a quiet one).
func (p *peerCalls) count(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opens == nil {
		p.opens = map[string]int{}
	}
	p.opens[key]++
}

// opened is how many times key was opened on the peer.
func (p *peerCalls) opened(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opens[key]
}

func (p *peerCalls) ReadDirQuiet(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	p.quiet.Add(1)
	return p.FS.(mounts.QuietReadFS).ReadDirQuiet(ctx, name)
}

func (p *peerCalls) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	p.stats.Add(1)
	return p.FS.Stat(ctx, name)
}

func (p *peerCalls) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	p.n.Add(1)
	return p.FS.ReadDir(ctx, name)
}

func (p *peerCalls) Open(ctx context.Context, name string) (mounts.File, error) {
	p.n.Add(1)
	p.count(name)
	return p.FS.Open(ctx, name)
}

func (p *peerCalls) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	p.n.Add(1)
	return mounts.OpenFile(ctx, p.FS, name, flag, perm)
}

func (p *peerCalls) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	p.n.Add(1)
	return mounts.Chmod(ctx, p.FS, name, mode)
}

func (p *peerCalls) Chown(ctx context.Context, name string, uid, gid int) error {
	p.n.Add(1)
	return mounts.Chown(ctx, p.FS, name, uid, gid)
}

func (p *peerCalls) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	p.n.Add(1)
	return mounts.Chtimes(ctx, p.FS, name, atime, mtime)
}

func (p *peerCalls) Unlink(ctx context.Context, name string) error {
	p.n.Add(1)
	return mounts.Unlink(ctx, p.FS, name)
}

func (p *peerCalls) Rmdir(ctx context.Context, name string) error {
	p.n.Add(1)
	return mounts.Rmdir(ctx, p.FS, name)
}

func (p *peerCalls) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	p.n.Add(1)
	return mounts.Mkdir(ctx, p.FS, name, perm)
}

func (p *peerCalls) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	p.n.Add(1)
	return mounts.Rename(ctx, p.FS, oldname, newname, flags)
}

// notifiedWorkspace is a remote mount on /workspace (its peer serving a
// host directory over in-process pipes) beside a memory mount, mounted
// through the kernel as the daemon mounts it (stacked connections), with
// the kernel's requests counted.
type notifiedWorkspace struct {
	ws, src string
	counts  *fusefs.RequestCounts
	calls   *peerCalls
	remote  *remotefs.FS

	mu     sync.Mutex
	conns  []net.Conn
	refuse bool
	// slow makes the peer's writes slow (slowWrites) from when it is set.
	slow atomic.Bool
}

func newNotifiedWorkspace(t *testing.T, fill func(src string)) *notifiedWorkspace {
	t.Helper()
	w := &notifiedWorkspace{src: t.TempDir(), counts: &fusefs.RequestCounts{}}
	if fill != nil {
		fill(w.src)
	}
	h, err := hostfs.Open(w.src, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.(*hostfs.FS).Close() })
	w.calls = &peerCalls{FS: h}
	dial := func(context.Context) (io.ReadWriteCloser, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.refuse {
			return nil, &net.OpError{Op: "dial", Net: "pipe", Err: io.ErrClosedPipe}
		}
		a, b := net.Pipe()
		w.conns = append(w.conns, b)
		go func() {
			_ = peer.Serve(context.Background(), b, b, slowWrites{w.calls, &w.slow}, peer.Options{Dir: w.src, Build: "test"})
			b.Close()
		}()
		return a, nil
	}
	r, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(dial), Source: "test-peer", Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { r.(*remotefs.FS).Close() })
	w.remote = r.(*remotefs.FS)
	u, err := union.New(map[string]mounts.FS{"/workspace": r, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	dir, srv := mountKernelWith(t, u, fusefs.Options{StackConnections: true, Counts: w.counts})
	// As the workspace relays them: the mount's names, under its prefix.
	r.(*remotefs.FS).OnChange(func(names ...string) {
		for i, n := range names {
			names[i] = mounts.Join("workspace", n)
		}
		srv.Invalidate(names...)
	})
	w.ws = filepath.Join(dir, "workspace")
	return w
}

// waitIdle waits until the remote mount reads nothing ahead and has
// handed every page it offered to the kernel face.
func (w *notifiedWorkspace) waitIdle(t *testing.T) {
	t.Helper()
	require.Eventually(t, w.remote.Idle, 30*time.Second, 5*time.Millisecond, "the read-ahead and its offers end")
}

// cut breaks the link; with refuse, the mount cannot dial again until
// cut is called with false.
func (w *notifiedWorkspace) cut(refuse bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refuse = refuse
	for _, c := range w.conns {
		c.Close()
	}
	w.conns = nil
}

// walk lists every directory below dir and stats every name, as ls -lR
// does, and returns the names seen.
func walk(t *testing.T, dir string) []string {
	t.Helper()
	var seen []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, err := os.Lstat(p); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		seen = append(seen, rel)
		return nil
	}))
	sort.Strings(seen)
	return seen
}

func fillTree(src string) {
	for d := range 20 {
		sub := filepath.Join(src, fmt.Sprintf("d%02d", d), "sub")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			panic(err)
		}
		for f := range 5 {
			for _, dir := range []string{filepath.Dir(sub), sub} {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", f)), []byte("content\n"), 0o644); err != nil {
					panic(err)
				}
			}
		}
	}
}

// A warm walk of a remote mount through the kernel (ls -lR) costs the
// kernel's requests of a local mount and nothing on the link: entries,
// attributes and listings are cached by the kernel until the change
// stream says otherwise, and the directories are opened without asking
// (no OPENDIR and RELEASEDIR per directory, which cost a warm git status
// in a 13,000-file checkout four times a native one's time).
func TestRemoteKernelWarmWalkRequests(t *testing.T) {
	w := newNotifiedWorkspace(t, fillTree)
	root, err := os.Stat(filepath.Dir(w.ws))
	require.NoError(t, err)
	ws, err := os.Stat(w.ws)
	require.NoError(t, err)
	require.NotEqual(t, root.Sys().(*syscall.Stat_t).Dev, ws.Sys().(*syscall.Stat_t).Dev,
		"the remote mount has a connection of its own")
	first := walk(t, w.ws)
	require.Len(t, first, 1+20*(2+2*5))
	walk(t, w.ws)
	before, calls, stats := w.counts.Snapshot(), w.calls.n.Load(), w.calls.stats.Load()
	require.Equal(t, first, walk(t, w.ws))
	got := w.counts.Snapshot().Sub(before)
	t.Logf("a warm walk of %d names: %v", len(first), got)
	for _, op := range []string{fusefs.OpOpendir, fusefs.OpReleasedir, fusefs.OpReaddir, fusefs.OpReaddirplus, fusefs.OpLookup} {
		assert.Zero(t, got[op], "%s requests on a warm walk", op)
	}
	assert.LessOrEqual(t, got.Waited(), uint64(4), "requests of a warm walk: %v", got)
	assert.Equal(t, calls, w.calls.n.Load(), "a warm walk asks the peer nothing")
	assert.Equal(t, stats, w.calls.stats.Load(), "a warm walk asks the peer nothing")
}

// A warm git status through the kernel face sends about what it would
// to a local mount: no request per directory, and on the link only the
// index lock's create and remove.
func TestRemoteKernelWarmGitStatusRequests(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "safe.directory=*"}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	w := newNotifiedWorkspace(t, func(src string) {
		fillTree(src)
		// Files older than the index: none is "racily clean", which git
		// would read again at every status.
		old := time.Now().Add(-time.Hour)
		if err := filepath.WalkDir(src, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Chtimes(p, old, old)
		}); err != nil {
			panic(err)
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "tree"}} {
			cmd := exec.Command("git", append([]string{"-C", src}, args...)...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				panic(fmt.Sprintf("git %v: %v: %s", args, err, out))
			}
		}
	})
	git(w.ws, "status") // refreshes the index's stat data as the mount shows it
	git(w.ws, "status")
	// The last status's removal of its lock may still be on its way to
	// the peer (write-behind): fsync of a directory waits for it.
	d, err := os.Open(filepath.Join(w.ws, ".git"))
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	d.Close()
	before, calls := w.counts.Snapshot(), w.calls.n.Load()
	require.Contains(t, git(w.ws, "status"), "nothing to commit, working tree clean")
	got := w.counts.Snapshot().Sub(before)
	t.Logf("a warm git status of 41 directories: %v; %d calls on the peer", got, w.calls.n.Load()-calls)
	for _, op := range []string{fusefs.OpOpendir, fusefs.OpReleasedir, fusefs.OpReaddir, fusefs.OpReaddirplus} {
		assert.Zero(t, got[op], "%s requests on a warm git status", op)
	}
	assert.LessOrEqual(t, got.Waited(), uint64(60), "requests of a warm git status: %v", got)
	// The lock: its create, the times this daemon gave it, its removal
	// (none waited for: write-behind); nothing else crosses the link
	// (the file opened to create it is closed there too, which the mount
	// does not count here).
	assert.LessOrEqual(t, w.calls.n.Load()-calls, int64(3), "calls on the peer of a warm git status")
}

// A listing the kernel keeps is dropped when the remote directory
// changes behind the daemon's back: a name made and a name removed on the
// remote machine show in the next ls, and so do the names of a file's
// new content.
func TestRemoteKernelListingChangedElsewhere(t *testing.T) {
	w := newNotifiedWorkspace(t, fillTree)
	d := filepath.Join(w.ws, "d03", "sub")
	list := func() []string {
		ents, err := os.ReadDir(d)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	require.Equal(t, []string{"f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"}, list())
	require.Equal(t, []string{"f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"}, list())

	src := filepath.Join(w.src, "d03", "sub")
	require.NoError(t, os.WriteFile(filepath.Join(src, "new.txt"), []byte("new\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(src, "f1.txt")))
	require.Eventually(t, func() bool {
		return fmt.Sprint(list()) == fmt.Sprint([]string{"f0.txt", "f2.txt", "f3.txt", "f4.txt", "new.txt"})
	}, 5*time.Second, 10*time.Millisecond, "the listing changed elsewhere is seen: %v", list())
	// The name the kernel had looked up is dropped by a notification of
	// its own, which may come just after the listing's.
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(d, "f1.txt"))
		return errors.Is(err, fs.ErrNotExist)
	}, 5*time.Second, 10*time.Millisecond, "a name removed elsewhere is gone")
	b, err := os.ReadFile(filepath.Join(d, "new.txt"))
	require.NoError(t, err)
	require.Equal(t, "new\n", string(b))

	// A directory made elsewhere, with files in it, is listed.
	require.NoError(t, os.MkdirAll(filepath.Join(src, "deeper"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "deeper", "x"), []byte("x"), 0o644))
	require.Eventually(t, func() bool {
		ents, err := os.ReadDir(filepath.Join(d, "deeper"))
		return err == nil && len(ents) == 1 && ents[0].Name() == "x"
	}, 5*time.Second, 10*time.Millisecond, "a directory made elsewhere is listed")
}

// When the link drops, what the kernel kept of the remote mount goes:
// a change made on the remote machine while the link was down shows once
// it is back, in a listing the kernel had cached and in a name it had
// looked up, not 30 seconds later; while it is down, the mount fails with
// EIO within the timeout rather than answering from what it kept.
func TestRemoteKernelLinkDropForgets(t *testing.T) {
	w := newNotifiedWorkspace(t, fillTree)
	d := filepath.Join(w.ws, "d05")
	walk(t, w.ws)
	walk(t, w.ws)
	b, err := os.ReadFile(filepath.Join(d, "f0.txt"))
	require.NoError(t, err)
	require.Equal(t, "content\n", string(b))

	w.cut(true)
	src := filepath.Join(w.src, "d05")
	require.NoError(t, os.WriteFile(filepath.Join(src, "while-down.txt"), []byte("down\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "f0.txt"), []byte("changed while down\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(src, "f1.txt")))
	require.Eventually(t, func() bool {
		_, err := os.ReadDir(d)
		return errors.Is(err, syscall.EIO)
	}, 5*time.Second, 10*time.Millisecond, "a listing while the link is down fails with EIO")

	w.cut(false)
	require.Eventually(t, func() bool {
		ents, err := os.ReadDir(d)
		if err != nil {
			return false
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return fmt.Sprint(names) == fmt.Sprint([]string{"f0.txt", "f2.txt", "f3.txt", "f4.txt", "sub", "while-down.txt"})
	}, 20*time.Second, 10*time.Millisecond, "the listing made while the link was down is seen once it is back")
	b, err = os.ReadFile(filepath.Join(d, "f0.txt"))
	require.NoError(t, err)
	assert.Equal(t, "changed while down\n", string(b))
	_, err = os.Stat(filepath.Join(d, "f1.txt"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// A directory the kernel lists for the first time, its files' content
// read ahead, has that content in the page cache by the time the listing
// ends: the READDIR that finds the end stores it before it answers, so
// a program that lists and then reads (tar) sends no READ, however soon
// it reads: here, the last of 300 files first.
func TestRemoteKernelListingEndStoresPages(t *testing.T) {
	const files = 300
	content := func(i int) string { return strings.Repeat(fmt.Sprintf("file %d\n", i), 100) }
	w := newNotifiedWorkspace(t, func(src string) {
		fillTree(src)
		if err := os.Mkdir(filepath.Join(src, "many"), 0o755); err != nil {
			panic(err)
		}
		for i := range files {
			if err := os.WriteFile(filepath.Join(src, "many", fmt.Sprintf("f%03d", i)), []byte(content(i)), 0o644); err != nil {
				panic(err)
			}
		}
	})
	_, err := os.ReadFile(filepath.Join(w.ws, "d00", "f0.txt"))
	require.NoError(t, err)
	w.waitIdle(t) // the tree read ahead, no directory but d00's way listed
	before := w.counts.Snapshot()
	ents, err := os.ReadDir(filepath.Join(w.ws, "many"))
	require.NoError(t, err)
	require.Len(t, ents, files)
	for i := files - 1; i >= 0; i-- {
		b, err := os.ReadFile(filepath.Join(w.ws, "many", ents[i].Name()))
		require.NoError(t, err)
		require.Equal(t, content(i), string(b))
	}
	got := w.counts.Snapshot().Sub(before)
	t.Logf("a directory listed, then its files read, last first: %v", got)
	assert.NotZero(t, got[fusefs.OpReaddirplus], "listed cold")
	assert.Zero(t, got[fusefs.OpRead]+got[fusefs.OpGetattr], "READs (and their GETATTRs) of files whose pages the listing stored")
}

// A cold read of the tree through the kernel face (tar) reads the small
// files' content from the page cache: what the read-ahead brought is
// stored there when the first file of a directory is opened, so their
// READs (and the GETATTRs a READ's access time costs) are not sent. A
// file changed elsewhere after its pages went in reads as changed.
func TestRemoteKernelColdReadFromPages(t *testing.T) {
	w := newNotifiedWorkspace(t, fillTree)
	walk(t, w.ws) // the listings, as tar lists each directory before its files
	_, err := os.ReadFile(filepath.Join(w.ws, "d00", "f0.txt"))
	require.NoError(t, err)
	// The read-ahead of the tree, started by that open, runs to its end.
	w.waitIdle(t)
	require.NotZero(t, w.calls.quiet.Load(), "the tree was read ahead")

	before := w.counts.Snapshot()
	files := 0
	require.NoError(t, filepath.WalkDir(w.ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if filepath.Base(p) == "f0.txt" {
			// The first file of a directory: the pages of the others
			// go in beside its open, from a goroutine.
			w.waitIdle(t)
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.ws, p)
		want, err := os.ReadFile(filepath.Join(w.src, rel))
		if err != nil {
			return err
		}
		if string(b) != string(want) {
			return fmt.Errorf("%s: read %q, the remote file has %q", rel, b, want)
		}
		files++
		return nil
	}))
	got := w.counts.Snapshot().Sub(before)
	t.Logf("a read of %d files read ahead: %v", files, got)
	require.Equal(t, 20*2*5, files)
	// The first file of each directory is read before its pages are in.
	dirs := uint64(20 * 2)
	assert.LessOrEqual(t, got[fusefs.OpRead], dirs+dirs/4, "READs of files whose content was read ahead")
	assert.LessOrEqual(t, got[fusefs.OpGetattr], dirs+dirs/4, "GETATTRs of files whose content was read ahead")

	// Pages in, then a change elsewhere: the change is read.
	name := filepath.Join("d07", "f3.txt")
	require.NoError(t, os.WriteFile(filepath.Join(w.src, name), []byte("changed elsewhere\n"), 0o644))
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(w.ws, name))
		return err == nil && string(b) == "changed elsewhere\n"
	}, 5*time.Second, 10*time.Millisecond, "a file changed after its pages went in reads as changed")
}

// slowWrites makes the writes through the files the peer opens while on
// is set slow (each answered writeDelay late), and those of a file named
// "*.full" fail with ENOSPC.
type slowWrites struct {
	*peerCalls
	on *atomic.Bool
}

const writeDelay = 50 * time.Millisecond

func (s slowWrites) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	f, err := s.peerCalls.OpenFile(ctx, name, flag, perm)
	if w, ok := f.(mounts.WritableFile); ok && err == nil && s.on.Load() {
		return &slowFile{WritableFile: w, full: filepath.Ext(name) == ".full"}, nil
	}
	return f, err
}

type slowFile struct {
	mounts.WritableFile
	full bool
}

func (f *slowFile) WriteAt(p []byte, off int64) (int, error) {
	time.Sleep(writeDelay) // the far machine's disk, or the link, being slow
	if f.full {
		return 0, syscall.ENOSPC
	}
	return f.WritableFile.WriteAt(p, off)
}

// Write-behind on a remote mount: a file a program creates and writes
// through the kernel is answered at once, and its close does not wait for
// the peer; what the program reads next through the mount is what it
// wrote, fsync of a directory is the barrier that puts every change made
// before it on the remote disk, and a write the peer refused is the error
// of the next fsync that covers it (the file's, the directory's), once.
func TestRemoteKernelWriteBehind(t *testing.T) {
	w := newNotifiedWorkspace(t, nil)
	w.slow.Store(true)
	data := make([]byte, 600<<10) // several WRITE requests
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	for i := range 3 {
		name := fmt.Sprintf("out%d.txt", i)
		require.NoError(t, os.WriteFile(filepath.Join(w.ws, name), data, 0o644))
		got, err := os.ReadFile(filepath.Join(w.ws, name)) // through the mount: what was written
		require.NoError(t, err)
		require.True(t, string(got) == string(data), "%s read back through the mount", name)
	}
	syncDir := func(dir string) error {
		d, err := os.Open(dir)
		require.NoError(t, err)
		defer d.Close()
		return d.Sync()
	}
	require.NoError(t, syncDir(w.ws))
	for i := range 3 {
		got, err := os.ReadFile(filepath.Join(w.src, fmt.Sprintf("out%d.txt", i))) // on the remote machine
		require.NoError(t, err)
		require.True(t, string(got) == string(data), "the remote file after fsync of the directory")
	}

	// Refused, closed: the directory's fsync says so, once.
	err := os.WriteFile(filepath.Join(w.ws, "disk.full"), data[:100], 0o644)
	if err == nil {
		err = syncDir(w.ws)
	}
	require.ErrorIs(t, err, syscall.ENOSPC, "the peer's refusal, at the directory's fsync")
	require.NoError(t, syncDir(w.ws), "an error is reported once")
	// Refused, open: the file's fsync says so.
	f, err := os.Create(filepath.Join(w.ws, "disk2.full"))
	require.NoError(t, err)
	_, err = f.Write(data[:100])
	if err == nil {
		err = f.Sync()
	}
	require.ErrorIs(t, err, syscall.ENOSPC, "the peer's refusal, at the file's fsync")
	f.Close()

	// The kernel opens and closes files without asking: neither a read
	// nor a write costs an OPEN, a FLUSH or a RELEASE.
	before := w.counts.Snapshot()
	for i := range 3 {
		got, err := os.ReadFile(filepath.Join(w.ws, fmt.Sprintf("out%d.txt", i)))
		require.NoError(t, err)
		require.Equal(t, len(data), len(got))
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, "out0.txt"), data[:10], 0o644))
	got := w.counts.Snapshot().Sub(before)
	assert.Zero(t, got[fusefs.OpOpen]+got[fusefs.OpFlush]+got[fusefs.OpRelease], "opens and closes asked: %v", got)
	require.NoError(t, syncDir(w.ws))
	b, err := os.ReadFile(filepath.Join(w.src, "out0.txt"))
	require.NoError(t, err)
	assert.Equal(t, string(data[:10]), string(b), "the file rewritten, on the remote machine")
}

// An archive unpacked through the kernel into a remote mount (tar as
// root: directories, files created, written, owned, their mode and times
// set) waits for the peer not once, however the change stream's reports
// of its own changes interleave with their answers; sync of the directory
// then puts all of it on the remote disk, as tar made it.
func TestRemoteKernelUntarWaitsForNothing(t *testing.T) {
	src := t.TempDir()
	for i := range 40 {
		name := filepath.Join(src, fmt.Sprintf("d%d/f%02d.txt", i%3, i))
		require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o750))
		require.NoError(t, os.WriteFile(name, []byte(strings.Repeat("line\n", i+1)), 0o640))
		require.NoError(t, os.Chtimes(name, time.Unix(1e9, 0), time.Unix(1e9+int64(i), 0)))
	}
	archive := filepath.Join(t.TempDir(), "a.tar")
	out, err := exec.Command("tar", "cf", archive, "-C", src, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	w := newNotifiedWorkspace(t, nil)
	_, err = os.ReadDir(w.ws) // a program lists where it works
	require.NoError(t, err)
	before := w.remote.Counts()
	require.NoError(t, os.Mkdir(filepath.Join(w.ws, "out"), 0o755))
	out, err = exec.Command("tar", "xf", archive, "-C", filepath.Join(w.ws, "out")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	after := w.remote.Counts()
	assert.Equal(t, before.Waited, after.Waited, "calls that waited for the peer")
	assert.Greater(t, after.Posted-before.Posted, int64(40*4), "changes posted: created, owned, mode, times, closed")

	out, err = exec.Command("sync", filepath.Join(w.ws, "out")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for i := range 40 {
		rel := fmt.Sprintf("d%d/f%02d.txt", i%3, i)
		st, err := os.Stat(filepath.Join(w.src, "out", rel))
		require.NoError(t, err, "on the remote disk after sync")
		assert.EqualValues(t, 5*(i+1), st.Size(), rel)
		assert.Equal(t, fs.FileMode(0o640), st.Mode().Perm(), rel)
		assert.Equal(t, time.Unix(1e9+int64(i), 0), st.ModTime(), rel)
	}
	// And through the mount, as the peer made it.
	st, err := os.Stat(filepath.Join(w.ws, "out/d1/f01.txt"))
	require.NoError(t, err)
	assert.Equal(t, time.Unix(1e9+1, 0), st.ModTime())
}

// A cold read through the kernel of a directory with large files (tar of
// a checkout: .git's index and packs) takes the files the read-ahead
// opened ahead, quietly, on the peer: the reader's open asks the peer
// nothing more, and what it reads is the file.
func TestRemoteKernelLargeFilesOpenedAhead(t *testing.T) {
	big := map[string][]byte{}
	w := newNotifiedWorkspace(t, func(src string) {
		if err := os.MkdirAll(filepath.Join(src, "d"), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(filepath.Join(src, "d/a.txt"), []byte("start"), 0o644); err != nil {
			panic(err)
		}
		for i, name := range []string{"d/big1", "d/big2"} {
			big[name] = bytes.Repeat([]byte{byte('p' + i)}, 3<<20+i)
			if err := os.WriteFile(filepath.Join(src, name), big[name], 0o644); err != nil {
				panic(err)
			}
		}
	})
	_, err := os.ReadDir(filepath.Join(w.ws, "d"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(w.ws, "d/a.txt"))
	require.NoError(t, err)
	require.Equal(t, "start", string(got))
	w.waitIdle(t)
	require.Eventually(t, func() bool {
		return w.calls.opened("quiet:d/big1") == 1 && w.calls.opened("quiet:d/big2") == 1
	}, 10*time.Second, time.Millisecond, "both large files opened ahead, quietly")
	for _, name := range []string{"d/big1", "d/big2"} {
		got, err := os.ReadFile(filepath.Join(w.ws, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(big[name], got), "%s through the kernel", name)
		assert.Zero(t, w.calls.opened(name), "%s: the reader took the file opened ahead", name)
	}
}

// A file a program writes through the kernel keeps its file on the peer
// when the remote machine changes it meanwhile (strategy.writersStay):
// its next write opens nothing there, and lands in the file it holds.
func TestRemoteKernelWriterStaysThroughAChangeElsewhere(t *testing.T) {
	w := newNotifiedWorkspace(t, fillTree)
	name := filepath.Join("d04", "f2.txt")
	f, err := os.OpenFile(filepath.Join(w.ws, name), os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("one"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())

	// Changed on the remote machine, then a marker the kernel holds the
	// attributes of: the kernel face is told of changes in order, so
	// once the marker's shows through the mount, the file's was taken in
	// whole.
	marker := filepath.Join("d04", "f3.txt")
	_, err = os.Stat(filepath.Join(w.ws, marker))
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Join(w.src, name), 0o600))
	require.NoError(t, os.Chmod(filepath.Join(w.src, marker), 0o600))
	require.Eventually(t, func() bool {
		st, err := os.Stat(filepath.Join(w.ws, marker))
		return err == nil && st.Mode().Perm() == 0o600
	}, 5*time.Second, 5*time.Millisecond, "the changes elsewhere are told")
	st, err := os.Stat(filepath.Join(w.ws, name))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm())

	calls := w.calls.n.Load()
	_, err = f.WriteAt([]byte("two"), 3)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	assert.Equal(t, calls, w.calls.n.Load(), "the write opened nothing on the peer")
	b, err := os.ReadFile(filepath.Join(w.src, name))
	require.NoError(t, err)
	assert.Equal(t, "onetwo", string(b[:6]))
}
