package agentbridge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostProcs counts the processes of this machine that run `sleep token`
// (a job in a shell's namespace is a process here too).
func hostProcs(token string) int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err == nil && bytes.Equal(b, []byte("sleep\x00"+token+"\x00")) {
			n++
		}
	}
	return n
}

// sleepToken is an argument of sleep that names one test's job.
func sleepToken() string { return fmt.Sprintf("%d.%d", 3000+rand.IntN(1000), rand.IntN(1_000_000)) }

// TestJobsSurviveTheCall: what a command starts in the background runs on
// after the call returns, as in a harness's terminal, under an id of the
// session, with its later output readable; the session's end stops it.
// Every wait below is for a state (a file a job writes, a process gone),
// with an upper bound.
func TestJobsSurviveTheCall(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"README.md": "hello\n"})
	s := w.NewSession()
	t.Cleanup(func() { s.Close() })
	exists := func(p string) func() bool {
		return func() bool { return call(t, w, "", "read", obj{"path": p}).IsError == false }
	}

	t.Run("canonical: the call returns with the command's status, the job runs on", func(t *testing.T) {
		r := sessionCall(t, w, s, "", "shell", obj{"command": "set -eu; (while [ ! -e /memory/go1 ]; do sleep 0.05; done; echo late; echo done > /memory/out1) & echo started; exit 3"})
		require.False(t, r.IsError, r.Text)
		m := regexp.MustCompile(`^exit code: 3\n--- stdout ---\nstarted\n\(jobs the command started are still running as job (\d+): read (/\.vfsmount/tasks/\d+\.output) for their output; they are stopped when this session ends\)\n$`).FindStringSubmatch(r.Text)
		require.NotNil(t, m, r.Text)
		ok(t, w, "write", obj{"path": "/memory/go1", "fileText": ""})
		require.Eventually(t, exists("/memory/out1"), time.Minute, 20*time.Millisecond, "the job ran on after the call returned")
		p, found := s.proc(mustAtoi(t, m[1]))
		require.True(t, found)
		<-p.done
		got := sessionCall(t, w, s, "", "read", obj{"path": m[2]})
		assert.Equal(t, "     1\tlate\n", got.Text, "what the job printed after the call is the job's output")
	})

	t.Run("a job started with setsid, outside the shell's children, runs on too", func(t *testing.T) {
		r := sessionCall(t, w, s, "", "shell", obj{"command": "setsid sh -c 'while [ ! -e /memory/go2 ]; do sleep 0.05; done; echo done > /memory/out2' >/dev/null 2>&1 & echo started"})
		require.False(t, r.IsError, r.Text)
		require.Contains(t, r.Text, "still running as job")
		ok(t, w, "write", obj{"path": "/memory/go2", "fileText": ""})
		require.Eventually(t, exists("/memory/out2"), time.Minute, 20*time.Millisecond)
	})

	t.Run("a command without jobs says nothing of them", func(t *testing.T) {
		r := sessionCall(t, w, s, "", "shell", obj{"command": "sleep 0.01 & wait; echo done"})
		assert.Equal(t, "exit code: 0\n--- stdout ---\ndone\n", r.Text)
	})

	t.Run("claude: a task id, the output file, TaskStop", func(t *testing.T) {
		tok := sleepToken()
		r := sessionCall(t, w, s, "claude", "Bash", obj{"command": "(while [ ! -e /memory/go4 ]; do sleep 0.05; done; echo job-says-hi; exec sleep " + tok + ") & echo started"})
		require.False(t, r.IsError, r.Text)
		m := regexp.MustCompile(`^started\nBackground jobs this command started are still running \(ID: (\d+)\)\. Their output is being written to: (\S+)\. `).FindStringSubmatch(r.Text)
		require.NotNil(t, m, r.Text)
		ok(t, w, "write", obj{"path": "/memory/go4", "fileText": ""})
		require.Eventually(t, func() bool { return hostProcs(tok) == 1 }, time.Minute, 20*time.Millisecond, "the job runs")
		require.Eventually(t, func() bool {
			return sessionCall(t, w, s, "claude", "Read", obj{"file_path": m[2]}).Text == "1\tjob-says-hi\n"
		}, time.Minute, 20*time.Millisecond)
		r = sessionCall(t, w, s, "claude", "TaskStop", obj{"task_id": m[1]})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, 0, hostProcs(tok), "TaskStop stopped the job")
	})

	t.Run("codex: exec_command gives a session id that write_stdin reads", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": "(while [ ! -e /memory/go3 ]; do sleep 0.05; done; echo job-output) & echo started", "yield_time_ms": 30000})
		require.False(t, r.IsError, r.Text)
		m := regexp.MustCompile(`Process exited with code 0\n(?s:.*)jobs the command started are still running under session ID (\d+)`).FindStringSubmatch(r.Text)
		require.NotNil(t, m, r.Text)
		assert.Contains(t, r.Text, "Output:\nstarted\n")
		ok(t, w, "write", obj{"path": "/memory/go3", "fileText": ""})
		p, found := s.proc(mustAtoi(t, m[1]))
		require.True(t, found)
		<-p.done
		r = sessionCall(t, w, s, "codex", "write_stdin", obj{"session_id": mustAtoi(t, m[1]), "chars": ""})
		assert.Contains(t, r.Text, "Output:\njob-output\n")
	})

	t.Run("the session's end stops its jobs", func(t *testing.T) {
		s2 := w.NewSession()
		tok := sleepToken()
		r := sessionCall(t, w, s2, "", "shell", obj{"command": "sleep " + tok + " & echo started"})
		require.Contains(t, r.Text, "still running as job", r.Text)
		require.Eventually(t, func() bool { return hostProcs(tok) == 1 }, time.Minute, 20*time.Millisecond, "the job runs")
		require.NoError(t, s2.Close())
		assert.Equal(t, 0, hostProcs(tok), "Close waited for the namespace to end")
	})

	t.Run("a call that keeps no session stops the jobs and says so", func(t *testing.T) {
		tok := sleepToken()
		r := call(t, w, "", "shell", obj{"command": "sleep " + tok + " & echo started"})
		assert.Equal(t, "exit code: 0\n--- stdout ---\nstarted\n(jobs the command left running were stopped: this call keeps no session (a JSON-RPC connection or an MCP session does))\n", r.Text)
		assert.Equal(t, 0, hostProcs(tok))
	})
}
