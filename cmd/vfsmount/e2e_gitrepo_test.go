package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

// hookSocket is the fsmonitor socket the mount's .git names: the hook
// command's last word.
func hookSocket(t *testing.T, r string) string {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(r, ".git", "vfsmount.config"))
	require.NoError(t, err)
	m := regexp.MustCompile(`fsmonitor = "[^"]* '([^']+)'"`).FindSubmatch(conf)
	require.NotNil(t, m, "the config names the hook: %s", conf)
	return string(m[1])
}

// TestE2EGitFirstStatus: the first git status in a new writable /repo, run
// where the shell tool runs it, reads no directory (the index the mount
// makes carries git's untracked cache, and the fsmonitor hook says nothing
// changed); and what changes after is what git in a native checkout finds:
// the same commands, the same status.
func TestE2EGitFirstStatus(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "top/.gitignore": "*.log\n"}
	for _, d := range []string{"top/x", "top/x/deep", "top/y", "z"} {
		files[d+"/f.txt"] = d + "\n"
	}
	repo, _ := testutil.GitRepo(t, files)
	changes := `
		echo n > top/x/deep/new.txt
		mkdir -p top/new/dir && echo n > top/new/dir/f.txt
		echo n > root.txt && echo l > top/y/skip.log && echo l > z/kept.log
		echo '*.tmp' > z/.gitignore && echo t > z/t.tmp
		rm top/x/f.txt
	`
	native := filepath.Join(t.TempDir(), "native")
	testutil.Git(t, filepath.Dir(native), "clone", "-q", repo, native)
	sh(t, native, changes)
	want := sh(t, native, "git status --porcelain")
	require.Contains(t, want, "?? top/new/", "the oracle sees the changes")

	code, stdout, stderr := runBinary(t, "exec", "--mount", "type=git,src="+repo+",dst=/repo,writable", "--", "sh", "-c", `
		cd /repo
		GIT_TRACE2_PERF=/tmp/first git status --porcelain
		grep -o 'read_directo.*' /tmp/first | grep -E 'opendir|node-creation|directories-visited'
		echo ---
		`+changes+`
		git status --porcelain
		echo ---
		git status --porcelain
	`)
	require.Equal(t, 0, code, stderr)
	parts := strings.Split(stdout, "---\n")
	require.Len(t, parts, 3, stdout)
	assert.Regexp(t, `directories-visited:6\n`, parts[0], "git walked the tree from the cache")
	assert.Regexp(t, `opendir:0\n`, parts[0], "the first status read no directory")
	assert.Regexp(t, `node-creation:0\n`, parts[0])
	assert.Equal(t, want, parts[1], "after the changes, the native checkout's status")
	assert.Equal(t, want, parts[2], "again, from the cache git wrote")

	// vfsmount mount: git runs at the mountpoint, and the cache is for it.
	mnt := t.TempDir()
	startMount(t, mnt, "--mount", "type=git,src="+repo+",dst=/repo,writable")
	first := filepath.Join(t.TempDir(), "first")
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir, cmd.Env = filepath.Join(mnt, "repo"), append(os.Environ(), "GIT_TRACE2_PERF="+first)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Empty(t, string(out))
	trace, err := os.ReadFile(first)
	require.NoError(t, err)
	assert.Regexp(t, `opendir:0\n`, string(trace), "the first status at the mountpoint read no directory")
}

