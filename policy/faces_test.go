package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/union"
)

// stack is a workspace built the way cmd/vfsmount builds one: the union,
// path rules, audit, the kernel face over that, and the tool face over
// the same tree, observed.
type stack struct {
	mnt   string
	tools *agentbridge.Workspace
	log   *policy.AuditLog
	path  string // of the audit log
}

func newStack(t *testing.T, rules policy.Rules) *stack {
	t.Helper()
	fusetest.Need(t)
	ctx := context.Background()
	repo, mem := memfs.New(memfs.Options{}), memfs.New(memfs.Options{})
	for _, d := range []string{"secrets", "src"} {
		require.NoError(t, repo.Mkdir(ctx, d, 0o755))
	}
	require.NoError(t, mem.Mkdir(ctx, "ro", 0o777))
	for name, fsys := range map[string]mounts.FS{".env": repo, "secrets/key": repo, "src/a.go": repo, "README": repo, "ro/x": mem, "note": mem} {
		require.NoError(t, mounts.WriteFile(ctx, fsys, name, []byte("text of "+name+"\n"), 0o666))
	}
	u, err := union.New(map[string]mounts.FS{"/repo": repo, "/memory": mem})
	require.NoError(t, err)
	rs, err := policy.Compile(rules)
	require.NoError(t, err)
	s := &stack{path: filepath.Join(t.TempDir(), "audit.jsonl")}
	s.log, err = policy.OpenAudit(policy.AuditOptions{Path: s.path})
	require.NoError(t, err)
	t.Cleanup(func() { s.log.Close() })
	fsys := policy.Audit(policy.Guard(u, rs), s.log)

	s.mnt = t.TempDir()
	srv, err := fusefs.Mount(s.mnt, fsys, fusefs.Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			assert.NoError(t, fusefs.ForceUnmount(s.mnt))
		}
	})
	s.tools, err = agentbridge.New(mounts.Observe(fsys, srv.Invalidate), agentbridge.Options{
		AfterCall: func(_ context.Context, c *agentbridge.CallInfo, res agentbridge.Result, d time.Duration) {
			out := "ok"
			if res.IsError {
				out = "error"
			}
			s.log.ToolCall(policy.ToolCall{CallID: c.ID, Tool: c.Tool, Verb: c.Verb, Args: c.Summary(), Paths: c.Paths, Outcome: out, Duration: d})
		}})
	require.NoError(t, err)
	return s
}

var faceRules = policy.Rules{
	DenyRead:  []string{"*.env", "/repo/secrets/"},
	DenyWrite: []string{"/repo/src/*.go"},
	ReadOnly:  []string{"/memory/ro"},
}

// TestSameVerdictBothFaces: every rule gives the same verdict through the
// kernel and through the tools.
func TestSameVerdictBothFaces(t *testing.T) {
	s := newStack(t, faceRules)
	type verdict string
	const (
		ok     verdict = "ok"
		denied verdict = "EACCES"
		rofs   verdict = "EROFS"
	)
	tests := []struct {
		path string
		op   string // read, write, delete
		want verdict
	}{
		{"/repo/.env", "read", denied},
		{"/repo/secrets/key", "read", denied},
		{"/repo/README", "read", ok},
		{"/repo/src/a.go", "read", ok},
		{"/repo/src/a.go", "write", denied},
		{"/repo/src/new.go", "write", denied},
		{"/repo/src/notes.txt", "write", ok},
		{"/memory/ro/x", "read", ok},
		{"/memory/ro/x", "write", rofs},
		{"/memory/ro/new", "write", rofs},
		{"/memory/note", "write", ok},
		{"/repo/src/a.go", "delete", denied},
		{"/memory/ro/x", "delete", rofs},
		{"/repo/README", "delete", ok},
	}
	kernel := func(op, p string) verdict {
		var err error
		host := filepath.Join(s.mnt, p)
		switch op {
		case "read":
			_, err = os.ReadFile(host)
		case "write":
			err = os.WriteFile(host, []byte("new\n"), 0o644)
		case "delete":
			err = os.Remove(host)
		}
		switch {
		case err == nil:
			return ok
		case errors.Is(err, syscall.EACCES):
			return denied
		case errors.Is(err, syscall.EROFS):
			return rofs
		}
		return verdict(err.Error())
	}
	tool := func(op, p string) verdict {
		args := map[string]string{"path": p}
		if op == "write" {
			args["fileText"] = "new\n"
		}
		raw, _ := json.Marshal(args)
		res := s.tools.Call(context.Background(), "", op, raw)
		switch {
		case !res.IsError:
			return ok
		case strings.Contains(res.Text, "denied by policy"):
			return denied
		case strings.Contains(res.Text, "read-only"):
			return rofs
		}
		return verdict(res.Text)
	}
	for _, tt := range tests {
		t.Run(tt.op+" "+tt.path, func(t *testing.T) {
			// Deletes and writes that succeed change the tree, so each
			// face gets a verdict on a fresh copy of the same entry:
			// the kernel first, then (after restoring) the tool.
			k := kernel(tt.op, tt.path)
			restore(t, s, tt.path)
			tl := tool(tt.op, tt.path)
			restore(t, s, tt.path)
			assert.Equal(t, tt.want, k, "kernel face")
			assert.Equal(t, tt.want, tl, "tool face")
		})
	}
	// A denied entry stays visible in listings and to stat.
	ents, err := os.ReadDir(filepath.Join(s.mnt, "repo"))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Contains(t, names, ".env")
	_, err = os.Stat(filepath.Join(s.mnt, "repo/.env"))
	assert.NoError(t, err)
	res := s.tools.Call(context.Background(), "", "ls", json.RawMessage(`{"path":"/repo"}`))
	assert.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, ".env")
}

