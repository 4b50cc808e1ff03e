package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

// storeConfig writes a config file whose store: section names the
// endpoint and a chunk cache of its own (each daemon its own, as on
// another machine).
func storeConfig(t *testing.T, endpoint, extra string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "vfsmount.yaml")
	body := "store:\n  endpoint: " + endpoint + "\n  cache: " + filepath.Join(dir, "chunks") + "\n" + extra
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// saysInLog waits until the daemon's log, copied from its stderr as it
// comes, holds want: a line written before the daemon answered a call
// may reach the test's copy after the answer.
func saysInLog(t *testing.T, c *child, want, why string) {
	t.Helper()
	assert.Eventually(t, func() bool { return strings.Contains(c.stderr.String(), want) }, 10*time.Second, 10*time.Millisecond,
		"%s; the log:\n%s", why, c.stderr.String())
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestE2EStoreMoveSession moves a session between two daemons through a
// real S3 server (versitygw), as a pod rescheduled on another node: daemon
// A pushes; daemon B is refused while A holds the workspace, takes it over,
// and A's next push fails (fenced); A is killed -9; B, in another
// directory with an empty chunk cache, serves the workspace as it was
// pushed: the writable git mount's changes over its commit, the memory
// mount. Then forks, the store's listing and gc.
func TestE2EStoreMoveSession(t *testing.T) {
	srv := testutil.StartS3(t, "vfsm")
	repo, _ := testutil.GitRepo(t, map[string]string{"a.txt": "one\n", "dir/b.txt": "bee\n", "gone.txt": "bye\n"})
	mounts := []string{"--mount", "type=git,src=" + repo + ",dst=/repo,writable", "--mount", "type=memory,dst=/memory"}
	mntA, mntB := t.TempDir(), t.TempDir()

	a := startMount(t, mntA, append([]string{"--config", storeConfig(t, srv.Endpoint, ""), "--store", "s3://vfsm/p/sess"}, mounts...)...)
	sh(t, mntA, `
		echo notes > memory/notes
		printf 'edited\n' > repo/a.txt
		rm repo/gone.txt
		mkdir -p memory/deep/er && echo x > memory/deep/er/f
	`)
	code, stdout, stderr := runBinary(t, "checkpoint", "push", mntA)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "s3://vfsm/p/sess@1", lastLine(stdout))
	assert.Contains(t, stdout, "pushed c1:")

	// B is refused while A holds the workspace: exit 1, naming A.
	cfgB := storeConfig(t, srv.Endpoint, "")
	code, _, stderr = runBinary(t, append([]string{"mount", "--config", cfgB, "--resume", "s3://vfsm/p/sess"}, append(mounts, mntB)...)...)
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stderr, "held by another writer")
	assert.Contains(t, stderr, ":"+strconv.Itoa(a.cmd.Process.Pid), "names the holder")
	st, _ := fusefs.Probe(mntB)
	assert.Equal(t, fusefs.StateNone, st, "nothing mounted")

	// B takes it over; A is fenced at its next push.
	start := time.Now()
	startMount(t, mntB, append([]string{"--config", cfgB, "--resume", "s3://vfsm/p/sess", "--take-over"}, mounts...)...)
	t.Logf("resume on an empty cache to a live mount: %v", time.Since(start))
	sh(t, mntA, `echo "after the take-over" > memory/notes`)
	code, _, stderr = runBinary(t, "checkpoint", "push", mntA)
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stderr, "taken over by another writer")
	saysInLog(t, a, "pushes stop", "A's log says it stopped writing to the store")

	// A dies; B serves what A pushed.
	require.NoError(t, a.cmd.Process.Kill())
	a.exitCode(t, 10*time.Second)
	_ = fusefs.ForceUnmount(mntA)
	assert.Equal(t, "notes\n", readFile(t, filepath.Join(mntB, "memory/notes")))
	assert.Equal(t, "x\n", readFile(t, filepath.Join(mntB, "memory/deep/er/f")))
	assert.Equal(t, "edited\n", readFile(t, filepath.Join(mntB, "repo/a.txt")))
	assert.Equal(t, "bee\n", readFile(t, filepath.Join(mntB, "repo/dir/b.txt")), "untouched files come from the commit")
	_, err := os.Stat(filepath.Join(mntB, "repo/gone.txt"))
	assert.True(t, os.IsNotExist(err), "the deletion came along: %v", err)
	out := sh(t, filepath.Join(mntB, "repo"), `git status --porcelain`)
	assert.Equal(t, " M a.txt\n D gone.txt\n", out, "git sees the same changes on B")

	// B pushes on.
	sh(t, mntB, `echo from-b > memory/b`)
	code, stdout, stderr = runBinary(t, "checkpoint", "push", mntB)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "s3://vfsm/p/sess@2", lastLine(stdout))

	// Forks, listing, gc.
	code, stdout, stderr = runBinary(t, "fork", "--endpoint", srv.Endpoint, "s3://vfsm/p/sess@1", "agent-1")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "as s3://vfsm/p/agent-1@1")
	code, _, stderr = runBinary(t, "fork", "--endpoint", srv.Endpoint, "s3://vfsm/p/sess@1", "agent-1")
	assert.Equal(t, exitFailure, code, "a fork over an existing name: %s", stderr)
	code, stdout, stderr = runBinary(t, "store", "ls", "--endpoint", srv.Endpoint, "s3://vfsm/p")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^agent-1\s+1\s+c1\s`, stdout)
	assert.Regexp(t, `(?m)^sess\s+2\s+c1\s`, stdout, "B numbers its own checkpoints from c1")
	code, stdout, stderr = runBinary(t, "store", "gc", "--endpoint", srv.Endpoint, "--grace", "0", "s3://vfsm/p")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "2 workspaces; deleted 1 of 3 manifests", "A's fenced push left a manifest no head names")

	// A checkpoint over another commit than the source now has: exit 1
	// naming both, nothing mounted.
	old := strings.TrimSpace(sh(t, repo, "git rev-parse HEAD"))
	newer := testutil.GitCommit(t, repo, map[string]string{"c.txt": "see\n"}, "another")
	mntC := t.TempDir()
	code, _, stderr = runBinary(t, append([]string{"mount", "--config", storeConfig(t, srv.Endpoint, ""), "--resume", "s3://vfsm/p/agent-1"}, append(mounts, mntC)...)...)
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stderr, "checkpoint is of another commit")
	assert.Contains(t, stderr, old)
	assert.Contains(t, stderr, newer)
	st, _ = fusefs.Probe(mntC)
	assert.Equal(t, fusefs.StateNone, st, "nothing mounted")
}

// TestE2EStoreBadInput: a bad URL exits 2, a missing bucket or workspace
// exits 1 naming it; nothing is mounted.
func TestE2EStoreBadInput(t *testing.T) {
	srv := testutil.StartS3(t, "vfsm")
	mnt := t.TempDir()
	mem := []string{"--mount", "type=memory,dst=/memory"}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--resume", "gs://vfsm/p/x"}, exitUsage, "unknown scheme"},
		{[]string{"--store", "s3://vfsm/p/x@3"}, exitUsage, "not a checkpoint"},
		{[]string{"--store-endpoint", srv.Endpoint, "--resume", "s3://vfsm/p/nosuch"}, exitFailure, `workspace "nosuch"`},
		{[]string{"--store-endpoint", srv.Endpoint, "--store", "s3://nobucket/p/x"}, exitFailure, "no such bucket"},
		{[]string{"--store-endpoint", "http://127.0.0.1:1", "--store", "s3://vfsm/p/x"}, exitFailure, "unreachable"},
		{[]string{"--sync", "30s"}, exitUsage, "need a store"},
	} {
		code, _, stderr := runBinary(t, append(append([]string{"mount"}, tc.args...), append(mem, mnt)...)...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
		st, _ := fusefs.Probe(mnt)
		assert.Equal(t, fusefs.StateNone, st, "%v: nothing mounted", tc.args)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	code, _, stderr := runBinary(t, "store", "ls", "--endpoint", srv.Endpoint, "s3://vfsm/p")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "refused the credentials")
}

// TestE2EStoreSyncSurvivesKill: with --sync, a daemon killed -9 loses at
// most the interval: what was written a sync before the kill resumes on
// another daemon; a clean unmount pushes everything.
func TestE2EStoreSyncSurvivesKill(t *testing.T) {
	srv := testutil.StartS3(t, "vfsm")
	mem := []string{"--mount", "type=memory,dst=/memory"}
	mntA, mntB, mntC := t.TempDir(), t.TempDir(), t.TempDir()
	a := startMount(t, mntA, append([]string{"--config", storeConfig(t, srv.Endpoint, ""), "--store", "s3://vfsm/p/s", "--sync", "1s"}, mem...)...)
	sh(t, mntA, `echo early > memory/early`)
	written := time.Now()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(a.stderr.String(), "store: pushed") {
		require.True(t, time.Now().Before(deadline), "no sync push: %s", a.stderr.String())
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("synced %v after the write", time.Since(written).Round(time.Millisecond))
	require.NoError(t, a.cmd.Process.Kill())
	a.exitCode(t, 10*time.Second)
	_ = fusefs.ForceUnmount(mntA)

	b := startMount(t, mntB, append([]string{"--config", storeConfig(t, srv.Endpoint, ""), "--resume", "s3://vfsm/p/s", "--take-over", "--sync", "1h"}, mem...)...)
	assert.Equal(t, "early\n", readFile(t, filepath.Join(mntB, "memory/early")), "a sync before the kill came along")
	sh(t, mntB, `echo late > memory/late`)
	// A clean unmount pushes what changed since the last push.
	require.NoError(t, b.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 0, b.exitCode(t, 30*time.Second), b.stderr.String())

	startMount(t, mntC, append([]string{"--config", storeConfig(t, srv.Endpoint, ""), "--resume", "s3://vfsm/p/s"}, mem...)...)
	assert.Equal(t, "late\n", readFile(t, filepath.Join(mntC, "memory/late")), "pushed at the clean unmount; the lease was let go")
}

// TestE2EStoreStatusBehind: vfsmount status has a store section: not
// behind while pushes go through; with the server killed, once a sync push
// failed, behind, with the error, while the workspace works on locally;
// with the server back, caught up. A workspace without a store has no
// such section.
func TestE2EStoreStatusBehind(t *testing.T) {
	srv := testutil.StartS3(t, "vfsm")
	mnt := t.TempDir()
	startMount(t, mnt, "--config", storeConfig(t, srv.Endpoint, "  sync: 1s\n"), "--store", "s3://vfsm/p/st", "--mount", "type=memory,dst=/memory")
	status := func() string {
		t.Helper()
		code, stdout, stderr := runBinary(t, "status", mnt)
		require.Equal(t, 0, code, "a store behind leaves the mount live: %s", stderr)
		return stdout
	}
	waitStatus := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			out := status()
			if ok(out) {
				return out
			}
			require.True(t, time.Now().Before(deadline), "%s; status:\n%s", what, out)
			time.Sleep(100 * time.Millisecond)
		}
	}

	sh(t, mnt, `echo one > memory/a`)
	out := waitStatus("pushed", func(s string) bool {
		return strings.Contains(s, "last push: s3://vfsm/p/st@") && strings.Contains(s, "unpushed changes: no")
	})
	assert.Contains(t, out, mnt+": live\nstore: s3://vfsm/p/st\n  sync: 1s\n")
	assert.Contains(t, out, "  behind: no\n")
	assert.Contains(t, out, "  fenced: no\n")
	assert.NotContains(t, out, "last error")

	srv.Stop()
	sh(t, mnt, `echo "while down" > memory/a`)
	out = waitStatus("behind", func(s string) bool { return strings.Contains(s, "behind: yes") })
	assert.Contains(t, out, "unreachable", "names the cause")
	assert.Regexp(t, `failing since: \S+ \(.* ago, \d+ failed pushes\)`, out)
	assert.Contains(t, out, "unpushed changes: yes")
	assert.Contains(t, out, "fenced: no")
	assert.Equal(t, "while down\n", readFile(t, filepath.Join(mnt, "memory/a")), "the workspace works on locally")
	sh(t, mnt, `echo more > memory/b`)

	srv.Start()
	out = waitStatus("caught up", func(s string) bool {
		return strings.Contains(s, "behind: no") && strings.Contains(s, "unpushed changes: no")
	})
	assert.NotContains(t, out, "failing since")

	// A workspace without a store: the live line alone.
	plain := t.TempDir()
	startMount(t, plain, "--mount", "type=memory,dst=/memory")
	code, stdout, stderr := runBinary(t, "status", plain)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, plain+": live\n", stdout)
}

// TestE2EStorePull brings checkpoints of the store into running daemons
// (store.resume, vfsmount checkpoint pull): daemon A goes back to its
// first checkpoint, every kind of change undone and seen through the
// kernel; daemon B, writing another workspace, is refused A's while A
// holds it, takes it over, pushes its own first, and pushes A's on.
func TestE2EStorePull(t *testing.T) {
	srv := testutil.StartS3(t, "vfsm")
	repo, _ := testutil.GitRepo(t, map[string]string{"a.txt": "one\n", "dir/b.txt": "bee\n", "gone.txt": "bye\n"})
	mounts := []string{"--mount", "type=git,src=" + repo + ",dst=/repo,writable", "--mount", "type=memory,dst=/memory"}
	mntA, mntB := t.TempDir(), t.TempDir()
	a := startMount(t, mntA, append([]string{"--config", storeConfig(t, srv.Endpoint, ""), "--store", "s3://vfsm/p/sess"}, mounts...)...)
	sh(t, mntA, `
		echo one > memory/notes && chmod 600 memory/notes && touch -d 2001-02-03T04:05:06 memory/notes
		ln memory/notes memory/hard && ln -s notes memory/link
		mkdir -p memory/d/e && echo deep > memory/d/e/f
		printf 'edited\n' > repo/a.txt && rm repo/gone.txt
	`)
	want := sh(t, mntA, `stat -c '%n %A %s %Y %h' memory/notes memory/hard memory/d/e/f && readlink memory/link && cd repo && git status --porcelain`)
	code, stdout, stderr := runBinary(t, "checkpoint", "push", mntA)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "s3://vfsm/p/sess@1", lastLine(stdout))

	sh(t, mntA, `
		echo two > memory/notes && chmod 644 memory/notes && rm memory/link && ln -s d memory/link
		rm -r memory/d && echo new > memory/new
		printf 'again\n' > repo/a.txt && echo back > repo/gone.txt && echo x > repo/new.txt && rm repo/dir/b.txt
		cat memory/notes repo/a.txt repo/gone.txt >/dev/null
	`)
	code, stdout, stderr = runBinary(t, "checkpoint", "push", mntA)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "s3://vfsm/p/sess@2", lastLine(stdout))

	// A goes back to @1: through the kernel, as it was. Pulling the same
	// again changes nothing.
	code, stdout, stderr = runBinary(t, "checkpoint", "pull", mntA, "sess@1")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "s3://vfsm/p/sess@1", lastLine(stdout))
	assert.Contains(t, stdout, "resumed sess@1 (c1, taken ")
	code, stdout, stderr = runBinary(t, "checkpoint", "pull", mntA, "s3://vfsm/p/sess@1")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, ": 0 names changed in /memory, /repo")
	assert.Equal(t, want, sh(t, mntA, `stat -c '%n %A %s %Y %h' memory/notes memory/hard memory/d/e/f && readlink memory/link && cd repo && git status --porcelain`))
	assert.Equal(t, "one\n", readFile(t, filepath.Join(mntA, "memory/notes")))
	assert.Equal(t, sh(t, mntA, `stat -c %i memory/notes`), sh(t, mntA, `stat -c %i memory/hard`), "a hard link still")
	assert.Equal(t, "edited\n", readFile(t, filepath.Join(mntA, "repo/a.txt")))
	assert.Equal(t, "bee\n", readFile(t, filepath.Join(mntA, "repo/dir/b.txt")))
	for _, gone := range []string{"memory/new", "repo/gone.txt", "repo/new.txt"} {
		_, err := os.Lstat(filepath.Join(mntA, gone))
		assert.True(t, os.IsNotExist(err), "%s: %v", gone, err)
	}

	// B writes another workspace; A's is refused while A holds it.
	cfgB := storeConfig(t, srv.Endpoint, "")
	startMount(t, mntB, append([]string{"--config", cfgB, "--store", "s3://vfsm/p/other"}, mounts...)...)
	sh(t, mntB, `echo b > memory/b-only`)
	code, _, stderr = runBinary(t, "checkpoint", "pull", mntB, "sess")
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stderr, "held by another writer")
	assert.Equal(t, "b\n", readFile(t, filepath.Join(mntB, "memory/b-only")), "nothing changed")
	code, _, stderr = runBinary(t, "checkpoint", "pull", mntB, "nope")
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, `"nope"`)
	code, _, stderr = runBinary(t, "checkpoint", "pull", mntB, "s3://elsewhere/p/sess")
	assert.Equal(t, exitUsage, code, stderr)

	code, stdout, stderr = runBinary(t, "checkpoint", "pull", "--take-over", mntB, "sess")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "s3://vfsm/p/sess@2", lastLine(stdout), "the newest")
	assert.Equal(t, "two\n", readFile(t, filepath.Join(mntB, "memory/notes")))
	assert.Equal(t, "again\n", readFile(t, filepath.Join(mntB, "repo/a.txt")))
	_, err := os.Stat(filepath.Join(mntB, "memory/b-only"))
	assert.True(t, os.IsNotExist(err), "%v", err)
	assert.Equal(t, " M a.txt\n D dir/b.txt\n M gone.txt\n?? new.txt\n", sh(t, filepath.Join(mntB, "repo"), `git status --porcelain`))

	// A is fenced; B pushes to sess; B's own changes went to other first.
	sh(t, mntA, `echo late > memory/late`)
	code, _, stderr = runBinary(t, "checkpoint", "push", mntA)
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stderr, "taken over by another writer")
	saysInLog(t, a, "pushes stop", "A's log says it stopped writing to the store")
	code, stdout, stderr = runBinary(t, "checkpoint", "push", mntB)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "s3://vfsm/p/sess@3", lastLine(stdout))
	code, stdout, stderr = runBinary(t, "store", "ls", "--endpoint", srv.Endpoint, "s3://vfsm/p")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^other\s+1\s`, stdout, "B's own changes were pushed before it moved")
	assert.Regexp(t, `(?m)^sess\s+3\s`, stdout)
}

