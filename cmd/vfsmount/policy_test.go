package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/union"
)

// writeConfig writes a config file with a memory mount plus extra YAML.
func writeConfig(t *testing.T, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vfsmount.yaml")
	require.NoError(t, os.WriteFile(p, []byte("mounts:\n  - {type: memory, dst: /memory}\n"+extra), 0o644))
	return p
}

func TestPolicyBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"invalid pattern flag", []string{"--deny-read", "/memory/[x"}, `policy: deny_read: invalid pattern "/memory/[x"`},
		{"invalid pattern config", []string{"--config", writeConfig(t, "policy:\n  deny_write: ['a**b']\n")}, `policy: deny_write: invalid pattern "a**b"`},
		{"unknown policy key", []string{"--config", writeConfig(t, "policy:\n  deny_reads: [x]\n")}, `:4: unknown key "deny_reads"`},
		{"unknown limits key", []string{"--config", writeConfig(t, "policy:\n  limits: {max_files: 3}\n")}, `unknown key "max_files"`},
		{"bad size", []string{"--config", writeConfig(t, "policy:\n  limits: {max_file_bytes: lots}\n")}, `want a size such as 1048576 or 16MiB, got the value "lots"`},
		{"shell timeout over max", []string{"--config", writeConfig(t, "policy:\n  limits: {max_shell_timeout: 1h}\n")}, "max_shell_timeout: at most 10m0s"},
		{"unknown audit key", []string{"--config", writeConfig(t, "audit: {file: x}\n")}, `unknown key "file"`},
		{"audit without path", []string{"--config", writeConfig(t, "audit: {max_bytes: 1MiB}\n")}, "audit: path: missing"},
		{"unopenable audit", []string{"--audit", filepath.Join(dir, "no", "such", "audit.jsonl")}, "audit: cannot open " + filepath.Join(dir, "no", "such", "audit.jsonl")},
		{"missing approval flag", []string{"--approval", "/nonexistent/approve --x"}, `approval: command "/nonexistent/approve": not found`},
		{"missing approval config", []string{"--config", writeConfig(t, "approval: {command: [./approve.sh]}\n")}, `approval: command "`},
		{"approval verb", []string{"--approval", "true", "--approval-on", "read"}, `approval: on: unknown verb "read"`},
		{"approval-on alone", []string{"--approval-on", "write"}, "need an approval command"},
		{"bad read-only", []string{"--read-only", "memory"}, `read_only: invalid prefix "memory"`},
		{"bad dry_run", []string{"--config", writeConfig(t, "dry_run: maybe\n")}, ":3: want true or false, got a string (maybe)"},
		{"bad size flag", []string{"--max-file-bytes", "lots"}, "--max-file-bytes: "},
		{"zero size flag", []string{"--max-read-bytes", "0"}, `--max-read-bytes: invalid size "0"`},
		{"shell timeout flag over max", []string{"--max-shell-timeout", "1h"}, "--max-shell-timeout: at most 10m0s"},
		{"audit size without audit", []string{"--audit-max-bytes", "1MiB"}, "--audit-max-bytes needs an audit log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--mount", "type=memory,dst=/scratch"}, tt.args...)
			code, _, errOut := runTool(context.Background(), "tools", args...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Contains(t, errOut, tt.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
		})
	}
}