// TestE2EGitInRepo runs git in a writable /repo through the kernel, as in a
// checkout of the commit: every command of the issue, its effect checked.
func TestE2EGitInRepo(t *testing.T) {
	repo, _ := testutil.GitRepo(t, map[string]string{
		"a.txt":     "one\ntwo\nthree\n",
		"dir/b.txt": "bee\n",
		"dir/c.txt": "sea\n",
		"gone.txt":  "bye\n",
	})
	// The commit's author is T: git blame below names it.
	testutil.Git(t, repo, "commit", "-q", "--amend", "--no-edit", "--author=T <t@example.com>")
	sha := testutil.Git(t, repo, "rev-parse", "HEAD")
	srcStatus := sh(t, repo, "git status --porcelain; git rev-parse HEAD; git count-objects")
	mnt := t.TempDir()
	startMount(t, mnt, "--mount", "type=git,src="+repo+",dst=/repo,writable")
	r := filepath.Join(mnt, "repo")

	// A clean checkout at the commit, detached, the source's history.
	assert.Equal(t, "", sh(t, r, "git status --porcelain"))
	assert.Equal(t, sha+"\n", sh(t, r, "git rev-parse HEAD"))
	assert.Contains(t, sh(t, r, "git status"), "Not currently on any branch.")
	assert.Equal(t, "one\n", sh(t, r, "git log --format=%s"))
	assert.Equal(t, "one\n", sh(t, r, "git log --format=%s HEAD"), "the history comes through alternates")

	// The index carries the stat data the kernel reports: git has nothing
	// to rehash.
	for _, name := range []string{"a.txt", "dir/b.txt"} {
		var st syscall.Stat_t
		require.NoError(t, syscall.Lstat(filepath.Join(r, name), &st))
		want := fmt.Sprintf("  ctime: %d:%d\n  mtime: %d:%d\n  dev: 0\tino: %d\n  uid: %d\tgid: %d\n  size: %d\t",
			st.Ctim.Sec, st.Ctim.Nsec, st.Mtim.Sec, st.Mtim.Nsec, uint32(st.Ino), st.Uid, st.Gid, st.Size)
		assert.Contains(t, sh(t, r, "git ls-files --debug "+name), want, name)
	}

	// Changes show in status, diff and diff --stat.
	sh(t, r, `
		printf 'one\n2\nthree\n' > a.txt
		rm gone.txt
		mv dir/c.txt dir/d.txt
		echo new > new.txt
	`)
	assert.Equal(t, " M a.txt\n D dir/c.txt\n D gone.txt\n?? dir/d.txt\n?? new.txt\n", sh(t, r, "git status --porcelain"))
	assert.Equal(t, " M a.txt\n D dir/c.txt\n D gone.txt\n?? dir/d.txt\n?? new.txt\n", sh(t, r, "git status --porcelain"),
		"again, from the fsmonitor's answer and the untracked cache")
	diff := sh(t, r, "git diff a.txt")
	assert.Contains(t, diff, "-two\n+2\n")
	assert.Contains(t, sh(t, r, "git diff --stat"), "3 files changed, 1 insertion(+), 3 deletions(-)")
	assert.Contains(t, sh(t, r, "git show --stat HEAD"), "gone.txt")
	assert.Regexp(t, `^\^?[0-9a-f]+ \(T .*\) one\n`, sh(t, r, "git blame a.txt"))

	// vfsmount diff leaves the .git out.
	code, stdout, stderr := runBinary(t, "diff", "--name-status", mnt)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "M\ta.txt\nR100\tdir/c.txt\tdir/d.txt\nD\tgone.txt\nA\tnew.txt\n", stdout)

	// add and commit land in the mount's .git, not in the source.
	sh(t, r, "git add -A && git commit -qm two")
	assert.Equal(t, "two\none\n", sh(t, r, "git log --format=%s"))
	assert.Equal(t, "", sh(t, r, "git status --porcelain"))
	head := strings.TrimSpace(sh(t, r, "git rev-parse HEAD"))
	assert.NotEqual(t, sha, head)
	assert.Error(t, exec.Command("git", "-C", repo, "cat-file", "-e", head).Run(), "the new commit is not in the source")
	assert.Equal(t, srcStatus, sh(t, repo, "git status --porcelain; git rev-parse HEAD; git count-objects"), "the source is untouched")

	// stash, restore and checkout -- FILE bring the bytes back.
	sh(t, r, "echo changed > a.txt && git stash -q")
	assert.Equal(t, "one\n2\nthree\n", sh(t, r, "cat a.txt"))
	assert.Equal(t, "", sh(t, r, "git status --porcelain"))
	sh(t, r, "git stash pop -q")
	assert.Equal(t, "changed\n", sh(t, r, "cat a.txt"))
	sh(t, r, "git restore a.txt")
	assert.Equal(t, "one\n2\nthree\n", sh(t, r, "cat a.txt"))
	sh(t, r, "echo x > dir/b.txt && git checkout -- dir/b.txt")
	assert.Equal(t, "bee\n", sh(t, r, "cat dir/b.txt"))
	assert.Equal(t, "", sh(t, r, "git status --porcelain"))

	// switch -c moves HEAD to a new branch.
	sh(t, r, "git switch -q -c topic")
	assert.Equal(t, "refs/heads/topic\n", sh(t, r, "git symbolic-ref HEAD"))
	assert.Equal(t, head+"\n", sh(t, r, "git rev-parse topic"))

	// The hook: an unknown token is "everything"; a change after a token
	// shows in the answer to it.
	sock := hookSocket(t, r)
	code, stdout, stderr = runBinary(t, "fsmonitor", sock, "2", "vfsmount:unknown:1")
	require.Equal(t, 0, code, stderr)
	tok, rest, ok := strings.Cut(stdout, "\x00")
	require.True(t, ok)
	assert.Equal(t, "/\x00", rest)
	code, stdout, _ = runBinary(t, "fsmonitor", sock, "2", tok)
	require.Equal(t, 0, code)
	tok2, rest, _ := strings.Cut(stdout, "\x00")
	assert.Empty(t, rest, "nothing changed since")
	sh(t, r, "echo more >> dir/b.txt && mkdir -p n && echo x > n/x")
	code, stdout, _ = runBinary(t, "fsmonitor", sock, "2", tok2)
	require.Equal(t, 0, code)
	_, rest, _ = strings.Cut(stdout, "\x00")
	assert.Equal(t, "dir/b.txt\x00n\x00n/\x00n/x\x00", rest)
	code, _, stderr = runBinary(t, "fsmonitor", sock, "1", tok2)
	assert.Equal(t, 1, code, "version 1 is not served")
	assert.Contains(t, stderr, "version 2")
	// The .git names the small hook program beside the binary, which
	// answers as the fsmonitor command does.
	helper := filepath.Join(filepath.Dir(binary(t)), "vfsmount-fsmonitor")
	conf, err := os.ReadFile(filepath.Join(r, ".git", "vfsmount.config"))
	require.NoError(t, err)
	assert.Contains(t, string(conf), `fsmonitor = "'`+helper+`' '`+sock+`'"`)
	out, err := exec.Command(helper, sock, "2", tok2).Output()
	require.NoError(t, err)
	_, rest, _ = strings.Cut(string(out), "\x00")
	assert.Equal(t, "dir/b.txt\x00n\x00n/\x00n/x\x00", rest)
	var ee *exec.ExitError
	_, err = exec.Command(helper, sock, "1", tok2).Output()
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, string(ee.Stderr), "version 2")
	assert.Equal(t, " M dir/b.txt\n?? n/\n", sh(t, r, "git status --porcelain"))

	// A reset through the control socket is a change git hears of too.
	code, _, stderr = runBinary(t, "reset", mnt, filepath.Join(r, "dir/b.txt"))
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "?? n/\n", sh(t, r, "git status --porcelain"))
	assert.Equal(t, "refs/heads/topic\n", sh(t, r, "git symbolic-ref HEAD"), "a reset of files keeps the .git")
}

