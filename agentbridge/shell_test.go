package agentbridge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// kernelWorkspace builds what the CLI builds: a union of a read-only
// /repo and a writable /memory, its kernel face on a temporary
// mountpoint, and the tool face over the same union, observed so that
// tool writes invalidate the kernel's caches.
func kernelWorkspace(t testing.TB, repoFiles map[string]string) *Workspace {
	t.Helper()
	return kernelWorkspaceOpts(t, repoFiles, nil)
}

// kernelWorkspaceOpts is kernelWorkspace with options set by opt (nil:
// none) before New.
func kernelWorkspaceOpts(t testing.TB, repoFiles map[string]string, opt func(*Options)) *Workspace {
	t.Helper()
	fusetest.Need(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		if fusetest.Required() {
			t.Fatalf("bubblewrap is required with VFSMOUNT_REQUIRE_FUSE=1 (.ci/run installs it): %v", err)
		}
		t.Skip("bubblewrap not installed")
	}
	ctx := context.Background()
	repo := memfs.New(memfs.Options{})
	for p, c := range repoFiles {
		dir, _ := mounts.Split(p)
		if dir != "." {
			require.NoError(t, mounts.MkdirAll(ctx, repo, dir, 0o755))
		}
		require.NoError(t, mounts.WriteFile(ctx, repo, p, []byte(c), 0o644))
	}
	u, err := union.New(map[string]mounts.FS{"/repo": readOnly{repo}, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	mp := t.TempDir()
	srv, err := fusefs.Mount(mp, u, fusefs.Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() { assert.NoError(t, srv.Unmount()) })
	opts := Options{Shell: &ShellOptions{Mountpoint: mp}}
	if opt != nil {
		opt(&opts)
	}
	w, err := New(mounts.Observe(u, srv.Invalidate), opts)
	require.NoError(t, err)
	require.Contains(t, w.Verbs(), VerbShell, "bubblewrap probe failed")
	// Sessions end before the unmount (cleanups run last in, first out).
	t.Cleanup(func() { assert.NoError(t, w.Close()) })
	return w
}

func TestShell(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"README.md": "hello from repo\n"})
	tests := []struct {
		name string
		args obj
		want string
	}{
		{"exit code and both streams", obj{"command": "echo out; echo err >&2; exit 3"}, "exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr\n"},
		{"cwd defaults to the first writable mount", obj{"command": "pwd"}, "exit code: 0\n--- stdout ---\n/memory\n"},
		{"cwd", obj{"command": "pwd", "cwd": "/repo"}, "exit code: 0\n--- stdout ---\n/repo\n"},
		{"the workspace at its paths", obj{"command": "cat /repo/README.md; ls /"}, "exit code: 0\n--- stdout ---\nhello from repo\n"},
		{"minimal environment", obj{"command": "echo $HOME $TMPDIR $LANG; env | wc -l"}, "exit code: 0\n--- stdout ---\n/tmp /tmp C.UTF-8\n"},
		{"read-only twice", obj{"command": "touch /repo/x 2>&1; echo $?"}, "Read-only file system"},
		{"private /tmp", obj{"command": "ls -A /tmp | wc -l"}, "exit code: 0\n--- stdout ---\n0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ok(t, w, "shell", tc.args)
			if strings.HasPrefix(tc.want, "exit code") {
				assert.True(t, strings.HasPrefix(got, tc.want), "got %q", got)
			} else {
				assert.Contains(t, got, tc.want)
			}
		})
	}
	t.Run("root listing shows the mounts and the system dirs", func(t *testing.T) {
		got := ok(t, w, "shell", obj{"command": "ls /"})
		for _, want := range []string{"memory", "repo", "usr", "tmp", "proc"} {
			assert.Contains(t, got, want+"\n")
		}
	})
	t.Run("timeout kills the process group", func(t *testing.T) {
		// The timeout leaves room for bubblewrap to start the shell on a
		// loaded machine (under -race it has taken over 300 ms), so that
		// "started" is printed before the kill; the sleeps outlast it.
		start := time.Now()
		msg := fail(t, w, "shell", obj{"command": "echo started; (sleep 60 &); sleep 60", "timeout": 3000})
		assert.Less(t, time.Since(start), 30*time.Second, "the kill waited for the sleeps")
		assert.Contains(t, msg, "shell: the command timed out after 3000 ms; its process group was killed")
		assert.Contains(t, msg, "started")
	})
	t.Run("output is capped with a note", func(t *testing.T) {
		got := ok(t, w, "shell", obj{"command": "head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"})
		// 100000 a's, a newline and END\n: 100005 bytes, 30000 kept.
		assert.True(t, strings.Contains(got, "\n… [70005 bytes truncated; output is capped at 30000] …\n"), "no truncation note")
		assert.True(t, strings.HasSuffix(got, "a\nEND\n"), "the tail is kept")
		assert.Less(t, len(got), 30200)
	})
	t.Run("bad arguments", func(t *testing.T) {
		assert.Equal(t, `shell: argument "timeout" must be between 1 and 600000, got 700000`, fail(t, w, "shell", obj{"command": "true", "timeout": 700000}))
		assert.Contains(t, fail(t, w, "shell", obj{"command": "true", "cwd": "/repo/README.md"}), "not a directory")
		assert.Equal(t, `shell: missing required argument "command"`, fail(t, w, "shell", obj{}))
	})
	t.Run("dialects", func(t *testing.T) {
		r := call(t, w, "claude", "Bash", obj{"command": "echo hi", "description": "say hi"})
		assert.Equal(t, Result{Text: "hi"}, r)
		r = call(t, w, "codex", "shell", obj{"command": []string{"bash", "-lc", "pwd"}, "workdir": "/repo", "timeout_ms": 5000})
		assert.Equal(t, Result{Text: "exit code: 0\n--- stdout ---\n/repo\n"}, r)
	})
}