func TestPolicyConfig(t *testing.T) {
	dir := t.TempDir()
	approve := filepath.Join(dir, "approve.sh")
	require.NoError(t, os.WriteFile(approve, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	cfgPath := filepath.Join(dir, "vfsmount.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(`mounts:
  - {type: memory, dst: /memory}
policy:
  deny_read: ["*.env"]
  deny_write: [/memory/locked/]
  read_only: [/memory/ro]
  limits: {max_file_bytes: 1MiB, max_read_bytes: 64K, max_shell_timeout: 30s, max_output_bytes: 100000}
audit: {path: logs.jsonl, max_bytes: 2MiB}
approval: {command: ./approve.sh, on: [write, shell], timeout: 5s}
dry_run: true
`), 0o644))
	wf := workspaceFlags{Config: cfgPath}
	wf.Policy.DenyRead = []string{"/memory/secrets/"}
	cfg, err := wf.load(context.Background(), nil)
	require.NoError(t, err)
	pc := cfg.Policy
	assert.True(t, pc.DryRun)
	assert.Equal(t, agentbridge.Limits{MaxFileBytes: 1 << 20, MaxReadBytes: 64 << 10, MaxShellTimeout: 30e9, MaxOutputBytes: 100000}, pc.Limits)
	require.NotNil(t, pc.Audit)
	assert.Equal(t, filepath.Join(dir, "logs.jsonl"), pc.Audit.Path, "relative to the config file")
	assert.Equal(t, int64(2<<20), pc.Audit.MaxBytes)
	require.NotNil(t, pc.Approver)
	assert.True(t, pc.Approver.Applies("shell"))
	assert.False(t, pc.Approver.Applies("delete"))
	// Both deny_read sources refuse reads (the file's pattern, the flag's
	// directory).
	u, err := union.New(map[string]mounts.FS{"/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, mounts.MkdirAll(ctx, u, "memory/secrets", 0o755))
	for _, name := range []string{"memory/a.env", "memory/secrets/key", "memory/ok"} {
		require.NoError(t, mounts.WriteFile(ctx, u, name, []byte("x"), 0o644))
	}
	guarded := policy.Guard(u, pc.Rules)
	for _, name := range []string{"memory/a.env", "memory/secrets/key"} {
		_, err := mounts.ReadFile(ctx, guarded, name)
		assert.ErrorIs(t, err, mounts.ErrDenied, name)
	}
	_, err = mounts.ReadFile(ctx, guarded, "memory/ok")
	assert.NoError(t, err)
	assert.True(t, pc.Rules.ReadOnlyAt("/memory/ro/x"))

	// The limit flags replace the file's values.
	wf.Policy.MaxFileBytes, wf.Policy.MaxReadBytes, wf.Policy.MaxOutputBytes = "2MiB", "1K", "4096"
	wf.Policy.MaxShellTimeout, wf.Policy.AuditMaxBytes = time.Minute, "8MiB"
	cfg, err = wf.load(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, agentbridge.Limits{MaxFileBytes: 2 << 20, MaxReadBytes: 1 << 10, MaxShellTimeout: time.Minute, MaxOutputBytes: 4096}, cfg.Policy.Limits)
	assert.Equal(t, int64(8<<20), cfg.Policy.Audit.MaxBytes)
}

func hashDir(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		fmt.Fprintf(h, "%s %v %d\n", p, info.Mode(), info.Size())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			h.Write(data)
		}
		return nil
	}))
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestDryRunWorkspace: with --dry-run a batch of effectful tool calls
// leaves the host directory byte for byte as it was, and the kernel face
// refuses writes with EROFS.
func TestDryRunWorkspace(t *testing.T) {
	fusetest.Need(t)
	host := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(host, "d", "e"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(host, "d", "e", "f"), []byte("f\n"), 0o644))
	before := hashDir(t, host)

	bf := bridgeFlags{ws: workspaceFlags{Mounts: []string{"type=host,src=" + host + ",dst=/host"}, Policy: policyFlags{DryRun: true}}}
	a := newApp(&strings.Builder{}, &strings.Builder{})
	b, err := openBridge(context.Background(), a, &bf, privateKernel, "")
	if err != nil && strings.Contains(err.Error(), "mount at") {
		fusetest.MountFailed(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Close()) })

	ctx := context.Background()
	calls := []struct{ tool, args, want string }{
		{"write", `{"path":"/host/new.txt","fileText":"x"}`, "would create /host/new.txt (1 bytes)"},
		{"edit", `{"path":"/host/a.txt","oldText":"two","newText":"2"}`, "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"},
		{"delete", `{"path":"/host/d","recursive":true}`, "would delete /host/d and 2 entries below it"},
		{"edit", `{"patchContent":"*** Begin Patch\n*** Add File: /host/p.txt\n+p\n*** End Patch"}`, "--- /dev/null\n+++ b/host/p.txt\n"},
	}
	for _, c := range calls {
		res := b.tools.Call(ctx, "", c.tool, json.RawMessage(c.args))
		require.False(t, res.IsError, res.Text)
		assert.Contains(t, res.Text, c.want)
	}
	assert.Contains(t, b.tools.Verbs(), "write", "the dry-run tool list still offers what it would do")

	mnt := b.srv.Mountpoint()
	err = os.WriteFile(filepath.Join(mnt, "host", "k.txt"), []byte("k"), 0o644)
	assert.True(t, errors.Is(err, syscall.EROFS), "kernel face is read-only: %v", err)
	data, err := os.ReadFile(filepath.Join(mnt, "host", "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\n", string(data), "reads still work")

	assert.Equal(t, before, hashDir(t, host), "the tree is unchanged")
}

// TestAuditAndApprovalCommand: call with --audit and --approval through
// the CLI: the denial is a tool error with the command's reason, and the
// log has one line per call, without contents.
func TestAuditAndApprovalCommand(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.jsonl")
	approve := filepath.Join(dir, "approve.sh")
	require.NoError(t, os.WriteFile(approve, []byte("#!/bin/sh\ngrep -q '\"verb\":\"delete\"' && { echo 'deletes need a human'; exit 1; }\nexit 0\n"), 0o755))
	const secret = "p4ssw0rd-CONTENT"
	mem := []string{"--mount", "type=memory,dst=/memory", "--audit", logPath, "--approval", approve}

	code, out, errOut := runTool(context.Background(), "call", append(mem, "write", `{"path":"/memory/s.txt","fileText":"`+secret+`"}`)...)
	require.Equal(t, 0, code, errOut+out)
	code, out, _ = runTool(context.Background(), "call", append(mem, "delete", `{"path":"/memory/s.txt"}`)...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "delete: not approved: deletes need a human; nothing was changed\n", out)

	data, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.NotContains(t, string(data), secret)
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	require.Len(t, lines, 4, "%s", data) // create, write, call; call (denied)
	assert.Equal(t, []any{"create", "write", "call", "call"}, []any{lines[0]["op"], lines[1]["op"], lines[2]["op"], lines[3]["op"]})
	assert.Equal(t, "ok", lines[2]["outcome"])
	assert.Equal(t, "denied", lines[3]["outcome"])
	assert.Equal(t, "not approved: deletes need a human", lines[3]["error"])
	assert.Equal(t, lines[0]["call"], lines[2]["call"], "the write's mutations carry its call id")
}
