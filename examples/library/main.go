// Command library shows vfsmount as a Go library: it composes a workspace
// in-process (two memory mounts under one union, with a path rule) and
// drives it through the tool face an agent harness calls, without FUSE or
// any kernel mount. Run it with:
//
//	go run ./examples/library
//
// # What it builds
//
//	/notes    a memory mount preloaded with a file, made read-only by policy
//	/scratch  a memory mount the agent may write, where *.env stays unreadable
//
// The same tree could be given to fusefs.Mount to serve it through the
// kernel as well; here the tool face alone is enough.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/union"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "library example:", err)
		os.Exit(1)
	}
}

// newWorkspace composes the workspace and its tool face.
func newWorkspace(ctx context.Context) (*agentbridge.Workspace, error) {
	notes := memfs.New(memfs.Options{})
	if err := mounts.WriteFile(ctx, notes, "todo.md", []byte("# TODO\n- ship the sidecar\n- write the docs\n"), 0o644); err != nil {
		return nil, err
	}
	u, err := union.New(map[string]mounts.FS{
		"/notes":   notes,
		"/scratch": memfs.New(memfs.Options{}),
	})
	if err != nil {
		return nil, err
	}
	// Policy decorates the tree, so every face of it obeys the same rules.
	rules, err := policy.Compile(policy.Rules{ReadOnly: []string{"/notes"}, DenyRead: []string{"*.env"}})
	if err != nil {
		return nil, err
	}
	tree := policy.Guard(u, rules)

	// The brief and the read-only error messages come from the mount
	// table the tree answers: the union's, where the rules show /notes as
	// read-only.
	return agentbridge.New(tree, agentbridge.Options{})
}

// run makes the calls an agent would, in the canonical ("cursor") dialect,
// and prints each call and its result.
func run(ctx context.Context, w io.Writer) error {
	ws, err := newWorkspace(ctx)
	if err != nil {
		return err
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"ls", map[string]any{"path": "/"}},
		{"read", map[string]any{"path": "/notes/todo.md"}},
		{"write", map[string]any{"path": "/scratch/plan.md", "fileText": "1. mount\n2. serve\n"}},
		{"edit", map[string]any{"path": "/scratch/plan.md", "oldText": "2. serve", "newText": "2. serve over MCP"}},
		{"grep", map[string]any{"pattern": "MCP|sidecar", "path": "/", "outputMode": "content"}},
		{"write", map[string]any{"path": "/notes/todo.md", "fileText": "overwritten"}},
		{"write", map[string]any{"path": "/scratch/.env", "fileText": "TOKEN=x"}},
		{"read", map[string]any{"path": "/scratch/.env"}},
	}
	for _, c := range calls {
		raw, err := json.Marshal(c.args)
		if err != nil {
			return err
		}
		res := ws.Call(ctx, agentbridge.DialectCursor, c.tool, raw)
		// A tool error is a result too, for the model to read.
		status := ""
		if res.IsError {
			status = "  [tool error]"
		}
		fmt.Fprintf(w, "> %s %s%s\n%s\n", c.tool, raw, status, strings.TrimRight(res.Text, "\n"))
	}
	return nil
}