// TestClaudeBash checks Claude Code's Bash result shape and its
// background tasks with TaskOutput and TaskStop, in one session.
func TestClaudeBash(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"README.md": "hello\n"})
	s := w.NewSession()
	t.Cleanup(func() { s.Close() })
	bash := func(args obj) Result { return sessionCall(t, w, s, "claude", "Bash", args) }
	t.Run("merged output, blank lines and trailing space cut", func(t *testing.T) {
		assert.Equal(t, Result{Text: "out\nerr"}, bash(obj{"command": "echo; echo out; echo err >&2; echo"}))
	})
	t.Run("a non-zero exit is an error starting Exit code N", func(t *testing.T) {
		assert.Equal(t, Result{Text: "Exit code 3\nboom", IsError: true}, bash(obj{"command": "echo boom >&2; exit 3"}))
		assert.Equal(t, Result{Text: "Exit code 2", IsError: true}, bash(obj{"command": "exit 2"}))
	})
	t.Run("grep's no-match is an answer, not a failure", func(t *testing.T) {
		assert.Equal(t, Result{Text: ""}, bash(obj{"command": "grep nothing-here /repo/README.md"}))
		assert.True(t, bash(obj{"command": "grep x /nonexistent"}).IsError, "grep's 2 is a failure")
	})
	t.Run("timeout_ms alias and sandbox escape refused", func(t *testing.T) {
		// Claude Code 2.1.332: a command still running at its timeout
		// is moved to the background, not killed; its output file is
		// Read's, and it goes on to the end the test lets it reach.
		r := bash(obj{"command": "echo early; while [ ! -e /memory/go-on ]; do sleep 0.05; done; echo late", "timeout_ms": 200})
		require.False(t, r.IsError, r.Text)
		m := regexp.MustCompile(`^Command did not complete within its 1s timeout and was moved to the background \(ID: (\d+)\)\. Output is being written to: (\S+)\. `).FindStringSubmatch(r.Text)
		require.NotNil(t, m, r.Text)
		assert.Contains(t, r.Text, "stop it with TaskStop")
		ok(t, w, "write", obj{"path": "/memory/go-on", "fileText": ""})
		p, found := s.proc(mustAtoi(t, m[1]))
		require.True(t, found)
		require.True(t, p.wait(t.Context(), time.Minute), "the moved command ends by itself")
		r = sessionCall(t, w, s, "claude", "Read", obj{"file_path": m[2]})
		assert.Equal(t, Result{Text: "1\tearly\n2\tlate\n"}, r)
		r = bash(obj{"command": "sleep 1", "run_in_background": true, "timeout": 7200001})
		assert.Equal(t, `Bash: argument "timeout" must be between 1 and 7200000, got 7200001`, r.Text)
		r = bash(obj{"command": "true", "dangerouslyDisableSandbox": true})
		assert.True(t, r.IsError)
		assert.Contains(t, r.Text, `Bash: argument "dangerouslyDisableSandbox" cannot be honoured here`)
		r = bash(obj{"command": "true", "run_in_background": "yes"})
		assert.Equal(t, `Bash: argument "run_in_background" must be true or false, got "yes"`, r.Text)
	})
	t.Run("an output over the cap is saved whole for Read, its true size said", func(t *testing.T) {
		r := bash(obj{"command": "seq 1 20000"})
		require.False(t, r.IsError, r.Text)
		m := regexp.MustCompile(`^<persisted-output>\nOutput too large \(106\.3KB\)\. Full output saved to: (\S+)\nPreview \(first 2KB\):\n1\n2\n`).FindStringSubmatch(r.Text)
		require.NotNil(t, m, r.Text)
		assert.True(t, strings.HasSuffix(r.Text, "\n...\n</persisted-output>"), r.Text)
		r = sessionCall(t, w, s, "claude", "Read", obj{"file_path": m[1]})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, 20000, strings.Count(r.Text, "\n"))
		assert.True(t, strings.HasSuffix(r.Text, "\n20000\t20000\n"))
	})
	t.Run("background task, TaskOutput, TaskStop", func(t *testing.T) {
		// The task waits for a file the test writes: a state, not a time.
		r := bash(obj{"command": "cd /repo; echo started; while [ ! -e /memory/go ]; do sleep 0.05; done; echo finished; exit 4", "run_in_background": true})
		require.False(t, r.IsError, r.Text)
		m := regexp.MustCompile(`^Command running in background with ID: (\d+)\. `).FindStringSubmatch(r.Text)
		require.NotNil(t, m, r.Text)
		id := m[1]
		assert.Contains(t, r.Text, "Output is being written to: /.vfsmount/tasks/"+id+".output. To check interim output, use Read on that file path.")
		out := func(args obj) Result { return sessionCall(t, w, s, "claude", "TaskOutput", args) }
		r = out(obj{"task_id": id, "block": false, "timeout": 0})
		assert.Contains(t, r.Text, "<retrieval_status>not_ready</retrieval_status>\n<task_id>"+id+"</task_id>\n<task_type>local_bash</task_type>\n<status>running</status>")
		ok(t, w, "write", obj{"path": "/memory/go", "fileText": ""})
		r = out(obj{"task_id": id, "block": true, "timeout": 60000})
		assert.Equal(t, "<retrieval_status>success</retrieval_status>\n<task_id>"+id+"</task_id>\n<task_type>local_bash</task_type>\n<status>failed</status>\n<exit_code>4</exit_code>\n<output>\nstarted\nfinished\n</output>", r.Text)
		assert.Equal(t, "/memory", s.Dir(), "a background task's cd does not move the session")
		r = sessionCall(t, w, s, "claude", "TaskStop", obj{"task_id": id})
		assert.Equal(t, Result{Text: "Task " + id + " is not running (status: failed)", IsError: true}, r)

		r = bash(obj{"command": "sleep 600", "run_in_background": true})
		id = regexp.MustCompile(`ID: (\d+)`).FindStringSubmatch(r.Text)[1]
		r = sessionCall(t, w, s, "claude", "TaskStop", obj{"shell_id": id})
		assert.Equal(t, Result{Text: `{"message":"Successfully stopped task: ` + id + ` (sleep 600)","task_id":"` + id + `","task_type":"local_bash","command":"sleep 600"}`}, r)
		r = out(obj{"task_id": id, "block": false, "timeout": 0})
		assert.Contains(t, r.Text, "<status>killed</status>")
	})
	t.Run("a patch typed into Bash is the edit; one that does not parse is the patch's error", func(t *testing.T) {
		r := bash(obj{"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: /memory/typed.txt\n+typed\n*** End Patch\nEOF"})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, "typed\n", ok(t, w, "read", obj{"path": "/memory/typed.txt"})[7:])
		r = bash(obj{"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Frobnicate: x\n*** End Patch\nEOF"})
		assert.True(t, r.IsError)
		assert.NotContains(t, r.Text, "command not found")
		assert.NotContains(t, r.Text, "Exit code")
		assert.Contains(t, r.Text, "Frobnicate")
	})
	t.Run("bad task ids", func(t *testing.T) {
		r := sessionCall(t, w, s, "claude", "TaskOutput", obj{"task_id": "nope", "block": false, "timeout": 0})
		assert.True(t, r.IsError)
		assert.True(t, strings.HasPrefix(r.Text, "No task found with ID: nope (this session's tasks: "), r.Text)
		r = sessionCall(t, w, s, "claude", "TaskStop", obj{})
		assert.Equal(t, Result{Text: "Missing required parameter: task_id", IsError: true}, r)
		r = call(t, w, "claude", "TaskOutput", obj{"task_id": "1000", "block": false, "timeout": 0})
		assert.Equal(t, Result{Text: "No task found with ID: 1000 (this session has no background tasks; start one with Bash and run_in_background: true)", IsError: true}, r)
		r = call(t, w, "claude", "Bash", obj{"command": "sleep 1", "run_in_background": true})
		assert.True(t, r.IsError)
		assert.Contains(t, r.Text, `Bash: argument "run_in_background" needs a session that outlives this call`)
	})
}

