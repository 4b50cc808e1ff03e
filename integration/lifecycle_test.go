package integration

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
)

// The lifecycle tests run the real vfsmount binary as a child process and
// do to it what the world does to a daemon: kill -9, a second instance,
// callers killed mid-request, a tree too large for the kernel's caches. The
// test process only ever looks at the mount through system calls.

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

// vfsmountBinary builds cmd/vfsmount once per test run, or returns
// $VFSMOUNT_BINARY: a release candidate to test as it is.
func vfsmountBinary(t testing.TB) string {
	t.Helper()
	return testutil.Binary(t)
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer = testutil.Buffer

// daemon is a running `vfsmount mount`.
type daemon struct {
	dir    string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	err    error // valid once done is closed
}

// startDaemon runs `vfsmount mount ARGS... dir` and waits until the mount
// is live. The cleanup kills it and clears its mount if the test did not.
func startDaemon(t testing.TB, dir string, env []string, args ...string) *daemon {
	t.Helper()
	fusetest.Need(t)
	d := &daemon{dir: dir, stderr: &lockedBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(vfsmountBinary(t), append(append([]string{"mount"}, args...), dir)...)
	d.cmd.Stderr = d.stderr
	d.cmd.Env = append(os.Environ(), env...)
	require.NoError(t, d.cmd.Start())
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		d.kill(t)
		if st, _ := fusefs.Probe(dir); st != fusefs.StateNone {
			_ = fusefs.ForceUnmount(dir)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, _ := fusefs.Probe(dir); st == fusefs.StateLive {
			return d
		}
		select {
		case <-d.done:
			fusetest.MountFailed(t, fmt.Errorf("vfsmount exited before the mount was live (%v): %s", d.err, d.stderr))
		default:
		}
		if time.Now().After(deadline) {
			fusetest.MountFailed(t, errors.New("mount not live after 30s: "+d.stderr.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone. A daemon that
// cannot exit, because a thread of its own waits on its own mount (see
// fusefs.Abort), has its connections aborted, which lets it go; the
// test then fails, since that should not happen.
func (d *daemon) kill(t testing.TB) {
	t.Helper()
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
		return
	case <-time.After(30 * time.Second):
	}
	t.Errorf("vfsmount did not exit 30s after SIGKILL; aborting its FUSE connections")
	if err := fusefs.Abort(d.dir); err != nil {
		t.Errorf("abort: %v", err)
	}
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Errorf("vfsmount still there after the abort")
	}
}

// logs reports, within a few seconds, whether the daemon wrote line to
// its standard error: what it wrote reaches the buffer through a pipe,
// some time after it did.
func (d *daemon) logs(t testing.TB, line string, msgAndArgs ...any) bool {
	t.Helper()
	return assert.Eventually(t, func() bool { return strings.Contains(d.stderr.String(), line) },
		10*time.Second, 5*time.Millisecond, msgAndArgs...)
}

// stop sends SIGTERM and returns the exit code.
func (d *daemon) stop(t testing.TB) int {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("vfsmount did not exit after SIGTERM; stderr:\n%s", d.stderr)
	}
	var ee *exec.ExitError
	if errors.As(d.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, d.err)
	return 0
}

// alive reports whether the daemon still runs and serves its mount.
func (d *daemon) alive() bool {
	select {
	case <-d.done:
		return false
	default:
	}
	st, err := fusefs.Probe(d.dir)
	return err == nil && st == fusefs.StateLive
}

// runVfsmount runs the binary to completion: exit code and stderr.
func runVfsmount(t testing.TB, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(vfsmountBinary(t), args...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stderr.String()
}

// writeSynced writes a file and fsyncs it before closing.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// payload is deterministic content of varied size, so a file with another
// file's bytes or a torn tail shows.
func payload(seed, size int) []byte {
	b := make([]byte, size)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func TestPersistSurvivesKill9(t *testing.T) {
	fusetest.Need(t)
	dir := t.TempDir()
	store := filepath.Join(t.TempDir(), "memory.db")
	spec := "type=memory,dst=/memory,persist=" + store
	mem := func(name string) string { return filepath.Join(dir, "memory", name) }

	// synced is the model: every file whose last change was fsync'd.
	synced := map[string][]byte{}
	verify := func(t *testing.T, d *daemon, when string) {
		t.Helper()
		ok := true
		for name, want := range synced {
			got, err := os.ReadFile(mem(name))
			if ok = ok && assert.NoError(t, err, "%s: %s", when, name); ok {
				ok = assert.True(t, bytes.Equal(want, got), "%s: %s holds %d bytes, want %d (byte for byte)", when, name, len(got), len(want))
			}
		}
		if !ok {
			ents, err := os.ReadDir(mem("."))
			t.Logf("%s: the mount lists %d entries (%v); the daemon said:\n%s", when, len(ents), err, d.stderr)
		}
	}

	const cycles = 5
	for cycle := range cycles {
		d := startDaemon(t, dir, nil, "--mount", spec)
		if cycle > 0 {
			d.logs(t, "cleared a stale FUSE mount", "cycle %d: the mount after a kill -9 clears the stale one", cycle)
		}
		code, _ := runVfsmount(t, "status", dir)
		assert.Equal(t, 0, code, "status of a live mount")
		verify(t, d, fmt.Sprintf("after kill %d", cycle))

		// Synced changes of every kind: new files (large ones across
		// chunks too), rewrites, appends, a rename, a directory.
		sub := fmt.Sprintf("c%d", cycle)
		require.NoError(t, os.Mkdir(mem(sub), 0o755))
		for i := range 6 {
			name := fmt.Sprintf("%s/f%d", sub, i)
			data := payload(cycle*100+i, 1+i*i*37000)
			require.NoError(t, writeSynced(mem(name), data))
			synced[name] = data
		}
		if cycle > 0 {
			prev := fmt.Sprintf("c%d/f2", cycle-1)
			data := payload(cycle*1000, 5000)
			require.NoError(t, writeSynced(mem(prev), data))
			synced[prev] = data

			f, err := os.OpenFile(mem(fmt.Sprintf("c%d/f3", cycle-1)), os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			more := payload(cycle*1001, 777)
			_, err = f.Write(more)
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			require.NoError(t, f.Close())
			name := fmt.Sprintf("c%d/f3", cycle-1)
			synced[name] = append(synced[name], more...)

			from, to := fmt.Sprintf("c%d/f4", cycle-1), fmt.Sprintf("%s/renamed", sub)
			require.NoError(t, os.Rename(mem(from), mem(to)))
			synced[to] = synced[from]
			delete(synced, from)
			// An fsync makes every earlier change durable, the rename
			// included.
			require.NoError(t, writeSynced(mem(sub+"/marker"), []byte(sub)))
			synced[sub+"/marker"] = []byte(sub)
		}

		// Unsynced writers keep going while the daemon is killed.
		var wg sync.WaitGroup
		var wrote atomic.Int64
		stop := make(chan struct{})
		for w := range 3 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					name := mem(fmt.Sprintf("%s/unsynced-%d-%d", sub, w, i))
					if os.WriteFile(name, payload(i, 20000), 0o644) != nil {
						return // the mount died under us
					}
					wrote.Add(1)
				}
			})
		}
		require.Eventually(t, func() bool { return wrote.Load() > 10 }, 10*time.Second, 5*time.Millisecond)
		d.kill(t)
		close(stop)
		wg.Wait()

		code, _ = runVfsmount(t, "status", dir)
		assert.Equal(t, 1, code, "status of a stale mount")
	}

	// A clean stop keeps unsynced changes too.
	d := startDaemon(t, dir, nil, "--mount", spec)
	verify(t, d, "after the last kill")
	require.NoError(t, os.WriteFile(mem("unsynced-before-sigterm"), []byte("kept"), 0o644))
	require.NoError(t, os.Mkdir(mem("dir-before-sigterm"), 0o700))
	assert.Equal(t, 0, d.stop(t), d.stderr.String())
	code, _ := runVfsmount(t, "status", dir)
	assert.Equal(t, 2, code, "status of no mount")

	d = startDaemon(t, dir, nil, "--mount", spec)
	verify(t, d, "after a clean stop")
	got, err := os.ReadFile(mem("unsynced-before-sigterm"))
	require.NoError(t, err)
	assert.Equal(t, "kept", string(got), "a clean unmount writes everything")
	fi, err := os.Stat(mem("dir-before-sigterm"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|0o700, fi.Mode())
	assert.Equal(t, 0, d.stop(t))
}

func TestPersistFileGuards(t *testing.T) {
	fusetest.Need(t)
	base := t.TempDir()
	store := filepath.Join(base, "memory.db")
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, "--mount", "type=memory,dst=/memory,persist="+store)

	other := t.TempDir()
	code, stderr := runVfsmount(t, "mount", "--mount", "type=memory,dst=/m,persist="+store, other)
	assert.Equal(t, 1, code, "a second process on the same file")
	assert.Contains(t, stderr, "persist file "+store+" is in use by another vfsmount process")
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	st, _ := fusefs.Probe(other)
	assert.Equal(t, fusefs.StateNone, st, "nothing mounted")
	assert.True(t, d.alive(), "the first one is unharmed")
	assert.Equal(t, 0, d.stop(t))

	notOurs := filepath.Join(base, "notes.txt")
	require.NoError(t, os.WriteFile(notOurs, []byte("precious\n"), 0o600))
	tests := []struct {
		name, file, want string
	}{
		{"not ours", notOurs, "persist file " + notOurs + ": not a vfsmount memory store"},
		{"missing directory", filepath.Join(base, "nope", "m.db"), "persist file " + filepath.Join(base, "nope", "m.db") + ": its directory does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runVfsmount(t, "mount", "--mount", "type=memory,dst=/m,persist="+tt.file, other)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr, tt.want)
			st, _ := fusefs.Probe(other)
			assert.Equal(t, fusefs.StateNone, st)
		})
	}
	b, err := os.ReadFile(notOurs)
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(b), "left untouched")
}

func TestQuotaThroughKernel(t *testing.T) {
	fusetest.Need(t)
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, "--mount", "type=memory,dst=/memory,max_bytes=1M,max_files=5")
	mem := func(name string) string { return filepath.Join(dir, "memory", name) }

	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(mem("."), &st))
	assert.Equal(t, uint64(1<<20), st.Blocks*uint64(st.Bsize), "df shows the quota")
	assert.Equal(t, uint64(5), st.Files)

	data := payload(1, 3<<19) // 1.5 MiB
	f, err := os.Create(mem("big"))
	require.NoError(t, err)
	n, err := f.Write(data)
	assert.ErrorIs(t, err, syscall.ENOSPC, "writing past max_bytes")
	require.NoError(t, f.Close())
	got, err := os.ReadFile(mem("big"))
	require.NoError(t, err)
	assert.Equal(t, n, len(got), "the file holds what write(2) reported, no more")
	assert.True(t, bytes.Equal(data[:len(got)], got), "and the right bytes")
	assert.LessOrEqual(t, len(got), 1<<20)

	for i := range 4 {
		require.NoError(t, os.WriteFile(mem(fmt.Sprintf("f%d", i)), nil, 0o644))
	}
	assert.ErrorIs(t, os.WriteFile(mem("f4"), nil, 0o644), syscall.ENOSPC, "past max_files")
	assert.ErrorIs(t, os.Mkdir(mem("d"), 0o755), syscall.ENOSPC)
	assert.ErrorIs(t, os.Symlink("x", mem("l")), syscall.ENOSPC)

	// Freeing space makes room again, and the tree is whole. The
	// kernel sends the RELEASE of the ReadFile above after close(2) has
	// returned, and an unlinked file keeps its bytes until its last
	// handle goes (POSIX), so wait until df shows them freed.
	require.NoError(t, os.Remove(mem("big")))
	require.Eventually(t, func() bool {
		var st syscall.Statfs_t
		return syscall.Statfs(mem("."), &st) == nil && st.Bfree*uint64(st.Bsize) >= 1<<19
	}, 10*time.Second, time.Millisecond, "the space of the removed file is freed once its last handle is released")
	require.NoError(t, os.WriteFile(mem("after"), payload(2, 1000), 0o644))
	entries, err := os.ReadDir(mem("."))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"after", "f0", "f1", "f2", "f3"}, names)
	assert.True(t, d.alive())
	assert.Equal(t, 0, d.stop(t))
}

