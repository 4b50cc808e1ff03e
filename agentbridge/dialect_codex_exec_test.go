package agentbridge

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
)

// sessionCall calls a tool of dialect in session s.
func sessionCall(t testing.TB, w *Workspace, s *Session, dialect, tool string, args any) Result {
	t.Helper()
	return w.Call(WithSession(context.Background(), s), dialect, tool, mustJSON(args))
}

// execOut parses codex's exec result: its sections by name, and Output.
func execOut(t testing.TB, text string) (map[string]string, string) {
	t.Helper()
	head, out, found := strings.Cut(text, "Output:\n")
	if !found && strings.HasSuffix(text, "Output:") {
		head, found = strings.TrimSuffix(text, "Output:"), true
	}
	require.True(t, found, "no Output section in %q", text)
	sec := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(head, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "Process exited with code "):
			sec["exit"] = strings.TrimPrefix(l, "Process exited with code ")
		case strings.HasPrefix(l, "Process running with session ID "):
			sec["session"] = strings.TrimPrefix(l, "Process running with session ID ")
		default:
			k, v, ok := strings.Cut(l, ": ")
			require.True(t, ok, "bad section line %q in %q", l, text)
			sec[k] = v
		}
	}
	return sec, out
}

var execHead = regexp.MustCompile(`^Chunk ID: [0-9a-f]{6}\nWall time: [0-9]+\.[0-9]{4} seconds\n`)

