package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/agentbridge/semsearch/semsearchtest"
	"github.com/vfsmount/vfsmount/internal/fsmhook"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/store"
	"github.com/vfsmount/vfsmount/workspace"
)

// The ways out and in
//
// TestPolicyBindsEveryWay lists every way the bytes of a name can leave
// the daemon and every way a name can change, and checks each against
// each path rule: what the rules bind (the agent's tools, in every dialect,
// and the kernel face) is refused the same way everywhere; what they do not
// bind (the operator's commands) is not; and every change, or refused
// attempt, is an audit line. Adding a tool to a dialect, a service to the
// workspace or a method to JSON-RPC without a row here fails
// TestPolicyWaysAreComplete.

// wayKind is what a way does with the name.
type wayKind int

const (
	// reveals: the way gives the name's content.
	reveals wayKind = iota
	// searches: the way searches content and names what matches. A
	// name whose content the rules deny reading is never searched: it
	// is not a match, whatever the pattern (a note for a match only
	// would tell that it matches).
	searches
	// names: the way gives names only, never content (a listing): the
	// rules do not hide names, as a stat does not.
	names
	// changes: the way changes the name.
	changes
)

type way struct {
	name string
	kind wayKind
	// tools are the dialect tools it calls ("claude/Read"), services the
	// workspace services it uses (a field of workspace), methods the
	// JSON-RPC methods it is.
	tools, services, methods []string
	// operator: the person running the workspace, bound by no path rule.
	operator bool
	// needsRead: a change that reads the content first (an edit), so that
	// deny_read refuses it too.
	needsRead bool
	// repoOnly: the way exists for a writable git mount only.
	repoOnly bool
	// checkpointed: the way needs a mount that checkpoints take in (not
	// a remote mount, whose files are on its own machine).
	checkpointed bool
	// notebook: the way takes .ipynb files only; TestPolicyBindsNotebooks
	// runs it, on notebooks.
	notebook bool
	// auditOp is the op of the audit line that records the way's change,
	// where the change makes others about the name too; empty: the
	// first line about the name.
	auditOp string
	do      func(t *testing.T, s *waysEnv, p string) (string, error)
}

// exempt are the dialect tools that neither reveal nor change a name by
// themselves, and why.
var exempt = map[string]string{
	"claude/TaskOutput": "reads a background Bash job's output (served, no longer listed): what the job read is bound as the Bash rows show",
	"claude/TaskStop":   "stops a background job",
	"codex/write_stdin": "writes to a running exec_command session, whose reads and writes are bound as exec_command's",
}

// nonServices are the fields of workspace.Workspace that are not services
// over the tree: its options, the stack's layers and its bookkeeping.
var nonServices = []string{"Union", "FS", "opts", "kernel", "tools", "closed", "onEnd"}

func tool(dialect, name, args string) func(t *testing.T, s *waysEnv, p string) (string, error) {
	return func(t *testing.T, s *waysEnv, p string) (string, error) {
		args := strings.ReplaceAll(args, "PATH", p)
		args = strings.ReplaceAll(args, "OLD", strings.TrimSuffix(s.content, "\n"))
		args = strings.ReplaceAll(args, "NEW", strings.TrimSuffix(s.next, "\n"))
		args = strings.ReplaceAll(args, "DIR", filepath.Dir(p))
		res := s.b.tools.Call(mounts.WithCaller(context.Background(), mounts.Caller{Face: "tool", CallID: "t-" + s.step}), dialect, name, json.RawMessage(args))
		text := res.Text
		for _, c := range res.Content {
			text += c.Text
		}
		if res.IsError {
			return "", errors.New(text)
		}
		return text, nil
	}
}

func shellCmd(dialect, name, argsFmt string) func(t *testing.T, s *waysEnv, p string) (string, error) {
	return func(t *testing.T, s *waysEnv, p string) (string, error) {
		cmd := strings.ReplaceAll(argsFmt, "PATH", p)
		cmd = strings.ReplaceAll(cmd, "NEW", strings.TrimSuffix(s.next, "\n"))
		return tool(dialect, name, cmd)(t, s, p)
	}
}