func TestCallersKilledMidRequest(t *testing.T) {
	fusetest.Need(t)
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, "--mount", "type=memory,dst=/memory")
	big := filepath.Join(dir, "memory", "big")
	want := payload(7, 64<<20)
	require.NoError(t, os.WriteFile(big, want, 0o644))

	for i := range 8 {
		// Readers with small blocks, so that the kill lands while a
		// READ is in flight or queued; writers likewise.
		var cmd *exec.Cmd
		if i%2 == 0 {
			cmd = exec.Command("dd", "if="+big, "of=/dev/null", "bs=4k")
		} else {
			cmd = exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(dir, "memory", "w"+strconv.Itoa(i)), "bs=4k", "count=100000")
		}
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(20+10*i) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		require.True(t, d.alive(), "after killing caller %d; stderr:\n%s", i, d.stderr)
	}
	got, err := os.ReadFile(big)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the file is intact")
	assert.NotContains(t, d.stderr.String(), "panic")
	assert.Equal(t, 0, d.stop(t))
}

// rssKiB reads a process's resident set size.
func rssKiB(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// dropCaches asks the kernel to drop its dentry and inode caches, which
// makes it send FORGET for every inode of the mount it no longer holds.
func dropCaches(t testing.TB) {
	t.Helper()
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0o200); err != nil {
		if fusetest.Required() {
			t.Fatalf("cannot drop caches: %v", err)
		}
		t.Skipf("cannot drop caches (needs root, and a writable /proc/sys): %v", err)
	}
}