// TestE2EStoreTenForks: ten forks of one checkpoint resume side by side on
// ten mount points, each its own daemon, and diverge: each writes and
// pushes its own, and sees no other's.
func TestE2EStoreTenForks(t *testing.T) {
	srv := testutil.StartS3(t, "vfsm")
	mounts := []string{"--mount", "type=memory,dst=/memory"}
	base := t.TempDir()
	b := startMount(t, base, append([]string{"--config", storeConfig(t, srv.Endpoint, ""), "--store", "s3://vfsm/p/base"}, mounts...)...)
	sh(t, base, `mkdir memory/src && for i in $(seq 50); do echo "shared $i" > memory/src/f$i; done && echo base > memory/notes`)
	code, _, stderr := runBinary(t, "checkpoint", "push", base)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runBinary(t, "umount", base)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 0, b.exitCode(t, 30*time.Second), b.stderr.String())

	const n = 10
	mnts := make([]string, n)
	for i := range n {
		name := "fork" + strconv.Itoa(i)
		code, _, stderr := runBinary(t, "fork", "--endpoint", srv.Endpoint, "s3://vfsm/p/base@1", name)
		require.Equal(t, 0, code, stderr)
		mnts[i] = t.TempDir()
		startMount(t, mnts[i], append([]string{"--config", storeConfig(t, srv.Endpoint, ""), "--resume", "s3://vfsm/p/" + name}, mounts...)...)
	}
	for i, mnt := range mnts {
		assert.Equal(t, "base\n", readFile(t, filepath.Join(mnt, "memory/notes")))
		assert.Equal(t, "shared 7\n", readFile(t, filepath.Join(mnt, "memory/src/f7")))
		sh(t, mnt, "echo fork"+strconv.Itoa(i)+" > memory/notes && echo mine > memory/only"+strconv.Itoa(i))
		code, stdout, stderr := runBinary(t, "checkpoint", "push", mnt)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "s3://vfsm/p/fork"+strconv.Itoa(i)+"@2", lastLine(stdout))
	}
	for i, mnt := range mnts {
		assert.Equal(t, "fork"+strconv.Itoa(i)+"\n", readFile(t, filepath.Join(mnt, "memory/notes")))
		ents, err := os.ReadDir(filepath.Join(mnt, "memory"))
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		assert.Equal(t, []string{"notes", "only" + strconv.Itoa(i), "src"}, names, "no other fork's file")
	}
}
