package main

import (
	"context"
	bbinary "encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

// lastLine is the last line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestE2ECheckpoint rewinds a shell command that edits, deletes and renames
// files in a writable git mount and a memory mount, through the kernel and
// the real binary, while a file is held open.
func TestE2ECheckpoint(t *testing.T) {
	repo, sha := testutil.GitRepo(t, map[string]string{
		"a.txt":     "one\n",
		"dir/b.txt": "bee\n",
		"gone.txt":  "bye\n",
	})
	host := t.TempDir()
	mnt := t.TempDir()
	startMount(t, mnt, "--mount", "type=git,src="+repo+",dst=/repo,writable",
		"--mount", "type=memory,dst=/memory", "--mount", "type=host,src="+host+",dst=/host")
	r, m := filepath.Join(mnt, "repo"), filepath.Join(mnt, "memory")
	sh(t, m, `echo first > notes; mkdir d; echo keep > d/k`)

	code, stdout, stderr := runBinary(t, "checkpoint", "create", mnt, "--name", "before the agent")
	require.Equal(t, 0, code, stderr)
	id := lastLine(stdout)
	assert.Equal(t, "c1", id)
	assert.Regexp(t, `(?m)^/host\s+not covered\s`, stdout, "the manifest says a host mount is not covered")
	assert.Regexp(t, `(?m)^/repo\s+frozen\s+copy-on-write over git@`, stdout)
	assert.Regexp(t, `(?m)^/memory\s+frozen\s`, stdout)
	assert.Contains(t, stdout, "(commit "+sha+")", "the manifest names the full commit")
	assert.Contains(t, stdout, host, "and the host directory")

	held, err := os.Open(filepath.Join(r, "a.txt"))
	require.NoError(t, err)
	defer held.Close()

	sh(t, mnt, `
		printf 'edited\n' > repo/a.txt
		rm repo/gone.txt
		mv repo/dir repo/moved
		echo new > repo/moved/new.txt
		echo second > memory/notes
		mv memory/d memory/e
		rm memory/e/k
	`)
	code, stdout, stderr = runBinary(t, "checkpoint", "diff", "--name-status", mnt, id)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "D\tmemory/d/k\nM\tmemory/notes\n"+
		"M\ta.txt\nD\tgone.txt\nR100\tdir/b.txt\tmoved/b.txt\nA\tmoved/new.txt\n", stdout, "mounts in prefix order")
	code, stdout, stderr = runBinary(t, "checkpoint", "diff", mnt, id, "/memory")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "-first\n+second\n")
	assert.NotContains(t, stdout, "a.txt")

	// Restore: the shell sees the checkpoint at once.
	code, stdout, stderr = runBinary(t, "checkpoint", "restore", mnt, id)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "restored /memory, /repo to c1")
	assert.Contains(t, stderr, "not covered: /host")
	assert.Equal(t, "one\nbee\nbye\nfirst\nkeep\n", sh(t, mnt, "cat repo/a.txt repo/dir/b.txt repo/gone.txt memory/notes memory/d/k"))
	assert.Equal(t, "no\nno\nno\n", sh(t, mnt, "for p in repo/moved memory/e repo/moved/new.txt; do test -e $p && echo yes || echo no; done"))
	code, stdout, stderr = runBinary(t, "diff", mnt)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout, "the overlay is back to the commit")
	code, _, stderr = runBinary(t, "checkpoint", "diff", mnt, id)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "no changes")

	// A file held open since before keeps reading what it had (the
	// overlay's copy of a.txt was made after it opened the lower one).
	buf := make([]byte, 64)
	n, _ := held.ReadAt(buf, 0)
	assert.Equal(t, "one\n", string(buf[:n]))

	// Restore of some paths: only they come back.
	sh(t, mnt, "echo x > repo/a.txt; echo y > repo/dir/b.txt; rm memory/notes")
	code, _, stderr = runBinary(t, "checkpoint", "restore", mnt, id, filepath.Join(r, "a.txt"), "/memory/notes")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "one\ny\nfirst\n", sh(t, mnt, "cat repo/a.txt repo/dir/b.txt memory/notes"))
	sh(t, mnt, "echo bee > repo/dir/b.txt")

	// Open a file, change it, restore under it: it still reads what it had.
	sh(t, m, `echo changed-again > notes`)
	code, stdout, _ = runBinary(t, "checkpoint", "create", mnt)
	require.Equal(t, 0, code)
	id2 := lastLine(stdout)
	code, stdout, stderr = runBinary(t, "checkpoint", "diff", "--name-status", mnt, id, "--to", id2)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "M\tmemory/notes\n", stdout, "a diff between two checkpoints")
	open2, err := os.Open(filepath.Join(m, "notes"))
	require.NoError(t, err)
	defer open2.Close()
	code, _, stderr = runBinary(t, "checkpoint", "restore", mnt, id)
	require.Equal(t, 0, code, stderr)
	n, _ = open2.ReadAt(buf, 0)
	assert.Equal(t, "changed-again\n", string(buf[:n]), "an open file keeps what it had")
	assert.Equal(t, "first\n", sh(t, m, "cat notes"), "the name shows the checkpoint")
	// And the restore is undone by the newer checkpoint.
	code, _, stderr = runBinary(t, "checkpoint", "restore", mnt, id2)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "changed-again\n", sh(t, m, "cat notes"))

	code, stdout, stderr = runBinary(t, "checkpoint", "list", mnt)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^c1\s+\S+ \S+\s+\S+\s+\d+\s+before the agent$`, stdout)
	assert.Regexp(t, `(?m)^c2\s`, stdout)

	// Bad input: an unknown id is exit 2, naming it, and changes nothing.
	code, _, stderr = runBinary(t, "checkpoint", "restore", mnt, "c99")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `"c99"`)
	assert.Equal(t, "changed-again\n", sh(t, m, "cat notes"))
	code, _, _ = runBinary(t, "checkpoint", "delete", mnt, "c99")
	assert.Equal(t, 2, code)
	code, _, stderr = runBinary(t, "checkpoint", "delete", mnt, "c1")
	require.Equal(t, 0, code, stderr)
	code, _, _ = runBinary(t, "checkpoint", "restore", mnt, "c1")
	assert.Equal(t, 2, code, "a deleted checkpoint is gone")
}

// TestE2ECheckpointNoWritableLayer: a workspace of read-only mounts has
// nothing to checkpoint, which is a usage error.
func TestE2ECheckpointNoWritableLayer(t *testing.T) {
	repo, _ := testutil.GitRepo(t, map[string]string{"a.txt": "one\n"})
	mnt := t.TempDir()
	startMount(t, mnt, "--mount", "type=git,src="+repo+",dst=/repo")
	code, _, stderr := runBinary(t, "checkpoint", "create", mnt)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "no writable layer")
}

// TestE2ECheckpointsSurviveARestart: checkpoints of persisted layers (a
// writable git mount's upper and a memory mount, both in persist files)
// live in those files; after vfsmount stops and starts again they are
// listed and restore, and a memory mount without a file reports that it
// lost them.
func TestE2ECheckpointsSurviveARestart(t *testing.T) {
	repo, _ := testutil.GitRepo(t, map[string]string{"a.txt": "one\n"})
	state := t.TempDir()
	mnt := t.TempDir()
	args := []string{"--mount", "type=git,src=" + repo + ",dst=/repo,writable,persist=" + filepath.Join(state, "repo.db"),
		"--mount", "type=memory,dst=/memory,persist=" + filepath.Join(state, "memory.db"),
		"--mount", "type=memory,dst=/scratch"}
	c := startMount(t, mnt, args...)
	sh(t, mnt, "echo kept > memory/notes; echo s > scratch/s")
	code, stdout, stderr := runBinary(t, "checkpoint", "create", mnt, "--name", "before")
	require.Equal(t, 0, code, stderr)
	id := lastLine(stdout)
	sh(t, mnt, "echo two > repo/a.txt; rm memory/notes; echo new > repo/new.txt")
	code, _, stderr = runBinary(t, "umount", mnt)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 0, c.exitCode(t, 15*time.Second))

	startMount(t, mnt, args...)
	assert.Equal(t, "two\n", sh(t, mnt, "cat repo/a.txt"), "the live tree came back")
	code, stdout, stderr = runBinary(t, "checkpoint", "list", mnt)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^`+id+`\s.*before$`, stdout)
	code, stdout, stderr = runBinary(t, "checkpoint", "restore", mnt, id)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "restored /memory, /repo to "+id)
	assert.Contains(t, stderr, "not covered: /scratch", "the memory mount without a file lost it, and says so")
	assert.Equal(t, "one\nkept\n", sh(t, mnt, "cat repo/a.txt memory/notes"))
	assert.Equal(t, "no\n", sh(t, mnt, "test -e repo/new.txt && echo yes || echo no"))
	// New checkpoints number on from the old ones.
	code, stdout, _ = runBinary(t, "checkpoint", "create", mnt)
	require.Equal(t, 0, code)
	assert.NotEqual(t, id, lastLine(stdout))
}