func TestForgottenInodesAreFreed(t *testing.T) {
	fusetest.Need(t)
	// Build the tree straight into a persist file: much faster than
	// through the kernel, and the daemon then holds it from the start.
	store := filepath.Join(t.TempDir(), "tree.db")
	const dirs, files = 100, 400
	{
		s, err := boltstore.Open(store, boltstore.Options{})
		require.NoError(t, err)
		fsys, err := s.Load(memfs.Options{})
		require.NoError(t, err)
		for d := range dirs {
			dn := fmt.Sprintf("d%03d", d)
			require.NoError(t, fsys.Mkdir(bg, dn, 0o755))
			for f := range files {
				require.NoError(t, mounts.WriteFile(bg, fsys, fmt.Sprintf("%s/file-with-a-longish-name-%04d", dn, f), []byte("x"), 0o644))
			}
		}
		require.NoError(t, s.Close())
	}
	dir := t.TempDir()
	// GOGC=25 keeps the heap close to what is live, so RSS follows it.
	d := startDaemon(t, dir, []string{"GOGC=25"}, "--mount", "type=memory,dst=/memory,persist="+store)
	pid := d.cmd.Process.Pid

	walk := func() int {
		n := 0
		require.NoError(t, filepath.WalkDir(filepath.Join(dir, "memory"), func(path string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			_, err = os.Lstat(path)
			n++
			return err
		}))
		return n
	}
	dropCaches(t)
	time.Sleep(500 * time.Millisecond)
	base := rssKiB(t, pid)
	require.Equal(t, 1+dirs+dirs*files, walk())
	walked := rssKiB(t, pid)
	dropCaches(t)
	// The daemon frees the nodes as FORGETs arrive; its heap shrinks at
	// the next collections, which small requests trigger, and the runtime
	// gives the pages back to the OS in the background.
	var after int64
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, _ = os.ReadDir(filepath.Join(dir, "memory", "d000"))
		dropCaches(t)
		after = rssKiB(t, pid)
		if after-base < (walked-base)/4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("RSS: %d KiB loaded, %d KiB after walking %d names, %d KiB after dropping caches", base, walked, dirs*files, after)
	require.Greater(t, walked-base, int64(4<<10), "walking grows the daemon (else this test measures nothing)")
	assert.Less(t, after-base, (walked-base)/4, "forgotten inodes are freed: RSS returns near its baseline")
	assert.True(t, d.alive())
	assert.Equal(t, 0, d.stop(t))
}