// TestE2EGitBranchAndRemount: HEAD on the branch the spec names, and a
// persisted upper keeps the .git (index, commits) across a restart, where
// the old token is unknown and git checks everything once.
func TestE2EGitBranchAndRemount(t *testing.T) {
	repo, sha := testutil.GitRepo(t, map[string]string{"a.txt": "one\n", "d/b.txt": "bee\n"})
	db := filepath.Join(t.TempDir(), "upper.db")
	spec := "type=git,src=" + repo + ",dst=/repo,writable,branch=agent/work,persist=" + db
	mnt := t.TempDir()
	c := startMount(t, mnt, "--mount", spec)
	r := filepath.Join(mnt, "repo")
	assert.Equal(t, "refs/heads/agent/work\n", sh(t, r, "git symbolic-ref HEAD"))
	assert.Equal(t, sha+"\n", sh(t, r, "git rev-parse agent/work"))
	sh(t, r, "echo two > a.txt && git commit -qam two && echo three > a.txt && echo u > u.txt")
	require.NoError(t, c.cmd.Process.Signal(os.Interrupt))
	require.Equal(t, 0, c.exitCode(t, 20e9))

	startMount(t, mnt, "--mount", spec)
	assert.Equal(t, "two\none\n", sh(t, r, "git log --format=%s"))
	assert.Equal(t, " M a.txt\n?? u.txt\n", sh(t, r, "git status --porcelain"))
	assert.Equal(t, " M a.txt\n?? u.txt\n", sh(t, r, "git status --porcelain"))

	code, _, stderr := runBinary(t, "mount", "--mount", "type=git,src="+repo+",dst=/repo,writable,branch=a..b", t.TempDir())
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, `"branch"`)
	code, _, stderr = runBinary(t, "mount", "--mount", "type=git,src="+repo+",dst=/repo,branch=x", t.TempDir())
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, `needs key "writable"`)
}

// TestE2EGitInShell runs git in /repo from the shell tool's namespace,
// where the source's objects and the hook's program and socket are bound
// at their host paths.
func TestE2EGitInShell(t *testing.T) {
	fusetest.Need(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	repo, sha := testutil.GitRepo(t, map[string]string{"a.txt": "one\ntwo\n", "d/b.txt": "bee\n"})
	script := `cd /repo && export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=T GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=T GIT_COMMITTER_EMAIL=t@e &&
git rev-parse HEAD && git status --porcelain && echo 1 > a.txt && echo n > n.txt &&
git status --porcelain && GIT_TRACE_FSMONITOR=1 git status --porcelain 2>&1 | grep -c 'returned success' &&
git diff --stat && git add -A && git commit -qm two && git log --format=%s && git status --porcelain &&
echo x > d/b.txt && git checkout -- d/b.txt && cat d/b.txt && git stash list | wc -l &&
echo s > a.txt && git stash -q && cat a.txt && git stash pop -q && cat a.txt && git restore a.txt && cat a.txt &&
git switch -q -c topic && git symbolic-ref HEAD && git blame --porcelain d/b.txt | head -1 | cut -c1-40 && git show --format=%s -s HEAD~1`
	args, err := json.Marshal(map[string]string{"command": script})
	require.NoError(t, err)
	code, stdout, stderr := runBinary(t, "call", "--mount", "type=git,src="+repo+",dst=/repo,writable", "shell", string(args))
	require.Equal(t, 0, code, stderr)
	head := strings.TrimSpace(sh(t, repo, "git rev-parse HEAD"))
	assert.Equal(t, sha, head, "the source's HEAD is where it was")
	assert.Equal(t, "exit code: 0\n--- stdout ---\n"+sha+"\n"+
		" M a.txt\n?? n.txt\n"+
		"1\n"+
		" a.txt | 3 +--\n 1 file changed, 1 insertion(+), 2 deletions(-)\n"+
		"two\none\n"+
		"bee\n0\n"+"1\n"+"s\n"+"1\n"+"refs/heads/topic\n"+head+"\n"+"one\n", stdout)
}