// restore puts back the seeded entry at p if an allowed write or delete
// changed it, through the tool face (which may be refused; then nothing
// changed).
func restore(t *testing.T, s *stack, p string) {
	t.Helper()
	if strings.HasPrefix(p, "/memory/ro/") || strings.HasPrefix(p, "/repo/src/a.go") {
		return
	}
	raw, _ := json.Marshal(map[string]string{"path": p, "fileText": "text of restored\n"})
	_ = s.tools.Call(context.Background(), "", "write", raw)
}

// TestKernelAudit: a write from another process through the kernel is one
// create and one write line carrying that process's pid, and the content
// is never logged; a tool write carries its call id.
func TestKernelAudit(t *testing.T) {
	s := newStack(t, faceRules)
	const secret = "s3cr3t-VALUE-7d2a"
	target := filepath.Join(s.mnt, "memory", "k.txt")
	cmd := exec.Command("/bin/sh", "-c", `printf '%s' "$SECRET" > "$TARGET"`)
	cmd.Env = append(os.Environ(), "SECRET="+secret, "TARGET="+target)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	pid := float64(cmd.Process.Pid)

	// The kernel sends RELEASE after close(2) has returned, so the write
	// line (logged at release) may trail the writer's exit a little.
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(s.path)
		return err == nil && strings.Contains(string(data), `"op":"write"`)
	}, 5*time.Second, 5*time.Millisecond)

	res := s.tools.Call(context.Background(), "", "write", json.RawMessage(`{"path":"/memory/t.txt","fileText":"`+secret+`"}`))
	require.False(t, res.IsError, res.Text)
	require.NoError(t, s.log.Close())

	data, err := os.ReadFile(s.path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), secret, "file contents are never logged")
	var kernelLines, toolLines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		switch m["face"] {
		case "kernel":
			kernelLines = append(kernelLines, m)
		case "tool":
			toolLines = append(toolLines, m)
		}
	}
	require.Len(t, kernelLines, 2, "%s", data)
	assert.Equal(t, "create", kernelLines[0]["op"])
	assert.Equal(t, "write", kernelLines[1]["op"])
	assert.Equal(t, float64(len(secret)), kernelLines[1]["bytes"])
	for _, m := range kernelLines {
		assert.Equal(t, "/memory/k.txt", m["path"])
		assert.Equal(t, pid, m["pid"], "the writer's pid")
		assert.Equal(t, float64(os.Getuid()), m["uid"])
	}
	require.Len(t, toolLines, 3, "%s", data) // create, write, call
	id := toolLines[2]["call"]
	assert.Equal(t, "call", toolLines[2]["op"])
	assert.Regexp(t, `^call-[0-9a-f]{12}$`, id)
	for _, m := range toolLines {
		assert.Equal(t, id, m["call"], "mutations carry their call's id")
	}
	assert.Equal(t, map[string]any{"path": "/memory/t.txt", "fileText": map[string]any{"bytes": float64(len(secret))}}, toolLines[2]["args"])
}