// fullDiskChild is set in the child process of TestHostFullDisk.
const fullDiskChild = "VFSMOUNT_TEST_FULL_DISK_CHILD"

// TestHostFullDisk fills the file system under a host mount. A small tmpfs
// needs a mount namespace of its own, so the test re-runs itself in a child
// process with a private one: nothing it mounts is visible outside, and
// everything goes when it exits.
func TestHostFullDisk(t *testing.T) {
	fusetest.Need(t)
	if os.Getenv(fullDiskChild) == "1" {
		hostFullDisk(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostFullDisk$", "-test.v", "-test.timeout=120s")
	cmd.Env = append(os.Environ(), fullDiskChild+"=1")
	// Go makes / private (MS_REC|MS_PRIVATE) in the child for us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) && !fusetest.Required() {
		t.Skipf("no mount namespace for the small file system (unshare: %v)", err)
	}
	require.NoError(t, err, "child:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestHostFullDisk", "the child ran the test:\n%s", out)
}

func hostFullDisk(t *testing.T) {
	base := t.TempDir()
	src, mnt := filepath.Join(base, "src"), filepath.Join(base, "mnt")
	require.NoError(t, os.Mkdir(src, 0o755))
	require.NoError(t, os.Mkdir(mnt, 0o755))
	const size = 512 << 10
	require.NoError(t, syscall.Mount("tmpfs", src, "tmpfs", 0, fmt.Sprintf("size=%d", size)))
	t.Cleanup(func() { assert.NoError(t, syscall.Unmount(src, syscall.MNT_DETACH)) })
	require.NoError(t, os.WriteFile(filepath.Join(src, "before"), []byte("untouched"), 0o644))

	fsys, err := hostfs.Open(src, hostfs.Options{})
	require.NoError(t, err)
	srv, err := fusefs.Mount(mnt, fsys, fusefs.Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() { assert.NoError(t, srv.Unmount()) })

	data := payload(3, 2*size)
	f, err := os.Create(filepath.Join(mnt, "big"))
	require.NoError(t, err)
	n, err := f.Write(data)
	assert.ErrorIs(t, err, syscall.ENOSPC, "the host's ENOSPC comes through")
	assert.Less(t, n, size)
	require.NoError(t, f.Close())

	// Whatever write(2) reported is there, and nothing else changed; the
	// host sees the same bytes.
	for _, root := range []string{mnt, src} {
		got, err := os.ReadFile(filepath.Join(root, "big"))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(data[:n], got), "%s: %d bytes, want the %d reported", root, len(got), n)
		before, err := os.ReadFile(filepath.Join(root, "before"))
		require.NoError(t, err)
		assert.Equal(t, "untouched", string(before))
	}
	assert.ErrorIs(t, os.WriteFile(filepath.Join(mnt, "more"), data[:64<<10], 0o644), syscall.ENOSPC)

	// Room again once something goes: the mount never stopped serving.
	// The kernel releases closed files asynchronously, and tmpfs frees
	// an unlinked file's pages at its last close: allow for that.
	require.NoError(t, os.Remove(filepath.Join(mnt, "big")))
	require.Eventually(t, func() bool {
		return os.WriteFile(filepath.Join(mnt, "after"), data[:64<<10], 0o644) == nil
	}, 10*time.Second, 20*time.Millisecond, "space comes back")
	got, err := os.ReadFile(filepath.Join(mnt, "after"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data[:64<<10], got))
}