func TestCheckNames(t *testing.T) {
	assert.NoError(t, checkNames([]string{"repo", "memory", "agent"}))
	assert.EqualError(t, checkNames([]string{"repo", "usr"}), "the workspace path /usr collides with the system directory /usr the shell needs; mount it elsewhere")
	assert.Error(t, checkNames([]string{"tmp"}))
}

func TestNoShellWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // a machine without bubblewrap
	mem := memfs.New(memfs.Options{})
	w, err := New(mem, Options{Shell: &ShellOptions{Mountpoint: t.TempDir()}})
	require.NoError(t, err)
	assert.NotContains(t, w.Verbs(), VerbShell)
	_, err = New(mem, Options{Tools: []string{"shell"}, Shell: &ShellOptions{Mountpoint: t.TempDir()}})
	assert.ErrorContains(t, err, `tools: "shell" cannot be served: bubblewrap (bwrap) not found`)
}

// TestNamespaceInvariant: for 200 random paths the ls/read tools and
// ls/cat through the shell agree, a tool write is seen by the shell at
// once, and a shell write by the tools.
func TestNamespaceInvariant(t *testing.T) {
	files := map[string]string{}
	rnd := rand.New(rand.NewPCG(7, 9))
	for i := range 60 {
		files[fmt.Sprintf("d%d/e%d/f%d.txt", rnd.IntN(4), rnd.IntN(3), i)] = fmt.Sprintf("repo file %d\nline two\n", i)
	}
	w := kernelWorkspace(t, files)
	for i := range 60 {
		p := fmt.Sprintf("/memory/m%d/n%d/g%d.txt", rnd.IntN(4), rnd.IntN(3), i)
		ok(t, w, "write", obj{"path": p, "fileText": fmt.Sprintf("memory file %d\n", i)})
	}
	var all []string
	collect := func(root string) {
		got := ok(t, w, "glob", obj{"pattern": "**", "path": root, "limit": 10000})
		for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
			all = append(all, l, filepath.Dir(l))
		}
	}
	collect("/repo")
	collect("/memory")
	sort.Strings(all)
	all = compactStrings(all)
	require.GreaterOrEqual(t, len(all), 100)

	toolNames := func(listing string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(listing), "\n") {
			l, _, _ = strings.Cut(l, "  [")
			out = append(out, strings.TrimSuffix(l, "/"))
		}
		return out
	}
	for i := range 200 {
		p := all[rnd.IntN(len(all))]
		if strings.HasSuffix(p, ".txt") {
			content := ok(t, w, "read", obj{"path": p})
			sh := ok(t, w, "shell", obj{"command": "cat " + p})
			var plain strings.Builder
			for _, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
				_, text, _ := strings.Cut(l, "\t")
				plain.WriteString(text + "\n")
			}
			assert.Equal(t, "exit code: 0\n--- stdout ---\n"+plain.String(), sh, "path %d %s", i, p)
			continue
		}
		listing := toolNames(ok(t, w, "ls", obj{"depth": 1, "path": p}))
		sh := ok(t, w, "shell", obj{"command": "ls -1A " + p})
		assert.Equal(t, "exit code: 0\n--- stdout ---\n"+strings.Join(listing, "\n")+"\n", sh, "path %d %s", i, p)
	}

	// A tool write is what the next cat prints, and the reverse.
	for i := range 5 {
		body := fmt.Sprintf("version %d", i)
		ok(t, w, "write", obj{"path": "/memory/flip.txt", "fileText": body})
		assert.Equal(t, "exit code: 0\n--- stdout ---\n"+body+"\n", ok(t, w, "shell", obj{"command": "cat /memory/flip.txt; echo"}))
		ok(t, w, "shell", obj{"command": fmt.Sprintf("echo shell %d > /memory/flip.txt", i)})
		assert.Equal(t, fmt.Sprintf("     1\tshell %d\n", i), ok(t, w, "read", obj{"path": "/memory/flip.txt"}))
	}
	ok(t, w, "delete", obj{"path": "/memory/flip.txt"})
	assert.Contains(t, ok(t, w, "shell", obj{"command": "ls /memory/flip.txt 2>&1"}), "No such file or directory")
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if v == "/" || (i > 0 && v == s[i-1]) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// TestBriefWithoutShellTool: an allowlist that leaves the shell out leaves
// it out of the brief too, though the workspace could run one.
func TestBriefWithoutShellTool(t *testing.T) {
	full := kernelWorkspace(t, nil)
	w, err := New(full.fsys, Options{Shell: &ShellOptions{Mountpoint: full.shell.opts.Mountpoint}, Tools: []string{"read", "write"}})
	require.NoError(t, err)
	require.NotNil(t, w.shell, "the workspace could run a shell")
	for _, d := range Dialects {
		b := w.BriefFor(d)
		assert.NotContains(t, b, "shell", d)
		assert.NotContains(t, b, "cd ", d)
	}
	assert.Contains(t, full.BriefFor("claude"), "the shell (Bash) sees the same tree")
	assert.Contains(t, full.BriefFor("codex"), "the shell (exec_command) sees the same tree")
	assert.Contains(t, full.BriefFor("claude"), "Relative paths resolve against the session's directory (at first /memory); cd in the shell moves it.\n")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestSavedOutputsGoFirst: a session full of saved outputs (ended
// commands kept for Read) drops those before a running task.
func TestSavedOutputsGoFirst(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"README.md": "hello\n"})
	w.maxSessionProcs = 2
	s := w.NewSession()
	t.Cleanup(func() { s.Close() })
	r := sessionCall(t, w, s, "claude", "Bash", obj{"command": "sleep 600", "run_in_background": true})
	require.False(t, r.IsError, r.Text)
	running := mustAtoi(t, regexp.MustCompile(`ID: (\d+)`).FindStringSubmatch(r.Text)[1])
	for range 3 {
		r = sessionCall(t, w, s, "claude", "Bash", obj{"command": "seq 1 20000"})
		require.True(t, strings.HasPrefix(r.Text, "<persisted-output>"), r.Text)
	}
	p, ok := s.proc(running)
	require.True(t, ok, "the running task is kept")
	assert.False(t, p.exited())
	assert.Len(t, s.running(), 2)
}

