// Command library shows vfsmount as a Go library: it opens a workspace
// in-process with package workspace — a git repository made writable by a
// copy-on-write layer, and a memory mount, under one policy — drives it
// through the tool face an agent harness calls, takes and restores a
// checkpoint and exports the change as a git diff, all without FUSE, any
// kernel mount or the vfsmount command. Run it with:
//
//	go run ./examples/library
//
// # What it builds
//
//	/repo   a commit of a repository it makes (git is needed), writable
//	        over a memory layer, with git's own .git inside
//	/notes  a memory mount, read-only by policy; *.env is unreadable anywhere
//
// ws.MountKernel would serve the same tree through the kernel as well; here
// the tool face and the services are enough.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/workspace"
)

func main() {
	dir, err := os.MkdirTemp("", "vfsmount-library-")
	if err == nil {
		defer os.RemoveAll(dir)
		err = run(context.Background(), dir, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "library example:", err)
		os.Exit(1)
	}
}

// makeRepo makes a repository of one commit in dir, with fixed names and
// dates so that its commit id is the same on every run.
func makeRepo(dir string) error {
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
			"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", args[0], err, out)
		}
		return nil
	}
	files := map[string]string{
		"README.md": "# hello\n",
		"main.go":   "package main\n\nfunc main() { println(\"hello\") }\n",
	}
	if err := git("init", "-q", "-b", "main"); err != nil {
		return err
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	return git("commit", "-q", "-m", "hello")
}

// open opens the workspace over a repository made in dir.
func open(ctx context.Context, dir string) (*workspace.Workspace, error) {
	if err := makeRepo(dir); err != nil {
		return nil, err
	}
	commit, err := gitfs.Open(ctx, gitfs.Options{Src: dir, Rev: "main", CacheDir: filepath.Join(dir, ".cache")})
	if err != nil {
		return nil, err
	}
	repo, err := workspace.NewWritableGit(ctx, commit, memfs.New(memfs.Options{}), workspace.WritableGitOptions{})
	if err != nil {
		commit.Close()
		return nil, err
	}
	notes := memfs.New(memfs.Options{})
	if err := mounts.WriteFile(ctx, notes, "todo.md", []byte("- say hello to the world\n"), 0o644); err != nil {
		return nil, err
	}
	rules, err := policy.Compile(policy.Rules{ReadOnly: []string{"/notes"}, DenyRead: []string{"*.env"}})
	if err != nil {
		return nil, err
	}
	ws, err := workspace.Open(ctx, workspace.Options{
		Mounts: []workspace.Mount{
			{Prefix: "/repo", FS: repo},
			{Prefix: "/notes", FS: notes},
		},
		Rules:      rules,
		Checkpoint: workspace.CheckpointOptions{Tools: true},
	})
	if err != nil {
		repo.Close()
		commit.Close()
		return nil, err
	}
	ws.OnClose(commit.Close)
	ws.OnClose(repo.Close)
	return ws, nil
}

// run makes the calls an agent would, in the canonical ("cursor") dialect,
// between a checkpoint and its restore, and prints each call, its result,
// and the export of the change as git prints it.
func run(ctx context.Context, dir string, out io.Writer) error {
	// Printed at the end without trailing blanks, as go test compares an
	// example's output.
	var w strings.Builder
	defer func() {
		for _, line := range strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n") {
			fmt.Fprintln(out, strings.TrimRight(line, " \t"))
		}
	}()
	ws, err := open(ctx, dir)
	if err != nil {
		return err
	}
	defer ws.Close()
	tools, err := ws.ToolFace(agentbridge.Options{})
	if err != nil {
		return err
	}
	defer tools.Close()

	before, err := ws.Checkpoints.Create(ctx, "before the agent")
	if err != nil {
		return err
	}
	fmt.Fprintf(&w, "# checkpoint %s taken\n", before.ID)
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"ls", map[string]any{"path": "/", "ignore": []string{".git"}}},
		{"read", map[string]any{"path": "/notes/todo.md"}},
		{"edit", map[string]any{"path": "/repo/main.go", "oldText": `"hello"`, "newText": `"hello, world"`}},
		{"write", map[string]any{"path": "/repo/.env", "fileText": "TOKEN=x\n"}},
		{"read", map[string]any{"path": "/repo/.env"}},
		{"write", map[string]any{"path": "/notes/todo.md", "fileText": "done"}},
	}
	for _, c := range calls {
		raw, err := json.Marshal(c.args)
		if err != nil {
			return err
		}
		res := tools.Call(ctx, agentbridge.DialectCursor, c.tool, raw)
		// A tool error is a result too, for the model to read.
		status := ""
		if res.IsError {
			status = "  [tool error]"
		}
		fmt.Fprintf(&w, "> %s %s%s\n%s\n", c.tool, raw, status, strings.TrimRight(res.Text, "\n"))
	}

	// The export: what changed, as git diff --stat prints it.
	diff, err := ws.Export.Diff(ctx, jsonrpc.DiffParams{Format: "stat"})
	if err != nil {
		return err
	}
	fmt.Fprintf(&w, "# export\n%s", diff.Text)
	// The checkpoint tool's diff: the agent's, so .env is withheld.
	res := tools.Call(ctx, agentbridge.DialectCursor, "checkpoint_diff", json.RawMessage(`{"id":"`+before.ID+`"}`))
	fmt.Fprintf(&w, "# checkpoint_diff, as the agent sees it\n%s", res.Text)

	r, err := ws.Checkpoints.Restore(ctx, before.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(&w, "# restored %s: %s changed back\n", strings.Join(r.Restored, ", "), strings.Join(r.Changed, ", "))
	diff, err = ws.Export.Diff(ctx, jsonrpc.DiffParams{})
	if err != nil {
		return err
	}
	fmt.Fprintf(&w, "# export after the restore: %d bytes\n", len(diff.Text))
	return nil
}