// mountMemory mounts a memory mount through the kernel in this process,
// persistent when store is not empty, and returns its directory.
func mountMemory(b *testing.B, store string) string {
	b.Helper()
	fusetest.Need(b)
	var fsys *memfs.FS
	if store == "" {
		fsys = memfs.New(memfs.Options{})
	} else {
		s, err := boltstore.Open(store, boltstore.Options{})
		require.NoError(b, err)
		fsys, err = s.Load(memfs.Options{})
		require.NoError(b, err)
		b.Cleanup(func() { assert.NoError(b, s.Close()) })
	}
	dir := b.TempDir()
	srv, err := fusefs.Mount(dir, fsys, fusefs.Options{})
	if err != nil {
		fusetest.MountFailed(b, err)
	}
	b.Cleanup(func() { assert.NoError(b, srv.Unmount()) })
	return dir
}

// BenchmarkPersist compares a memory mount with a persistent one through
// the kernel: the ratio of the two is the cost of durability.
func BenchmarkPersist(b *testing.B) {
	for _, kind := range []string{"memory", "persist"} {
		store := func(b *testing.B) string {
			if kind == "memory" {
				return ""
			}
			return filepath.Join(b.TempDir(), "bench.db")
		}
		b.Run("create-write-fsync-4KiB/"+kind, func(b *testing.B) {
			dir := mountMemory(b, store(b))
			data := payload(1, 4<<10)
			i := 0
			for b.Loop() {
				if err := writeSynced(filepath.Join(dir, "f"+strconv.Itoa(i)), data); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
		})
		b.Run("write-256MiB/"+kind, func(b *testing.B) {
			dir := mountMemory(b, store(b))
			block := payload(2, 1<<20)
			b.SetBytes(256 << 20)
			for b.Loop() {
				f, err := os.OpenFile(filepath.Join(dir, "big"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				for range 256 {
					if _, err := f.Write(block); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