// TestBriefSaysWhatARemoteShellSees: a remote mount's commands run on its
// machine, and the brief says whether the rest of the workspace is there.
func TestBriefSaysWhatARemoteShellSees(t *testing.T) {
	full := kernelWorkspace(t, nil)
	for _, rest := range []bool{false, true} {
		w, err := New(full.fsys, Options{Shell: &ShellOptions{Mountpoint: full.shell.opts.Mountpoint,
			Remote: []RemoteShell{{Prefix: "/workspace", Source: "ssh://build-box", Rest: rest}}}})
		require.NoError(t, err)
		b := w.BriefFor("claude")
		assert.Contains(t, b, "A command whose directory is in /workspace runs on ssh://build-box (its processes and tools)")
		if rest {
			assert.Contains(t, b, "where /workspace is the same files and the rest of this workspace is at its paths too")
		} else {
			assert.Contains(t, b, "where /workspace is the same files and the rest of this workspace is not mounted")
		}
	}
	// Over SFTP the files are at their own path there.
	w, err := New(full.fsys, Options{Shell: &ShellOptions{Mountpoint: full.shell.opts.Mountpoint,
		Remote: []RemoteShell{{Prefix: "/workspace", Source: "ssh://build-box over SFTP", Note: "served over SFTP"}}}})
	require.NoError(t, err)
	b := w.BriefFor("claude")
	assert.Contains(t, b, "where the same files are at their own path and the rest of this workspace is not mounted")
	assert.Contains(t, b, "/workspace is served over SFTP.\n")
}
