package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

// sh runs a shell command in dir, as a user would on the mount, from this
// process (which never serves the mount).
func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoErrorf(t, cmd.Run(), "%s: %s", script, errb.String())
	return out.String()
}

// TestE2EWritableGit drives a writable /repo through the kernel and the
// real binary: shell changes, vfsmount diff | git apply on a fresh clone,
// commit --branch, reset.
func TestE2EWritableGit(t *testing.T) {
	repo, sha := testutil.GitRepo(t, map[string]string{
		"a.txt":     "one\ntwo\nthree\n",
		"bin.dat":   "\x00\x01\x02\x03binary\n",
		"dir/b.txt": "bee\n",
		"dir/c.txt": "sea\n",
		"run.sh":    "echo hi\n",
		"gone.txt":  "bye\n",
	})
	status := sh(t, repo, "git status --porcelain; git rev-parse HEAD; git symbolic-ref HEAD")
	mnt := t.TempDir()
	c := startMount(t, mnt, "--mount", "type=git,src="+repo+",dst=/repo,writable")
	assert.Contains(t, c.stderr.String(), "source=\"copy-on-write over git@"+sha[:12]+"\" access=rw")
	r := filepath.Join(mnt, "repo")

	code, stdout, stderr := runBinary(t, "diff", mnt)
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "no changes")

	sh(t, r, `
		printf 'one\n2\nthree\n' > a.txt
		printf '\000\377\001binary!\n' > bin.dat
		rm gone.txt
		mv dir moved
		echo new > moved/new.txt
		chmod +x run.sh
		ln -s a.txt link
		mkdir -p deep/er && echo x > deep/er/x.txt
	`)

	code, stdout, stderr = runBinary(t, "diff", "--name-status", mnt)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "M\ta.txt\nM\tbin.dat\nA\tdeep/er/x.txt\nD\tgone.txt\nA\tlink\n"+
		"R100\tdir/b.txt\tmoved/b.txt\nR100\tdir/c.txt\tmoved/c.txt\nA\tmoved/new.txt\nM\trun.sh\n", stdout)
	code, stdout, stderr = runBinary(t, "diff", "--stat", mnt, filepath.Join(r, "a.txt"))
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "a.txt")
	assert.Contains(t, stdout, "1 file changed")
	code, stdout, _ = runBinary(t, "diff", "--name-status", mnt, "/repo/moved")
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout, "a.txt", "limited to the workspace path asked")
	assert.Contains(t, stdout, "moved/new.txt")

	code, patch, stderr := runBinary(t, "diff", mnt)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, patch, "GIT binary patch")
	clone := filepath.Join(t.TempDir(), "clone")
	sh(t, t.TempDir(), "git clone -q "+repo+" "+clone)
	applied := exec.Command("git", "apply", "--index")
	applied.Dir, applied.Stdin = clone, strings.NewReader(patch)
	out, err := applied.CombinedOutput()
	require.NoError(t, err, "git apply: %s", out)
	for _, name := range []string{"a.txt", "bin.dat", "moved/b.txt", "moved/new.txt", "deep/er/x.txt"} {
		want, err := os.ReadFile(filepath.Join(r, name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(clone, name))
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
	}
	fi, err := os.Stat(filepath.Join(clone, "run.sh"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&0o100, "mode change applied")
	target, err := os.Readlink(filepath.Join(clone, "link"))
	require.NoError(t, err)
	assert.Equal(t, "a.txt", target)
	applyTree := strings.TrimSpace(sh(t, clone, "git write-tree"))

	// commit --branch: the same tree, on the pinned commit, source untouched.
	code, stdout, stderr = runBinary(t, "commit", mnt, "-m", "agent work", "--branch", "agent/work")
	require.Equal(t, 0, code, stderr)
	id := strings.Fields(stdout)[0]
	assert.Equal(t, id+" refs/heads/agent/work\n", stdout)
	assert.Equal(t, id+"\n"+sha+"\n"+applyTree+"\n", sh(t, repo, "git rev-parse agent/work agent/work^ agent/work^{tree}"))
	assert.Equal(t, status, sh(t, repo, "git status --porcelain; git rev-parse HEAD; git symbolic-ref HEAD"),
		"HEAD, branch, index and working tree of the source are untouched")
	code, _, stderr = runBinary(t, "commit", mnt, "-m", "again", "--branch", "agent/work")
	assert.Equal(t, 1, code, "an existing branch without --force")
	assert.Contains(t, stderr, "agent/work")
	code, _, stderr = runBinary(t, "commit", mnt, "-m", "again", "--branch", "agent/work", "--force")
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = runBinary(t, "commit", mnt, "-m", "x", "--branch", "main", "--force")
	assert.Equal(t, 2, code, "the checked-out branch is never moved: %s", stderr)
	code, _, stderr = runBinary(t, "commit", mnt, "-m", "x", "--branch", "bad..name")
	assert.Equal(t, 2, code, stderr)
	code, _, stderr = runBinary(t, "diff", mnt, "/memory")
	assert.Equal(t, 2, code, "a path in no writable git mount: %s", stderr)

	// reset: one path, then everything.
	code, _, stderr = runBinary(t, "reset", mnt, filepath.Join(r, "a.txt"))
	require.Equal(t, 0, code, stderr)
	got, err := os.ReadFile(filepath.Join(r, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\n", string(got), "the shell sees the commit's content at once")
	code, stdout, _ = runBinary(t, "diff", "--name-status", mnt)
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout, "a.txt")
	assert.Contains(t, stdout, "run.sh")

	code, _, stderr = runBinary(t, "reset", mnt)
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr = runBinary(t, "diff", mnt)
	assert.Equal(t, 0, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "no changes")
	code, stdout, stderr = runBinary(t, "commit", mnt, "-m", "nothing", "--branch", "empty")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "no changes\n", stdout)
	assert.Equal(t, "sea\n", sh(t, r, "cat dir/c.txt"))
	_, err = os.Lstat(filepath.Join(r, "moved"))
	assert.True(t, os.IsNotExist(err), "the renamed directory is gone")

	require.NoError(t, c.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 0, c.exitCode(t, 15*time.Second), "stderr:\n%s", c.stderr)
	code, _, stderr = runBinary(t, "diff", mnt)
	assert.Equal(t, 1, code, "no daemon any more")
	assert.Contains(t, stderr, "no vfsmount")
}

// TestE2EWritableGitSurvivesKill: with persist=FILE, what was written and
// fsync'd survives kill -9 of the daemon; the file records the commit, so
// it is refused over another one (exit 2, both SHAs) and left as it was.
func TestE2EWritableGitSurvivesKill(t *testing.T) {
	repo, sha := testutil.GitRepo(t, map[string]string{"a.txt": "one\n", "d/b.txt": "bee\n"})
	other, sha2 := testutil.GitRepo(t, map[string]string{"x.txt": "x\n"})
	db := filepath.Join(t.TempDir(), "upper.db")
	spec := "type=git,src=" + repo + ",dst=/repo,writable,persist=" + db
	mnt := t.TempDir()
	c := startMount(t, mnt, "--mount", spec)
	r := filepath.Join(mnt, "repo")
	sh(t, r, "printf 'kept\\n' > a.txt && rm d/b.txt && mkdir n && echo new > n/f && mv n m")
	for _, name := range []string{"a.txt", "m/f"} {
		f, err := os.OpenFile(filepath.Join(r, name), os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	d, err := os.Open(r)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
	require.NoError(t, c.cmd.Process.Kill())
	<-c.done
	require.NoError(t, fusefs.ForceUnmount(mnt))

	before := fileSum(t, db)
	code, _, stderr := runBinary(t, "mount", "--mount", "type=git,src="+other+",dst=/repo,writable,persist="+db, mnt)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, sha)
	assert.Contains(t, stderr, sha2)
	assert.Equal(t, before, fileSum(t, db), "a refused upper file is left byte-identical")

	c = startMount(t, mnt, "--mount", spec)
	assert.Equal(t, "kept\n", sh(t, r, "cat a.txt"))
	assert.Equal(t, "new\n", sh(t, r, "cat m/f"))
	_, err = os.Lstat(filepath.Join(r, "d", "b.txt"))
	assert.True(t, os.IsNotExist(err), "the deletion survives")
	_, err = os.Lstat(filepath.Join(r, "n"))
	assert.True(t, os.IsNotExist(err), "the rename survives")
	code, stdout, stderr := runBinary(t, "diff", "--name-status", mnt)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "M\ta.txt\nD\td/b.txt\nA\tm/f\n", stdout)
	require.NoError(t, c.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 0, c.exitCode(t, 15*time.Second), "stderr:\n%s", c.stderr)
}