// TestExecCommand: codex's exec_command and write_stdin as codex-rs runs
// them: the exit code of a command that ends within yield_time_ms, the
// session id of one that does not, later output and input through
// write_stdin, and the bounds of a session.
func TestExecCommand(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"README.md": "hello from repo\n"})
	s := w.NewSession()
	defer s.Close()

	t.Run("a command that ends is reported with its exit code, streams merged", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "echo out; echo err >&2; exit 3"})
		require.False(t, r.IsError, r.Text)
		assert.Regexp(t, execHead, r.Text)
		sec, out := execOut(t, r.Text)
		assert.Equal(t, "3", sec["exit"])
		assert.Equal(t, "out\nerr\n", out)
		assert.Equal(t, "2", sec["Original token count"])
		assert.Empty(t, sec["session"])
	})
	t.Run("workdir, and the workspace at its paths", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "pwd; cat README.md", "workdir": "/repo"})
		_, out := execOut(t, r.Text)
		assert.Equal(t, "/repo\nhello from repo\n", out)
	})
	t.Run("a command still running keeps running under a session id", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "echo first; sleep 4; echo second; exit 7", "yield_time_ms": 2000})
		require.False(t, r.IsError, r.Text)
		sec, out := execOut(t, r.Text)
		require.NotEmpty(t, sec["session"], r.Text)
		assert.Empty(t, sec["exit"])
		assert.Equal(t, "first\n", out)
		id := sec["session"]

		r = sessionCall(t, w, s, "codex", "write_stdin", obj{"session_id": id, "yield_time_ms": 10000})
		require.False(t, r.IsError, r.Text)
		sec, out = execOut(t, r.Text)
		assert.Equal(t, "7", sec["exit"], "the poll returns when the process ends")
		assert.Equal(t, "second\n", out, "only what came since the last read")

		r = sessionCall(t, w, s, "codex", "write_stdin", obj{"session_id": id})
		assert.True(t, r.IsError)
		assert.Equal(t, "write_stdin failed: Unknown process id "+id+" (this session keeps no running processes)", r.Text)
	})
	t.Run("tty: write_stdin types into the terminal", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "read -r line; echo \"got:$line\"; [ -t 0 ] && echo tty", "tty": true, "yield_time_ms": 300})
		sec, _ := execOut(t, r.Text)
		require.NotEmpty(t, sec["session"], r.Text)
		r = sessionCall(t, w, s, "codex", "write_stdin", obj{"session_id": sec["session"], "chars": "hello\n", "yield_time_ms": 3000})
		require.False(t, r.IsError, r.Text)
		sec, out := execOut(t, r.Text)
		assert.Equal(t, "0", sec["exit"], r.Text)
		assert.Contains(t, out, "got:hello")
		assert.Contains(t, out, "tty")
	})
	t.Run("without tty stdin is closed, as in codex", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "sleep 5", "yield_time_ms": 250})
		sec, _ := execOut(t, r.Text)
		require.NotEmpty(t, sec["session"], r.Text)
		r = sessionCall(t, w, s, "codex", "write_stdin", obj{"session_id": sec["session"], "chars": "x\n"})
		assert.True(t, r.IsError)
		assert.Equal(t, "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open", r.Text)
	})
	t.Run("a call without a session cannot keep a process", func(t *testing.T) {
		start := time.Now()
		// The yield leaves bubblewrap and bash ample time to start and
		// print on a loaded machine; the kill comes at its end.
		r := call(t, w, "codex", "exec_command", obj{"cmd": "echo begun; sleep 30", "yield_time_ms": 2000})
		assert.Less(t, time.Since(start), 10*time.Second)
		sec, out := execOut(t, r.Text)
		assert.Equal(t, "137", sec["exit"], "killed")
		assert.Contains(t, sec["Note"], "this call keeps no session")
		assert.Equal(t, "begun\n", out)
	})
	t.Run("output is cut to max_output_tokens as codex cuts it", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "seq 1 100", "max_output_tokens": 10})
		sec, out := execOut(t, r.Text)
		var full strings.Builder
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(&full, "%d\n", i)
		}
		assert.Equal(t, fmt.Sprint(approxTokens(full.Len())), sec["Original token count"])
		assert.Equal(t, formattedTruncate(full.String(), 10), out)
		// 40 bytes kept, 20 at each end, on the budget's byte boundary.
		assert.True(t, strings.HasPrefix(out, "Total output lines: 100\n\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10…63 tokens truncated…\n95\n"), out)
		assert.True(t, strings.HasSuffix(out, "tokens truncated…\n95\n96\n97\n98\n99\n100\n"), out)
	})
	t.Run("shell and login", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "shopt -q login_shell && echo login || echo plain"})
		_, out := execOut(t, r.Text)
		assert.Equal(t, "login\n", out, "codex runs a login shell unless login is false")
		r = sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "shopt -q login_shell && echo login || echo plain", "login": false})
		_, out = execOut(t, r.Text)
		assert.Equal(t, "plain\n", out)
		r = sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "echo $0", "shell": "sh", "login": false})
		_, out = execOut(t, r.Text)
		assert.Equal(t, "/usr/bin/sh\n", out)
	})
	t.Run("bad input names codex's arguments", func(t *testing.T) {
		for _, tc := range []struct {
			tool string
			args obj
			want string
		}{
			{"exec_command", obj{}, `exec_command: missing required argument "cmd"`},
			{"exec_command", obj{"cmd": 7}, `exec_command: argument "cmd" must be a string, got 7`},
			{"exec_command", obj{"cmd": "true", "yield_time_ms": "soon"}, `exec_command: argument "yield_time_ms" must be an integer, got "soon"`},
			{"exec_command", obj{"cmd": "true", "workdir": "/repo/README.md"}, `exec_command: workdir /repo/README.md is not a directory`},
			{"exec_command", obj{"cmd": "true", "workdir": "/nowhere"}, `exec_command: workdir /nowhere: no such file or directory`},
			{"exec_command", obj{"cmd": "true", "sandbox_permissions": "require_escalated"}, `exec_command: argument "sandbox_permissions": "require_escalated" cannot be granted here`},
			{"exec_command", obj{"cmd": "true", "shell": "fish"}, `exec_command: argument "shell": "fish" is not a POSIX shell`},
			{"exec_command", obj{"cmd": "true", "tty": "maybe"}, `exec_command: argument "tty" must be true or false, got "maybe"`},
			{"exec_command", obj{"cmd": "true", "workdir": "/memory/a\x01b"}, "exec_command /memory/a\x01b: invalid path"},
			{"write_stdin", obj{}, `write_stdin: missing required argument "session_id"`},
			{"write_stdin", obj{"session_id": 424242}, `write_stdin failed: Unknown process id 424242`},
			{"write_stdin", obj{"session_id": 1, "chars": 5}, `write_stdin: argument "chars" must be a string, got 5`},
			{"shell_command", obj{"command": "true", "timeout_ms": 0}, `shell_command: argument "timeout_ms" must be between 1 and 600000, got 0`},
		} {
			r := sessionCall(t, w, s, "codex", tc.tool, tc.args)
			assert.True(t, r.IsError, "%s %v: %s", tc.tool, tc.args, r.Text)
			assert.Contains(t, r.Text, tc.want)
		}
	})
	t.Run("shell_command runs to its end, as codex's freeform exec output", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "shell_command", obj{"command": "echo a; echo b >&2; exit 2"})
		require.False(t, r.IsError, r.Text)
		assert.Regexp(t, `^Exit code: 2\nWall time: [0-9.]+ seconds\nOutput:\na\nb\n$`, r.Text)
		r = sessionCall(t, w, s, "codex", "shell_command", obj{"command": "echo started; sleep 30", "timeout_ms": 2000})
		assert.Regexp(t, `^Exit code: 124\nWall time: [0-9.]+ seconds\nOutput:\ncommand timed out after 2000 milliseconds\nstarted\n$`, r.Text)
	})
	t.Run("the tool list has codex's shell family, the legacy ones answer unlisted", func(t *testing.T) {
		defs, err := w.Tools("codex")
		require.NoError(t, err)
		var names []string
		for _, d := range defs {
			names = append(names, d.Name)
		}
		assert.Equal(t, []string{"read_file", "list_dir", "grep_files", "apply_patch", "exec_command", "write_stdin", "view_image"}, names)
		assert.False(t, call(t, w, "codex", "shell_command", obj{"command": "true"}).IsError)
		assert.False(t, call(t, w, "codex", "shell", obj{"command": []string{"true"}}).IsError)
		assert.True(t, ShellTool("codex", "exec_command"))
		assert.True(t, ShellTool("codex", "write_stdin"))
		assert.True(t, ShellTool("claude", "Bash"))
		assert.False(t, ShellTool("codex", "apply_patch"))
	})
}

