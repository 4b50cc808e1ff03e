package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// readLog decodes every line of the log at path, failing on any line that
// is not one JSON object.
func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		for _, k := range []string{"time", "face", "op", "outcome"} {
			require.Contains(t, m, k, "every line has %s: %s", k, sc.Text())
		}
		_, err := time.Parse(time.RFC3339Nano, m["time"].(string))
		require.NoError(t, err)
		delete(m, "time")
		out = append(out, m)
	}
	return out
}

func newLog(t *testing.T, opts AuditOptions) (*AuditLog, string) {
	t.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(t.TempDir(), "audit.jsonl")
	}
	l, err := OpenAudit(opts)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l, opts.Path
}

// TestAuditSequence: a fixed sequence of operations from each face yields
// exactly these lines, in order.
func TestAuditSequence(t *testing.T) {
	l, path := newLog(t, AuditOptions{})
	rs, err := Compile(Rules{DenyWrite: []string{"/memory/locked"}})
	require.NoError(t, err)
	m := memfs.New(memfs.Options{})
	require.NoError(t, m.Mkdir(context.Background(), "memory", 0o755))
	fsys := Audit(Guard(m, rs), l)

	kernel := mounts.WithCaller(context.Background(), mounts.Caller{Face: "kernel", Pid: 4242, Uid: 1000, Gid: 1000})
	tool := mounts.WithCaller(context.Background(), mounts.Caller{Face: "tool", CallID: "rpc-1-7"})

	// kernel: create and write in two requests, then close.
	f, err := mounts.OpenFile(kernel, fsys, "memory/a", os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	w := f.(mounts.WritableFile)
	_, err = w.WriteAt([]byte("hello "), 0)
	require.NoError(t, err)
	_, err = w.WriteAt([]byte("world"), 6)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	// kernel: refused by policy.
	_, err = mounts.OpenFile(kernel, fsys, "memory/locked", os.O_WRONLY|os.O_CREATE, 0o644)
	require.ErrorIs(t, err, mounts.ErrDenied)
	// tool: overwrite (truncate + write), rename, mkdir, symlink, remove.
	require.NoError(t, mounts.WriteFile(tool, fsys, "memory/a", []byte("bye"), 0o644))
	require.NoError(t, mounts.Rename(tool, fsys, "memory/a", "memory/b", 0))
	require.NoError(t, mounts.Mkdir(tool, fsys, "memory/d", 0o750))
	require.NoError(t, mounts.Symlink(tool, fsys, "b", "memory/l"))
	require.NoError(t, mounts.Mknod(kernel, fsys, "memory/p", fs.ModeNamedPipe|0o640, 0))
	require.NoError(t, mounts.Mknod(kernel, fsys, "memory/null", fs.ModeDevice|fs.ModeCharDevice|0o666, mounts.MakeDev(1, 3)))
	require.NoError(t, mounts.Chmod(kernel, fsys, "memory/b", 0o600))
	require.NoError(t, mounts.Truncate(kernel, fsys, "memory/b", 1))
	require.NoError(t, mounts.Unlink(tool, fsys, "memory/l"))
	require.Error(t, mounts.Rmdir(tool, fsys, "memory/nope"))
	// A read logs nothing.
	_, err = mounts.ReadFile(tool, fsys, "memory/b")
	require.NoError(t, err)
	l.ToolCall(ToolCall{CallID: "rpc-1-7", Tool: "write", Verb: "write", Args: json.RawMessage(`{"path":"/memory/a","fileText":{"bytes":3}}`),
		Paths: []string{"/memory/a"}, Outcome: "ok", Duration: 1500 * time.Microsecond})
	require.NoError(t, l.Close())

	k := func(m map[string]any) map[string]any {
		m["face"], m["pid"], m["uid"] = "kernel", float64(4242), float64(1000)
		return m
	}
	tl := func(m map[string]any) map[string]any {
		m["face"], m["call"] = "tool", "rpc-1-7"
		return m
	}
	want := []map[string]any{
		k(map[string]any{"op": "create", "path": "/memory/a", "mode": "0644", "outcome": "ok"}),
		k(map[string]any{"op": "write", "path": "/memory/a", "bytes": float64(11), "outcome": "ok"}),
		k(map[string]any{"op": "create", "path": "/memory/locked", "outcome": "denied", "error": "denied by policy"}),
		tl(map[string]any{"op": "truncate", "path": "/memory/a", "size": float64(0), "outcome": "ok"}),
		tl(map[string]any{"op": "write", "path": "/memory/a", "bytes": float64(3), "outcome": "ok"}),
		tl(map[string]any{"op": "rename", "path": "/memory/a", "to": "/memory/b", "outcome": "ok"}),
		tl(map[string]any{"op": "mkdir", "path": "/memory/d", "mode": "0750", "outcome": "ok"}),
		tl(map[string]any{"op": "symlink", "path": "/memory/l", "target": "b", "outcome": "ok"}),
		k(map[string]any{"op": "mknod", "path": "/memory/p", "mode": "0640", "type": "fifo", "outcome": "ok"}),
		k(map[string]any{"op": "mknod", "path": "/memory/null", "mode": "0666", "type": "char 1:3", "outcome": "ok"}),
		k(map[string]any{"op": "chmod", "path": "/memory/b", "mode": "0600", "outcome": "ok"}),
		k(map[string]any{"op": "truncate", "path": "/memory/b", "size": float64(1), "outcome": "ok"}),
		tl(map[string]any{"op": "unlink", "path": "/memory/l", "outcome": "ok"}),
		tl(map[string]any{"op": "rmdir", "path": "/memory/nope", "outcome": "error", "error": "file does not exist"}),
		tl(map[string]any{"op": "call", "tool": "write", "verb": "write", "args": map[string]any{"path": "/memory/a", "fileText": map[string]any{"bytes": float64(3)}},
			"paths": []any{"/memory/a"}, "outcome": "ok", "ms": 1.5}),
	}
	assert.Equal(t, want, readLog(t, path))
}

// TestAuditNoContents: what is written never reaches the log.
func TestAuditNoContents(t *testing.T) {
	l, path := newLog(t, AuditOptions{})
	const secret = "hunter2-SECRET-6f1c"
	fsys := Audit(memfs.New(memfs.Options{}), l)
	ctx := mounts.WithCaller(context.Background(), mounts.Caller{Face: "kernel", Pid: 1})
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", []byte(secret), 0o644))
	require.NoError(t, mounts.SetXattr(ctx, fsys, "f", "user.k", []byte(secret), 0))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), secret)
	assert.Equal(t, 3, strings.Count(string(data), "\n"), "create, write, setxattr:\n%s", data)
}

func TestAuditRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, _ := newLog(t, AuditOptions{Path: path, MaxBytes: 400})
	fsys := Audit(memfs.New(memfs.Options{}), l)
	ctx := context.Background()
	for i := range 20 {
		require.NoError(t, mounts.Mkdir(ctx, fsys, strings.Repeat("d", 20)+string(rune('a'+i)), 0o755))
	}
	require.NoError(t, l.Close())
	cur, err := os.Stat(path)
	require.NoError(t, err)
	old, err := os.Stat(path + ".1")
	require.NoError(t, err, "the full log was renamed to .1")
	assert.LessOrEqual(t, cur.Size(), int64(400))
	assert.LessOrEqual(t, old.Size(), int64(400))
	// The last line is in the current file, whole.
	lines := readLog(t, path)
	require.NotEmpty(t, lines)
	assert.Equal(t, "/"+strings.Repeat("d", 20)+"t", lines[len(lines)-1]["path"])
	assert.Equal(t, "internal", lines[0]["face"], "no caller in the context")
	readLog(t, path+".1") // whole lines only
}

func TestOpenAuditErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := OpenAudit(AuditOptions{Path: filepath.Join(dir, "missing", "a.jsonl")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing/a.jsonl")
	_, err = OpenAudit(AuditOptions{Path: dir})
	require.Error(t, err, "a directory is not a log")
}

// TestAuditSyncInterval: batched lines reach the disk within the
// interval without a tool-call line or Close forcing them.
func TestAuditSyncInterval(t *testing.T) {
	l, _ := newLog(t, AuditOptions{SyncInterval: 10 * time.Millisecond})
	fsys := Audit(memfs.New(memfs.Options{}), l)
	require.NoError(t, mounts.Mkdir(context.Background(), fsys, "d", 0o755))
	assert.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return !l.dirty
	}, 2*time.Second, 5*time.Millisecond)
}

func TestOctal(t *testing.T) {
	assert.Equal(t, "0644", octal(0o644))
	assert.Equal(t, "04755", octal(0o755|fs.ModeSetuid))
	assert.Equal(t, "01777", octal(0o777|fs.ModeSticky|fs.ModeDir))
	assert.Equal(t, "0", octal(0))
}