var ways = []way{
	// Reads of content.
	{name: "cursor read", kind: reveals, tools: []string{"cursor/read"}, do: tool("cursor", "read", `{"path":"PATH"}`)},
	{name: "claude Read", kind: reveals, tools: []string{"claude/Read"}, do: tool("claude", "Read", `{"file_path":"PATH"}`)},
	{name: "codex read_file", kind: reveals, tools: []string{"codex/read_file"}, do: tool("codex", "read_file", `{"file_path":"PATH"}`)},
	{name: "cursor grep content", kind: searches, tools: []string{"cursor/grep"}, do: tool("cursor", "grep", `{"pattern":"API_KEY","path":"DIR","outputMode":"content"}`)},
	{name: "cursor grep files", kind: searches, do: grepFiles("cursor", "grep", `{"pattern":"API_KEY","path":"DIR","outputMode":"files_with_matches"}`)},
	{name: "claude Grep content", kind: searches, tools: []string{"claude/Grep"}, do: tool("claude", "Grep", `{"pattern":"API_KEY","path":"DIR","output_mode":"content"}`)},
	{name: "claude Grep files", kind: searches, do: grepFiles("claude", "Grep", `{"pattern":"API_KEY","path":"DIR"}`)},
	{name: "codex grep_files", kind: searches, tools: []string{"codex/grep_files"}, do: grepFiles("codex", "grep_files", `{"pattern":"API_KEY","path":"DIR"}`)},
	// semSearch answers with the chunks it finds, their text included.
	{name: "semSearch", kind: searches, tools: []string{"*/semSearch"}, do: tool("cursor", "semSearch", `{"query":"API_KEY","targetDirectories":["DIR"]}`)},
	{name: "cursor shell cat", kind: reveals, tools: []string{"cursor/shell"}, do: shellCmd("cursor", "shell", `{"command":"cat PATH"}`)},
	{name: "claude Bash cat", kind: reveals, tools: []string{"claude/Bash"}, do: shellCmd("claude", "Bash", `{"command":"cat PATH"}`)},
	{name: "codex exec_command cat", kind: reveals, tools: []string{"codex/exec_command"}, do: shellCmd("codex", "exec_command", `{"cmd":"cat PATH"}`)},
	{name: "codex shell_command cat", kind: reveals, tools: []string{"codex/shell_command"}, do: shellCmd("codex", "shell_command", `{"command":"cat PATH"}`)},
	// A linter prints what it reads: one that prints the whole file (its
	// output is no diagnostic, so it is shown raw) runs in the shell's
	// namespace, where the rules bind it as they bind cat in the shell.
	{name: "readLints with a linter that prints the file", kind: reveals, tools: []string{"*/readLints"}, do: tool("cursor", "readLints", `{"paths":["PATH"]}`)},
	{name: "codex view_image", kind: reveals, tools: []string{"codex/view_image"}, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		// An image whose bytes hold the secret: what the image part
		// carries is what left the daemon.
		s.operatorWrite(t, p, "\x89PNG\r\n\x1a\n"+s.content)
		res := s.b.tools.Call(mounts.WithCaller(context.Background(), mounts.Caller{Face: "tool", CallID: "t-" + s.step}), "codex", "view_image", json.RawMessage(`{"path":"`+p+`"}`))
		out := res.Text
		for _, c := range res.Content {
			out += c.Text + string(c.Data)
		}
		if res.IsError {
			return "", errors.New(out)
		}
		return out, nil
	}},
	// In the name's own directory: a remote mount's commands would run on
	// its machine, past the rules; with rules they run here.
	{name: "cursor shell cat in its directory", kind: reveals, do: shellCmd("cursor", "shell", `{"command":"cat secret.txt","cwd":"DIR"}`)},
	{name: "codex shell cat", kind: reveals, tools: []string{"codex/shell"}, do: shellCmd("codex", "shell", `{"command":["cat","PATH"]}`)},
	{name: "kernel read", kind: reveals, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		b, err := os.ReadFile(filepath.Join(s.mp, p))
		return string(b), err
	}},
	{name: "page offers", kind: reveals, do: pageOffers},
	{name: "checkpoint_diff tool", kind: reveals, checkpointed: true, tools: []string{"*/checkpoint_diff"}, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		id := s.checkpoint(t)
		s.operatorWrite(t, p, "API_KEY=after\n")
		return tool("cursor", "checkpoint_diff", `{"id":"`+id+`"}`)(t, s, p)
	}},
	{name: "checkpoint_restore dry run", kind: reveals, checkpointed: true, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		// The dry run shows what it would undo: a diff, withheld alike.
		id := s.checkpoint(t)
		s.operatorWrite(t, p, "API_KEY=after\n")
		return s.dryRun.Call(context.Background(), "cursor", "checkpoint_restore", json.RawMessage(`{"id":"`+id+`"}`)).Text, nil
	}},
	{name: "checkpoint.diff (operator)", kind: reveals, checkpointed: true, operator: true, services: []string{"Checkpoints"}, methods: []string{"checkpoint.diff", "checkpoint.create"},
		do: func(t *testing.T, s *waysEnv, p string) (string, error) {
			info, err := s.b.ws.Checkpoints.CheckpointCreate(context.Background(), jsonrpc.CheckpointCreateParams{})
			require.NoError(t, err)
			s.operatorWrite(t, p, "API_KEY=after\n")
			res, err := s.b.ws.Checkpoints.CheckpointDiff(context.Background(), jsonrpc.CheckpointDiffParams{From: info.ID})
			return res.Text, err
		}},
	{name: "store.push and store.status (operator)", kind: reveals, checkpointed: true, operator: true, methods: []string{"store.push", "store.status"},
		do: func(t *testing.T, s *waysEnv, p string) (string, error) {
			// The operator's push carries every file, whatever the
			// rules bind: what left the daemon is what the store now
			// holds of the name.
			ctx := context.Background()
			res, err := s.b.ws.Checkpoints.StorePush(ctx, jsonrpc.StorePushParams{})
			if err != nil {
				return "", err
			}
			status, err := s.b.ws.Checkpoints.StoreStatus(ctx)
			require.NoError(t, err)
			require.Equal(t, res.Seq, status.LastPush.Seq)
			r, err := s.store.Resume(ctx, fmt.Sprintf("ways@%d", res.Seq))
			require.NoError(t, err)
			prefix := "/" + strings.Split(p, "/")[1]
			tree, err := r.Tree(ctx, prefix, memfs.Options{})
			require.NoError(t, err)
			name := strings.TrimPrefix(p, prefix+"/")
			if prefix == "/repo" {
				name = "tree/" + name // the upper layer's files (overlayfs)
			}
			b, err := mounts.ReadFile(ctx, tree, name)
			return string(b), err
		}},
	{name: "workspace.diff (operator)", kind: reveals, operator: true, repoOnly: true, services: []string{"Export"}, methods: []string{"workspace.diff"},
		do: func(t *testing.T, s *waysEnv, p string) (string, error) {
			res, err := s.b.ws.Export.Diff(context.Background(), jsonrpc.DiffParams{})
			return res.Text, err
		}},

	// Names only.
	{name: "cursor ls", kind: names, tools: []string{"cursor/ls"}, do: tool("cursor", "ls", `{"path":"DIR"}`)},
	{name: "claude LS", kind: names, tools: []string{"claude/LS"}, do: tool("claude", "LS", `{"path":"DIR"}`)},
	{name: "codex list_dir", kind: names, tools: []string{"codex/list_dir"}, do: tool("codex", "list_dir", `{"dir_path":"DIR"}`)},
	{name: "cursor glob", kind: names, tools: []string{"cursor/glob"}, do: tool("cursor", "glob", `{"globPattern":"**/secret.txt","targetDirectory":"DIR"}`)},
	{name: "claude Glob", kind: names, tools: []string{"claude/Glob"}, do: tool("claude", "Glob", `{"pattern":"**/secret.txt","path":"DIR"}`)},
	{name: "checkpoint_list and create tools", kind: names, tools: []string{"*/checkpoint_list", "*/checkpoint_create", "*/checkpoint_delete"}, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		out, err := tool("cursor", "checkpoint_create", `{"name":"x"}`)(t, s, p)
		require.NoError(t, err)
		list, err := tool("cursor", "checkpoint_list", `{}`)(t, s, p)
		require.NoError(t, err)
		id := strings.Fields(list)[0]
		del, err := tool("cursor", "checkpoint_delete", `{"id":"`+id+`"}`)(t, s, p)
		return out + list + del + "\n" + p, err // no name in any: the row checks no content leaks
	}},
	{name: "checkpoint.list and delete (operator)", kind: names, operator: true, methods: []string{"checkpoint.list", "checkpoint.delete"}, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		ctx := context.Background()
		info, err := s.b.ws.Checkpoints.CheckpointCreate(ctx, jsonrpc.CheckpointCreateParams{})
		require.NoError(t, err)
		list, err := s.b.ws.Checkpoints.CheckpointList(ctx)
		require.NoError(t, err)
		_, err = s.b.ws.Checkpoints.CheckpointDelete(ctx, jsonrpc.CheckpointDeleteParams{ID: info.ID})
		b, _ := json.Marshal(list)
		return string(b) + "\n" + p, err
	}},
	{name: "fsmonitor answer", kind: names, repoOnly: true, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		w := s.repoOverlay(t)
		token := w.Journal().Token()
		s.operatorWrite(t, p, "API_KEY=after\n")
		ans, err := fsmhook.Query(context.Background(), w.FSMonitorSocket(), "2", token)
		return strings.ReplaceAll(string(ans), "\x00", "\n"), err
	}},

	// Changes.
	{name: "cursor write", kind: changes, tools: []string{"cursor/write"}, do: tool("cursor", "write", `{"path":"PATH","fileText":"NEW\n"}`)},
	{name: "claude Write", kind: changes, tools: []string{"claude/Write"}, do: tool("claude", "Write", `{"file_path":"PATH","content":"NEW\n"}`)},
	{name: "cursor edit", kind: changes, needsRead: true, tools: []string{"cursor/edit"}, do: tool("cursor", "edit", `{"path":"PATH","oldText":"OLD","newText":"NEW"}`)},
	{name: "claude Edit", kind: changes, needsRead: true, tools: []string{"claude/Edit"}, do: tool("claude", "Edit", `{"file_path":"PATH","old_string":"OLD","new_string":"NEW"}`)},
	{name: "claude MultiEdit", kind: changes, needsRead: true, tools: []string{"claude/MultiEdit"}, do: tool("claude", "MultiEdit", `{"file_path":"PATH","edits":[{"old_string":"OLD","new_string":"NEW"}]}`)},
	{name: "claude NotebookEdit", kind: changes, needsRead: true, notebook: true, tools: []string{"claude/NotebookEdit"},
		do: tool("claude", "NotebookEdit", `{"notebook_path":"PATH","cell_id":"cell-0","new_source":"NEW"}`)},
	{name: "codex apply_patch", kind: changes, needsRead: true, tools: []string{"codex/apply_patch"}, do: tool("codex", "apply_patch", `{"input":"*** Begin Patch\n*** Update File: PATH\n@@\n-OLD\n+NEW\n*** End Patch"}`)},
	{name: "cursor delete", kind: changes, tools: []string{"cursor/delete"}, do: tool("cursor", "delete", `{"path":"PATH"}`)},
	{name: "cursor shell write", kind: changes, do: shellCmd("cursor", "shell", `{"command":"echo NEW > PATH"}`)},
	{name: "cursor shell write in its directory", kind: changes, do: shellCmd("cursor", "shell", `{"command":"echo NEW > secret.txt","cwd":"DIR"}`)},
	{name: "claude Bash rm", kind: changes, do: shellCmd("claude", "Bash", `{"command":"rm PATH"}`)},
	{name: "codex exec_command write", kind: changes, do: shellCmd("codex", "exec_command", `{"cmd":"echo NEW > PATH"}`)},
	{name: "kernel write", kind: changes, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		return "", os.WriteFile(filepath.Join(s.mp, p), []byte(s.next), 0o644)
	}},
	// The kernel face pins a file about to lose its last name, in case a
	// program holds it open, by opening it (once the kernel knows the
	// file: the stat); under deny_read that open is refused and logged
	// as the kernel face's own, before the rename's line.
	{name: "kernel rename over", kind: changes, auditOp: "rename", do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		tmp := filepath.Join(s.mp, filepath.Dir(p), "tmp-"+s.step)
		if err := os.WriteFile(tmp, []byte(s.next), 0o644); err != nil {
			return "", err
		}
		_, _ = os.Stat(filepath.Join(s.mp, p))
		err := os.Rename(tmp, filepath.Join(s.mp, p))
		os.Remove(tmp)
		return "", err
	}},
	{name: "store.resume (operator)", kind: changes, checkpointed: true, operator: true, methods: []string{"store.resume"},
		do: func(t *testing.T, s *waysEnv, p string) (string, error) {
			// A checkpoint holding the new content, pushed; the name
			// back as it was; then the checkpoint brought back in.
			ctx := context.Background()
			s.operatorWrite(t, p, s.next)
			pushed, err := s.b.ws.Checkpoints.StorePush(ctx, jsonrpc.StorePushParams{})
			require.NoError(t, err)
			s.operatorWrite(t, p, s.content)
			res, err := s.b.ws.Checkpoints.StoreResume(ctx, jsonrpc.StoreResumeParams{Ref: pushed.URL})
			if err == nil && !slices.Contains(res.Changed, p) {
				err = fmt.Errorf("%s not among the names changed: %v", p, res.Changed)
			}
			return "", err
		}},
	{name: "checkpoint_restore tool", kind: changes, checkpointed: true, tools: []string{"*/checkpoint_restore"}, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		// The checkpoint holds the content the row would put back.
		s.operatorWrite(t, p, s.next)
		id := s.checkpoint(t)
		s.operatorWrite(t, p, s.content)
		return tool("cursor", "checkpoint_restore", `{"id":"`+id+`"}`)(t, s, p)
	}},
	{name: "checkpoint.restore (operator)", kind: changes, checkpointed: true, operator: true, methods: []string{"checkpoint.restore"}, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		s.operatorWrite(t, p, s.next)
		id := s.checkpoint(t)
		s.operatorWrite(t, p, s.content)
		_, err := s.b.ws.Checkpoints.CheckpointRestore(context.Background(), jsonrpc.CheckpointRestoreParams{ID: id})
		return "", err
	}},
	{name: "workspace.reset (operator)", kind: changes, operator: true, repoOnly: true, methods: []string{"workspace.reset"}, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		s.next = "API_KEY=committed\n" // what the commit holds
		_, err := s.b.ws.Export.Reset(context.Background(), jsonrpc.ResetParams{Paths: []string{p}})
		return "", err
	}},
	{name: "workspace.commit (operator)", kind: names, operator: true, repoOnly: true, methods: []string{"workspace.commit"}, do: func(t *testing.T, s *waysEnv, p string) (string, error) {
		// A commit changes no name of the workspace: a branch of the
		// source, audited as a line of its own.
		n := s.auditLen(t)
		_, err := s.b.ws.Export.Commit(context.Background(), jsonrpc.CommitParams{Message: "m", Branch: "ways-" + s.step})
		require.NoError(t, err)
		line := s.auditAfter(t, n, func(r policy.Record) bool { return r.Op == "commit" })
		assert.Equal(t, "operator", line.Face)
		return p, nil
	}},
}