// TestE2ECheckpointRestoreKill9: vfsmount is killed with SIGKILL while it
// restores a persisted workspace back and forth between two checkpoints;
// started again on the same persist file, it shows one state or the
// other, every file of it, and still has both checkpoints.
func TestE2ECheckpointRestoreKill9(t *testing.T) {
	state := t.TempDir()
	mnt := t.TempDir()
	args := []string{"--mount", "type=memory,dst=/memory,persist=" + filepath.Join(state, "memory.db")}
	c := startMount(t, mnt, args...)
	const files = 300
	sh(t, mnt, `mkdir memory/d; for i in $(seq 1 `+strconv.Itoa(files)+`); do head -c 20000 /dev/zero | tr '\0' 1 > memory/d/f$i; done`)
	code, stdout, stderr := runBinary(t, "checkpoint", "create", mnt)
	require.Equal(t, 0, code, stderr)
	one := lastLine(stdout)
	sh(t, mnt, `for i in $(seq 1 `+strconv.Itoa(files)+`); do head -c 20000 /dev/zero | tr '\0' 2 > memory/d/f$i; done`)
	code, stdout, stderr = runBinary(t, "checkpoint", "create", mnt)
	require.Equal(t, 0, code, stderr)
	two := lastLine(stdout)

	client, err := dialControl(mnt)
	require.NoError(t, err)
	defer client.Close()
	kill := 3 + rand.IntN(20)
	for i := 0; i < kill; i++ {
		var res jsonrpc.CheckpointRestoreResult
		require.NoError(t, client.Call(context.Background(), "checkpoint.restore", jsonrpc.CheckpointRestoreParams{ID: []string{one, two}[i%2]}, &res))
	}
	// One more, in flight when the process dies.
	go func() {
		var res jsonrpc.CheckpointRestoreResult
		_ = client.Call(context.Background(), "checkpoint.restore", jsonrpc.CheckpointRestoreParams{ID: []string{one, two}[kill%2]}, &res)
	}()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	<-c.done
	require.NoError(t, fusefs.ForceUnmount(mnt))

	startMount(t, mnt, args...)
	out := sh(t, mnt, `cat memory/d/* | tr -d '\n' | fold -w 20000 | sort | uniq -c | wc -l; cat memory/d/* | head -c 1`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Equal(t, "1", strings.TrimSpace(lines[0]), "every file holds the same state")
	count := strings.TrimSpace(sh(t, mnt, "ls memory/d | wc -l"))
	assert.Equal(t, strconv.Itoa(files), count)
	code, stdout, stderr = runBinary(t, "checkpoint", "list", mnt)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^`+one+`\s`, stdout)
	assert.Regexp(t, `(?m)^`+two+`\s`, stdout)
	code, _, stderr = runBinary(t, "checkpoint", "restore", mnt, one)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "1", sh(t, mnt, "head -c 1 memory/d/f7"))
}

// TestE2ECheckpointRestoreKill9AcrossPersistFiles: a workspace of two
// persisted layers (a memory mount and a writable git mount's upper, each
// in a persist file of its own) is restored back and forth between two
// checkpoints and vfsmount is killed with SIGKILL after a varying number
// of restores, one more in flight; started again on the same files, the
// workspace is wholly at one checkpoint or the other: both mounts, every
// file of them.
func TestE2ECheckpointRestoreKill9AcrossPersistFiles(t *testing.T) {
	repo, _ := testutil.GitRepo(t, map[string]string{"a.txt": "one\n"})
	state := t.TempDir()
	mnt := t.TempDir()
	args := []string{"--mount", "type=memory,dst=/memory,persist=" + filepath.Join(state, "memory.db"),
		"--mount", "type=git,src=" + repo + ",dst=/repo,writable,persist=" + filepath.Join(state, "repo.db")}
	c := startMount(t, mnt, args...)
	const files = 200
	fill := func(digit string) {
		sh(t, mnt, `mkdir -p memory/d repo/d; for i in $(seq 1 `+strconv.Itoa(files)+`); do
			head -c 20000 /dev/zero | tr '\0' `+digit+` > memory/d/f$i; head -c 20000 /dev/zero | tr '\0' `+digit+` > repo/d/f$i; done`)
	}
	fill("1")
	code, stdout, stderr := runBinary(t, "checkpoint", "create", mnt)
	require.Equal(t, 0, code, stderr)
	one := lastLine(stdout)
	fill("2")
	code, stdout, stderr = runBinary(t, "checkpoint", "create", mnt)
	require.Equal(t, 0, code, stderr)
	two := lastLine(stdout)

	// The digit every file of both mounts holds, or a failure.
	whole := func(round int) string {
		out := sh(t, mnt, `ls memory/d | wc -l; ls repo/d | wc -l; cat memory/d/* repo/d/* | fold -w 1000 | sort -u`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 3, "round %d: every file of both mounts holds the same state, got:\n%s", round, out)
		assert.Equal(t, strconv.Itoa(files), strings.TrimSpace(lines[0]), "round %d: /memory", round)
		assert.Equal(t, strconv.Itoa(files), strings.TrimSpace(lines[1]), "round %d: /repo", round)
		return lines[2][:1]
	}
	seen := map[string]int{}
	// Where the in-flight restore is killed: at once, or as soon as a
	// file committed a transaction of it (bbolt's transaction id in the
	// file went up): /memory's (the coordinator's decision, and its
	// restore), or /repo's (the participant's intent, first).
	rounds := []struct {
		restores int
		file     string
	}{
		{0, ""}, {1, "memory.db"}, {2 + rand.IntN(4), "repo.db"},
		{3 + rand.IntN(4), "memory.db"}, {6 + rand.IntN(10), ""}, {2 + rand.IntN(10), "memory.db"},
	}
	for round, r := range rounds {
		kill := r.restores
		client, err := dialControl(mnt)
		require.NoError(t, err)
		for i := 0; i < kill; i++ {
			var res jsonrpc.CheckpointRestoreResult
			require.NoError(t, client.Call(context.Background(), "checkpoint.restore", jsonrpc.CheckpointRestoreParams{ID: []string{one, two}[i%2]}, &res))
			require.Equal(t, []string{"/memory", "/repo"}, res.Restored)
		}
		var before uint64
		if r.file != "" {
			before = boltTxID(t, filepath.Join(state, r.file))
		}
		// One more, in flight when the process dies.
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			var res jsonrpc.CheckpointRestoreResult
			_ = client.Call(context.Background(), "checkpoint.restore", jsonrpc.CheckpointRestoreParams{ID: []string{one, two}[kill%2]}, &res)
		}()
		if r.file != "" {
			for boltTxID(t, filepath.Join(state, r.file)) == before {
				select {
				case <-answered:
					t.Fatalf("round %d: the restore was answered and %s did not change", round, r.file)
				default:
				}
			}
		}
		require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
		<-c.done
		client.Close()
		require.NoError(t, fusefs.ForceUnmount(mnt))

		c = startMount(t, mnt, args...)
		seen[whole(round)]++
	}
	t.Logf("states after the kills (digit: rounds): %v", seen)
	// Both checkpoints survived, and still restore.
	code, _, stderr = runBinary(t, "checkpoint", "restore", mnt, one)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "1", whole(-1))
	code, _, stderr = runBinary(t, "checkpoint", "restore", mnt, two)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "2", whole(-1))
}

// boltTxID is the id of the last transaction a bbolt file committed: the
// larger of its two meta pages' (page header 16 bytes, then magic,
// version, page size, flags, root bucket 16, freelist and high water
// mark 8 each, txid 8), read without taking the file's lock.
func boltTxID(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	head := make([]byte, 72)
	_, err = f.ReadAt(head, 0)
	require.NoError(t, err)
	pageSize := int64(bbinary.LittleEndian.Uint32(head[24:]))
	tx := bbinary.LittleEndian.Uint64(head[64:])
	_, err = f.ReadAt(head, pageSize)
	require.NoError(t, err)
	return max(tx, bbinary.LittleEndian.Uint64(head[64:]))
}