// TestExecSessionBounds: a session keeps at most maxSessionProcs processes
// (the least recently used is stopped for a new one), none for longer than
// Limits.MaxShellTimeout, and stops them all when it or the workspace
// closes.
func TestExecSessionBounds(t *testing.T) {
	w := kernelWorkspaceOpts(t, nil, func(o *Options) { o.Limits.MaxShellTimeout = 3 * time.Second })
	w.maxSessionProcs = 2
	start := func(s *Session) string {
		t.Helper()
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "sleep 60", "yield_time_ms": 250})
		sec, _ := execOut(t, r.Text)
		require.NotEmpty(t, sec["session"], r.Text)
		return sec["session"]
	}
	s := w.NewSession()
	first, second := start(s), start(s)
	var id int
	fmt.Sscan(first, &id)
	p, _ := s.proc(id)
	p.touch() // first is now the more recently used
	r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "sleep 60", "yield_time_ms": 250})
	sec, _ := execOut(t, r.Text)
	assert.Contains(t, sec["Note"], "session ID "+second+" (sleep 60) was stopped: a session keeps at most 2 processes")
	assert.Len(t, s.running(), 2)
	assert.NotContains(t, fmt.Sprint(s.running()), second)

	// The lifetime bound: after MaxShellTimeout the process is stopped,
	// and the next read says why.
	fmt.Sscan(sec["session"], &id)
	third, ok := s.proc(id)
	require.True(t, ok)
	select {
	case <-third.done:
	case <-time.After(time.Minute):
		t.Fatal("the process outlived MaxShellTimeout (3s) by a minute")
	}
	r = sessionCall(t, w, s, "codex", "write_stdin", obj{"session_id": sec["session"]})
	sec2, _ := execOut(t, r.Text)
	assert.Equal(t, "137", sec2["exit"], r.Text)
	assert.Contains(t, sec2["Note"], "the process was stopped: it ran for 3s, the longest a command may")

	// Close stops what is left; the workspace closes the sessions it has.
	s2 := w.NewSession()
	start(s2)
	procs := func(s *Session) []*process {
		var out []*process
		for _, id := range s.running() {
			p, _ := s.proc(id)
			out = append(out, p)
		}
		return out
	}
	ps := append(procs(s), procs(s2)...)
	require.NotEmpty(t, ps)
	require.NoError(t, s.Close())
	require.NoError(t, w.Close())
	for _, p := range ps {
		assert.True(t, p.exited(), "%s still running", p.cmdline)
	}
	assert.Empty(t, s2.running())
	assert.Empty(t, w.sessions)
}