// grepFiles is a grep that prints file names: under deny_read the name
// must not be printed as a match, which would tell the model that the
// content matches.
func grepFiles(dialect, name, args string) func(t *testing.T, s *waysEnv, p string) (string, error) {
	return func(t *testing.T, s *waysEnv, p string) (string, error) {
		out, err := tool(dialect, name, args)(t, s, p)
		if err != nil {
			return out, err
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasSuffix(strings.TrimSpace(line), "/secret.txt") || strings.TrimSpace(line) == "secret.txt" {
				// Listed as a match: as good as its content.
				return out + "\n" + s.content, nil
			}
		}
		return out, nil
	}
}

// pageOffers checks the read-ahead pages a mount offers the kernel face
// (mounts.PageOfferer: git mounts) through the workspace's own rules: an
// offer of the name's content is dropped when reading it is denied.
func pageOffers(t *testing.T, s *waysEnv, p string) (string, error) {
	rules := s.b.ws.Options().Rules
	src := &offerer{FS: memfs.New(memfs.Options{})}
	var got []string
	require.True(t, mounts.OfferPages(policy.Guard(src, rules), func(name string, data []byte) { got = append(got, string(data)) }))
	src.sink(mounts.NameOf(p), []byte(s.content))
	if len(got) == 0 {
		return "", mounts.PathErr("offer", p, mounts.ErrDenied)
	}
	return strings.Join(got, ""), nil
}

