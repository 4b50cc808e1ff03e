package agentbridge

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// fixture builds a workspace of two memory mounts, /repo read-only and
// /memory writable, seeded with files (workspace path -> content).
func fixture(t testing.TB, files map[string]string, opts Options) *Workspace {
	t.Helper()
	return fixtureWithMounts(t, files, []mounts.MountInfo{
		{Prefix: "/repo", Description: mounts.Description{Type: "git", Source: "git@1a2b3c4"}, Writable: false},
		{Prefix: "/memory", Description: mounts.Description{Type: "memory", Source: "memory"}, Writable: true},
	}, opts)
}

// fixtureWithMounts is fixture with the mount table the tree answers.
func fixtureWithMounts(t testing.TB, files map[string]string, table []mounts.MountInfo, opts Options) *Workspace {
	t.Helper()
	ctx := context.Background()
	// A clock that ticks one second per reading orders mtimes by
	// creation, so glob's newest-first order is deterministic.
	var tick int64
	clock := func() time.Time { return time.Unix(1_700_000_000+atomic.AddInt64(&tick, 1), 0) }
	repo, mem := memfs.New(memfs.Options{Now: clock}), memfs.New(memfs.Options{Now: clock})
	u := &testUnion{m: map[string]mounts.FS{"repo": repo, "memory": mem}, table: table}
	for p, content := range files {
		name := mounts.NameOf(p)
		dir, _ := mounts.Split(name)
		if dir != "." {
			require.NoError(t, mounts.MkdirAll(ctx, u, dir, 0o755))
		}
		require.NoError(t, mounts.WriteFile(ctx, u, name, []byte(content), 0o644))
	}
	u.m["repo"] = readOnly{repo}
	w, err := New(u, opts)
	require.NoError(t, err)
	return w
}

// call runs a tool and decodes nothing: args is any JSON-marshalable value.
func call(t testing.TB, w *Workspace, dialect, tool string, args any) Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return w.Call(context.Background(), dialect, tool, raw)
}

// ok runs a canonical tool that must succeed and returns its text.
func ok(t testing.TB, w *Workspace, tool string, args any) string {
	t.Helper()
	r := call(t, w, "", tool, args)
	require.False(t, r.IsError, "%s %v: %s", tool, args, r.Text)
	return r.Text
}

// fail runs a canonical tool that must fail and returns its message.
func fail(t testing.TB, w *Workspace, tool string, args any) string {
	t.Helper()
	r := call(t, w, "", tool, args)
	require.True(t, r.IsError, "%s %v succeeded: %s", tool, args, r.Text)
	return r.Text
}

type obj = map[string]any

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