// TestSessionDir: one current directory per session. `cd` in one shell
// call carries to the next, relative paths of every verb resolve against
// it, and it starts at the first writable mount.
func TestSessionDir(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"README.md": "repo readme\n", "src/a.go": "package a\n"})
	s := w.NewSession()
	defer s.Close()
	shell := func(cmd string) string {
		t.Helper()
		r := sessionCall(t, w, s, "", "shell", obj{"command": cmd})
		require.False(t, r.IsError, r.Text)
		return r.Text
	}
	assert.Equal(t, "/memory", s.Dir(), "the first writable mount")
	assert.Equal(t, "exit code: 0\n--- stdout ---\n/memory\n", shell("pwd"))
	shell("mkdir -p d/e && cd d")
	assert.Equal(t, "/memory/d", s.Dir())
	assert.Equal(t, "exit code: 0\n--- stdout ---\n/memory/d\n", shell("pwd"), "cd carried to the next call")
	// Every verb resolves against it: write, read, ls, the patch's paths.
	require.False(t, sessionCall(t, w, s, "", "write", obj{"path": "f.txt", "fileText": "in d\n"}).IsError)
	assert.Equal(t, "     1\tin d\n", sessionCall(t, w, s, "", "read", obj{"path": "f.txt"}).Text)
	assert.Equal(t, "e/\nf.txt\n", sessionCall(t, w, s, "", "ls", obj{"depth": 1, "path": "."}).Text)
	assert.Equal(t, "1\trepo readme\n", sessionCall(t, w, s, "claude", "Read", obj{"file_path": "../../repo/README.md"}).Text)
	r := sessionCall(t, w, s, "codex", "apply_patch", obj{"input": "*** Begin Patch\n*** Update File: f.txt\n-in d\n+patched\n*** End Patch"})
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "Success. Updated the following files:\nM /memory/d/f.txt\n", r.Text)
	// A failed command that moved still moves; one that ends outside the
	// workspace leaves the session where it was, and says so.
	assert.Equal(t, "exit code: 1\n", shell("cd e && false"))
	assert.Equal(t, "/memory/d/e", s.Dir())
	assert.Equal(t, "exit code: 0\n(the shell ended in /tmp, outside the workspace; the session's directory stays /memory/d/e)\n", shell("cd /tmp"))
	assert.Equal(t, "/memory/d/e", s.Dir())
	// A cwd argument is that call's directory; it moves the session only
	// by a cd in the command.
	assert.Equal(t, "exit code: 0\n--- stdout ---\n/repo\n", sessionCall(t, w, s, "", "shell", obj{"command": "pwd", "cwd": "/repo"}).Text)
	assert.Equal(t, "/memory/d/e", s.Dir())
	sessionCall(t, w, s, "", "shell", obj{"command": "cd src", "cwd": "/repo"})
	assert.Equal(t, "/repo/src", s.Dir())
	// Claude's Bash and codex's exec_command share the session's directory.
	r = sessionCall(t, w, s, "claude", "Bash", obj{"command": "pwd; cd /memory"})
	assert.Equal(t, "/repo/src", r.Text)
	r = sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "pwd"})
	_, out := execOut(t, r.Text)
	assert.Equal(t, "/memory\n", out)
	// Codex 0.171.0 starts every exec_command in the session's working
	// directory: a cd in one call carries neither to the next nor to
	// apply_patch's relative paths.
	r = sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "mkdir -p /memory/cx && cd /memory/cx && pwd"})
	_, out = execOut(t, r.Text)
	assert.Equal(t, "/memory/cx\n", out)
	assert.Equal(t, "/memory", s.Dir())
	r = sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "pwd"})
	_, out = execOut(t, r.Text)
	assert.Equal(t, "/memory\n", out)
	r = sessionCall(t, w, s, "codex", "apply_patch", obj{"input": "*** Begin Patch\n*** Add File: cx.txt\n+x\n*** End Patch"})
	assert.Equal(t, "Success. Updated the following files:\nA /memory/cx.txt\n", r.Text)
	// A directory removed under the session: the next call runs in the
	// default one and says so.
	shell("mkdir -p /memory/gone && cd /memory/gone")
	require.False(t, sessionCall(t, w, s, "", "delete", obj{"path": "/memory/gone"}).IsError)
	assert.Equal(t, "exit code: 0\n--- stdout ---\n/memory\n(the session's directory /memory/gone no longer exists; this ran in /memory)\n", shell("pwd"))
	// Another session, and a call without one, start at the default.
	ok(t, w, "shell", obj{"command": "cd /repo"}) // a call of its own: nothing carries
	assert.Equal(t, "exit code: 0\n--- stdout ---\n/memory\n", ok(t, w, "shell", obj{"command": "pwd"}))
	other := w.NewSession()
	defer other.Close()
	assert.Equal(t, "/memory", other.Dir())
}

// TestSessionDirWithoutShell: relative paths resolve against the session's
// directory without a kernel face too (the directory is set by the shell
// only, so the test sets it).
func TestSessionDirWithoutShell(t *testing.T) {
	w := fixture(t, map[string]string{"/memory/sub/a.txt": "a\n", "/repo/r.txt": "r\n"}, Options{})
	s := w.NewSession()
	defer s.Close()
	assert.Equal(t, "     1\ta\n", sessionCall(t, w, s, "", "read", obj{"path": "sub/a.txt"}).Text, "the default is the first writable mount")
	s.setDir("/memory/sub")
	assert.Equal(t, "     1\ta\n", sessionCall(t, w, s, "", "read", obj{"path": "a.txt"}).Text)
	assert.Equal(t, "     1\tr\n", sessionCall(t, w, s, "", "read", obj{"path": "../../repo/r.txt"}).Text)
	assert.Equal(t, "read /memory/sub/r.txt: no such file or directory; did you mean /repo/r.txt?", sessionCall(t, w, s, "", "read", obj{"path": "r.txt"}).Text)
	r := sessionCall(t, w, s, "codex", "apply_patch", obj{"input": "*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch"})
	assert.Equal(t, "Success. Updated the following files:\nA /memory/sub/b.txt\n", r.Text)
	data, err := mounts.ReadFile(context.Background(), w.fsys, "memory/sub/b.txt")
	require.NoError(t, err)
	assert.Equal(t, "b\n", string(data))
}