type offerer struct {
	mounts.FS
	sink mounts.PageSink
}

func (o *offerer) OfferPages(sink mounts.PageSink) bool { o.sink = sink; return true }

// waysEnv is one workspace under one rule, served by both faces.
type waysEnv struct {
	b      *bridge
	dryRun *agentbridge.Workspace
	mp     string
	audit  string
	// content is the name's content before a row, next what a change
	// writes; step names the row's run.
	content, next, step string
	// store is the workspace's store (store.* rows).
	store *store.Store
}

func (s *waysEnv) operatorWrite(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, mounts.WriteFile(context.Background(), s.b.ws.Union, mounts.NameOf(p), []byte(content), 0o644))
	if strings.HasPrefix(p, "/repo/") {
		s.repoOverlay(t).Changed(strings.TrimPrefix(p, "/repo/"))
	}
	s.b.ws.Changed(mounts.NameOf(p))
}

// repoOverlay is the writable git mount on /repo, whose journal git's
// fsmonitor answers from.
func (s *waysEnv) repoOverlay(t *testing.T) *workspace.WritableGit {
	t.Helper()
	m, _ := s.b.ws.Mount("/repo")
	w, ok := m.(*workspace.WritableGit)
	require.True(t, ok)
	return w
}

func (s *waysEnv) operatorRead(t *testing.T, p string) string {
	t.Helper()
	b, err := mounts.ReadFile(context.Background(), s.b.ws.Union, mounts.NameOf(p))
	if errors.Is(err, fs.ErrNotExist) {
		return "<none>"
	}
	require.NoError(t, err)
	return string(b)
}

