package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/workspace"
)

// openStack builds the workspace of wf, as every command does.
func openStack(t *testing.T, wf workspaceFlags) *workspace.Workspace {
	t.Helper()
	ws, _, err := wf.open(context.Background(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	return ws
}

// auditOps returns "op path outcome" for every line of the audit log.
func auditOps(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var ops []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var r struct{ Op, Path, Outcome string }
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
		ops = append(ops, r.Op+" "+r.Path+" "+r.Outcome)
	}
	return ops
}

// recorder collects change notices.
type recorder struct {
	mu    sync.Mutex
	names []string
}

func (r *recorder) invalidate(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, names...)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

// TestStackOrder checks the order workspace.stack promises: the path rules
// bind both faces, the audit log sees both faces' changes and refusals,
// and only the tool face's changes are reported to the kernel face.
func TestStackOrder(t *testing.T) {
	ctx := context.Background()
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	ws := openStack(t, workspaceFlags{
		Mounts: []string{"type=memory,dst=/memory"},
		Policy: policyFlags{DenyWrite: []string{"*.lock"}, Audit: logPath},
	})
	notices := &recorder{}
	ws.NotifyKernel(notices.invalidate)
	assert.False(t, ws.KernelReadOnly(), "a memory mount can change")

	kernel, tools := ws.FS, ws.ToolFS()
	assert.ErrorIs(t, mounts.WriteFile(ctx, kernel, "memory/k.lock", []byte("x"), 0o644), mounts.ErrDenied, "a rule binds the kernel face")
	assert.ErrorIs(t, mounts.WriteFile(ctx, tools, "memory/t.lock", []byte("x"), 0o644), mounts.ErrDenied, "and the tool face")
	assert.Empty(t, notices.got(), "refused changes report nothing")

	require.NoError(t, mounts.WriteFile(ctx, kernel, "memory/k", []byte("x"), 0o644))
	assert.Empty(t, notices.got(), "the kernel face's own changes are not reported back to it")
	require.NoError(t, mounts.WriteFile(ctx, tools, "memory/t", []byte("x"), 0o644))
	assert.Contains(t, notices.got(), "memory/t", "a tool's change is reported to the kernel face")

	require.NoError(t, ws.Close())
	ops := auditOps(t, logPath)
	for _, want := range []string{
		"create /memory/k.lock denied", "create /memory/t.lock denied",
		"create /memory/k ok", "create /memory/t ok",
	} {
		assert.Contains(t, ops, want, "the audit log, above the rules, sees either face")
	}
}

// TestStackDryRun: in a dry run the kernel face is read-only and the tool
// face refuses every change before the audit log, while it still reports
// the capabilities it would have.
func TestStackDryRun(t *testing.T) {
	ctx := context.Background()
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	ws := openStack(t, workspaceFlags{
		Mounts: []string{"type=memory,dst=/memory"},
		Policy: policyFlags{DryRun: true, Audit: logPath},
	})
	assert.True(t, ws.KernelReadOnly(), "the kernel face is mounted read-only")
	assert.True(t, mounts.Writable(ws.ToolFS()), "the tool face still lists what it would change")
	assert.ErrorIs(t, mounts.WriteFile(ctx, ws.ToolFS(), "memory/t", []byte("x"), 0o644), mounts.ErrReadOnly)
	_, err := ws.FS.Stat(ctx, "memory/t")
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing changed")
	require.NoError(t, ws.Close())
	assert.Empty(t, auditOps(t, logPath), "Freeze refuses above the audit log: no change reached it")
}

func TestStackKernelFace(t *testing.T) {
	host := t.TempDir()
	ro := openStack(t, workspaceFlags{Mounts: []string{"type=host,src=" + host + ",dst=/host,ro"}})
	assert.True(t, ro.KernelReadOnly(), "nothing can change: the kernel mount is read-only too")
	before, after := ro.ToolHooks()
	assert.Nil(t, before, "no approval command, no approval hook")
	assert.Nil(t, after, "no audit log, no audit hook")

	rw := openStack(t, workspaceFlags{Mounts: []string{"type=host,src=" + host + ",dst=/host,ro", "type=memory,dst=/memory"}})
	assert.False(t, rw.KernelReadOnly(), "one writable mount makes the kernel mount read-write")
	// Not connected to a kernel face: a tool's change goes nowhere.
	require.NoError(t, mounts.WriteFile(context.Background(), rw.ToolFS(), "memory/x", []byte("x"), 0o644))

	hooked := openStack(t, workspaceFlags{
		Mounts: []string{"type=memory,dst=/memory"},
		Policy: policyFlags{Approval: "true", Audit: filepath.Join(t.TempDir(), "audit.jsonl")},
	})
	before, after = hooked.ToolHooks()
	assert.NotNil(t, before, "the approval wraps tool calls")
	assert.NotNil(t, after, "the audit line follows tool calls")
}