func (s *waysEnv) checkpoint(t *testing.T) string {
	t.Helper()
	info, err := s.b.ws.Checkpoints.Create(context.Background(), "")
	require.NoError(t, err)
	return info.ID
}

// attachStore attaches the workspace to a store (a real S3 server) for
// the store.* rows.
func (s *waysEnv) attachStore(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	srv := testutil.StartS3(t, "ways")
	st, err := store.Open(ctx, store.Config{URL: "s3://ways/p", Endpoint: srv.Endpoint, MaxAttempts: 2})
	require.NoError(t, err)
	ss, err := st.Acquire(ctx, "ways", store.AcquireOptions{Holder: "ways-test"})
	require.NoError(t, err)
	t.Cleanup(func() { ss.Release(ctx) }) // before the server stops
	require.NoError(t, s.b.ws.AttachStore(workspace.StoreOptions{Session: ss, URL: "s3://ways/p/ways"}))
	s.store = st
}

func (s *waysEnv) auditLen(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(s.audit)
	require.NoError(t, err)
	return bytes.Count(b, []byte("\n"))
}

// auditAfter waits for a line after the first n that match says is the
// one, and returns it. A kernel write's line follows the release, which
// trails close(2).
func (s *waysEnv) auditAfter(t *testing.T, n int, match func(policy.Record) bool) policy.Record {
	t.Helper()
	var found *policy.Record
	require.Eventuallyf(t, func() bool {
		f, err := os.Open(s.audit)
		require.NoError(t, err)
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for i := 0; sc.Scan(); i++ {
			if i < n {
				continue
			}
			var r policy.Record
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
			if match(r) {
				found = &r
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "no audit line for %s", s.step)
	return *found
}

// auditSince returns the audit lines from the n-th on.
func (s *waysEnv) auditSince(t *testing.T, n int) []policy.Record {
	t.Helper()
	b, err := os.ReadFile(s.audit)
	require.NoError(t, err)
	var out []policy.Record
	for i, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if i < n || len(l) == 0 {
			continue
		}
		var r policy.Record
		require.NoError(t, json.Unmarshal(l, &r))
		out = append(out, r)
	}
	return out
}

func openWaysEnv(t *testing.T, rule string, secrets []string) *waysEnv {
	t.Helper()
	repo, _ := testutil.GitRepo(t, map[string]string{"secret.txt": "API_KEY=committed\n", "README": "hi\n"})
	dir := t.TempDir()
	remote := t.TempDir() // the remote machine's directory, served by a peer over a pipe
	var quoted []string
	for _, p := range secrets {
		quoted = append(quoted, `"`+p+`"`)
	}
	cfg := filepath.Join(dir, "ws.yaml")
	audit := filepath.Join(dir, "audit.jsonl")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
mounts:
  - {type: git, src: %s, dst: /repo, writable: true}
  - {type: memory, dst: /memory, persist: %s}
  - {type: remote, dst: /workspace, command: [%s, peer, %s]}
policy:
  %s: [%s]
audit: {path: %s}
checkpoint: {tools: true, keep: 0}
lints:
  - {glob: "**/secret.txt", command: [cat, "{files}"]}
semsearch: {endpoint: %s, model: bag-of-words, cache: %s}
`, repo, filepath.Join(dir, "mem.db"), binary(t), remote, rule, strings.Join(quoted, ", "), audit, semsearchtest.Start(t).URL, filepath.Join(dir, "vectors"))), 0o644))
	mp := t.TempDir()
	f := &bridgeFlags{dialect: agentbridge.DialectCursor}
	f.ws.Config = cfg
	b, err := openBridge(context.Background(), newApp(io.Discard, io.Discard), f, privateKernel, mp)
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	// The same tree's tool face in a dry run, for the dry-run rows.
	dry, err := agentbridge.New(policy.Freeze(b.ws.ToolFS()), agentbridge.Options{DryRun: true, Checkpoints: b.ws.Checkpoints.Tools()})
	require.NoError(t, err)
	t.Cleanup(func() { dry.Close() })
	s := &waysEnv{b: b, dryRun: dry, mp: mp, audit: audit}
	s.attachStore(t)
	return s
}

func TestPolicyBindsEveryWay(t *testing.T) {
	fusetest.Need(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		if fusetest.Required() {
			t.Fatalf("bubblewrap required for the shell rows: %v", err)
		}
		t.Skip("bubblewrap not installed")
	}
	secrets := []string{"/memory/secret.txt", "/repo/secret.txt", "/workspace/secret.txt"}
	for _, rule := range []string{"deny_read", "deny_write", "read_only"} {
		t.Run(rule, func(t *testing.T) {
			s := openWaysEnv(t, rule, secrets)
			n := 0
			for _, w := range ways {
				for _, p := range secrets {
					if w.notebook {
						continue // TestPolicyBindsNotebooks
					}
					if w.repoOnly && !strings.HasPrefix(p, "/repo/") {
						continue
					}
					if w.checkpointed && strings.HasPrefix(p, "/workspace/") {
						continue
					}
					n++
					s.step = fmt.Sprintf("%d", n)
					s.content = fmt.Sprintf("API_KEY=%s-%d\n", rule, n)
					s.next = fmt.Sprintf("CHANGED=%s-%d\n", rule, n)
					s.operatorWrite(t, p, s.content)
					t.Run(w.name+" "+p, func(t *testing.T) { checkWay(t, s, w, rule, p) })
				}
			}
		})
	}
}

// TestPolicyBindsNotebooks is TestPolicyBindsEveryWay for the ways that
// take notebooks only (Claude Code's NotebookEdit), on notebooks whose
// content is the secret.
func TestPolicyBindsNotebooks(t *testing.T) {
	fusetest.Need(t)
	secrets := []string{"/memory/secret.ipynb", "/repo/secret.ipynb"}
	notebook := func(src string) string {
		b, err := json.Marshal(src)
		require.NoError(t, err)
		return `{"cells":[{"cell_type":"code","execution_count":null,"id":"c","metadata":{},"outputs":[],"source":` + string(b) + `}],"metadata":{},"nbformat":4,"nbformat_minor":5}`
	}
	for _, rule := range []string{"deny_read", "deny_write", "read_only"} {
		t.Run(rule, func(t *testing.T) {
			s := openWaysEnv(t, rule, secrets)
			n := 0
			for _, w := range ways {
				if !w.notebook {
					continue
				}
				for _, p := range secrets {
					n++
					s.step = fmt.Sprintf("%d", n)
					s.content = notebook(fmt.Sprintf("API_KEY=%s-%d", rule, n))
					s.next = fmt.Sprintf("CHANGED=%s-%d", rule, n)
					s.operatorWrite(t, p, s.content)
					t.Run(w.name+" "+p, func(t *testing.T) { checkWay(t, s, w, rule, p) })
				}
			}
			require.Positive(t, n)
		})
	}
}

// checkWay runs w on p under rule and checks what came out, what changed
// and what the audit log says.
func checkWay(t *testing.T, s *waysEnv, w way, rule, p string) {
	bound := !w.operator
	before := s.auditLen(t)
	out, err := w.do(t, s, p)
	said := out
	if err != nil {
		said += "\n" + err.Error()
	}
	switch w.kind {
	case reveals:
		if bound && rule == "deny_read" {
			assert.NotContains(t, said, "API_KEY=", "the content left the daemon")
			assert.Regexp(t, `denied by policy|[Pp]ermission denied|withheld`, said, "refused as everywhere else")
		} else {
			assert.Contains(t, said, "API_KEY=", "the row reads the content when nothing denies it (or it would prove nothing)")
		}
	case searches:
		if bound && rule == "deny_read" {
			assert.NotContains(t, said, "API_KEY=", "the content, or that it matches, left the daemon")
		} else {
			assert.Contains(t, said, "API_KEY=", "the row finds the content when nothing denies it (or it would prove nothing)")
		}
	case names:
		assert.NotContains(t, said, s.content, "a listing gives names only")
		assert.Contains(t, said, p[strings.LastIndex(p, "/")+1:], "the name is shown, as stat shows it")
	case changes:
		after := s.operatorRead(t, p)
		refuse := bound && (rule == "deny_write" || rule == "read_only" || (rule == "deny_read" && w.needsRead))
		if refuse {
			assert.Equal(t, s.content, after, "the name changed")
			want := map[string]string{"deny_write": `denied by policy|[Pp]ermission denied`, "read_only": `[Rr]ead-only`, "deny_read": `denied by policy|[Pp]ermission denied`}[rule]
			assert.Regexp(t, want, said, "refused as everywhere else")
		} else {
			require.NotEqual(t, s.content, after, "the way changes nothing when nothing denies it: %s", said)
			if after != "<none>" {
				assert.Equal(t, s.next, after)
			}
		}
		if refuse && rule == "deny_read" {
			// Refused before any change: the call's line says so.
			s.auditAfter(t, before, func(r policy.Record) bool { return r.Op == "call" && r.Outcome != "ok" })
			return
		}
		line := s.auditAfter(t, before, func(r policy.Record) bool {
			// The way's own line, not one of the workspace's own work
			// on the name (the kernel face's pin of a file it is
			// about to unlink, refused under deny_read, is "internal").
			return r.Op != "call" && (r.Path == p || r.To == p) && (w.auditOp == "" || r.Op == w.auditOp) &&
				r.Face != string(mounts.FaceInternal)
		})
		if refuse {
			assert.NotEqual(t, "ok", line.Outcome, "a refused change is logged as refused")
		} else {
			assert.Equal(t, "ok", line.Outcome)
		}
		if w.operator {
			assert.Equal(t, "operator", line.Face)
		}
		if w.auditOp != "" {
			// The other lines about the name are not the program's.
			for _, r := range s.auditSince(t, before) {
				if r.Op != "call" && r.Op != w.auditOp && (r.Path == p || r.To == p) {
					assert.NotEqual(t, "kernel", r.Face, "a line the program did not ask for is put on it: %+v", r)
				}
			}
		}
	}
}

// TestPolicyWaysAreComplete: every tool of every dialect, every service of
// the workspace and every JSON-RPC method has a row in ways (or a reason
// in exempt).
func TestPolicyWaysAreComplete(t *testing.T) {
	covered := map[string]bool{}
	for _, w := range ways {
		for _, k := range w.tools {
			covered[k] = true
		}
		for _, k := range w.services {
			covered["service "+k] = true
		}
		for _, k := range w.methods {
			covered["method "+k] = true
		}
	}
	for _, d := range agentbridge.Dialects {
		names, err := agentbridge.DialectTools(d)
		require.NoError(t, err)
		names = append(names, agentbridge.CheckpointVerbs...)
		names = append(names, agentbridge.LintVerbs...)
		names = append(names, agentbridge.VerbSemSearch)
		for _, n := range names {
			k := d + "/" + n
			if slices.Contains(agentbridge.CheckpointVerbs, n) || slices.Contains(agentbridge.OptionalVerbs, n) {
				k = "*/" + n
			}
			assert.True(t, covered[k] || exempt[d+"/"+n] != "", "no row for the tool %s of %s", n, d)
		}
	}
	rt := reflect.TypeOf(workspace.Workspace{})
	for i := range rt.NumField() {
		f := rt.Field(i).Name
		if !slices.Contains(nonServices, f) {
			assert.True(t, covered["service "+f], "no row for the workspace service %s", f)
		}
	}
	for _, m := range jsonrpc.Methods {
		if strings.HasPrefix(m, "tools.") || m == "workspace.brief" {
			continue // the tool face's own: its tools are the rows
		}
		assert.True(t, covered["method "+m], "no row for the JSON-RPC method %s", m)
	}
}
