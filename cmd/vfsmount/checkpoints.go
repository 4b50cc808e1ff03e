package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/writablegit"
)

// checkpoints serves the checkpoints of a workspace (jsonrpc.Checkpointer:
// vfsmount checkpoint, JSON-RPC, the checkpoint tools): every memory mount
// and every writable git mount's memory upper, frozen at once by package
// checkpoint. Like the exporter, it works on the mounts themselves, below
// the policy layers: a checkpoint is the user's own undo, not a write of
// either face. A restore tells the kernel face which names changed, so the
// shell sees the restored content at once.
type checkpoints struct {
	ws *checkpoint.Workspace
	// gits are the writable git mounts by prefix, whose diffs are git's
	// own (their trees written as the export does).
	gits map[string]*writableGit
}

var _ jsonrpc.Checkpointer = (*checkpoints)(nil)

// newCheckpoints builds the checkpoints of the union table; nil when no
// mount has a layer to freeze. keep bounds their number (0: no bound).
// backing says what backs each mount beyond its description, by prefix
// (a host mount's directory, a persist file).
func newCheckpoints(table map[string]mounts.FS, backing map[string]string, keep int, notify func(names ...string)) (*checkpoints, error) {
	c := &checkpoints{gits: map[string]*writableGit{}}
	var ms []checkpoint.Mount
	for prefix, fsys := range table {
		d := mounts.Describe(fsys)
		m := checkpoint.Mount{Prefix: prefix, Type: d.Type, Source: d.Source}
		if b := backing[prefix]; b != "" {
			m.Source += " (" + b + ")"
		}
		if g, ok := fsys.(interface{ Commit() string }); ok {
			m.Commit = g.Commit()
		}
		switch f := fsys.(type) {
		case *memfs.FS:
			m.Tree = f
		case *writableGit:
			m.Commit = f.Git().Commit()
			if up, ok := f.FS.Upper().(*memfs.FS); ok {
				m.Tree, m.Overlay = up, f.FS.FS
				c.gits[prefix] = f
			}
		default:
			m.Immutable = !mounts.Writable(fsys)
		}
		ms = append(ms, m)
	}
	ws, err := checkpoint.New(ms, checkpoint.Options{Keep: keep})
	if errors.Is(err, checkpoint.ErrNoWritable) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ws.OnRestore(func(paths []string) {
		names := make([]string, len(paths))
		for i, p := range paths {
			names[i] = mounts.NameOf(p)
		}
		notify(names...)
	})
	c.ws = ws
	return c, nil
}

// rpcErr marks the errors of bad input for the JSON-RPC answer.
func rpcErr(err error) error {
	if errors.Is(err, checkpoint.ErrUnknown) || errors.Is(err, checkpoint.ErrBadPath) {
		return fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
	}
	return err
}

func infoOf(c checkpoint.Info) jsonrpc.CheckpointInfo {
	out := jsonrpc.CheckpointInfo{ID: c.ID, Name: c.Name, Time: c.Time, Bytes: c.Bytes, Inodes: c.Inodes}
	for _, e := range c.Manifest {
		out.Manifest = append(out.Manifest, jsonrpc.CheckpointMount{Prefix: e.Prefix, Type: e.Type, Source: e.Source, Commit: e.Commit, Coverage: string(e.Coverage)})
	}
	return out
}

func (c *checkpoints) CheckpointCreate(ctx context.Context, p jsonrpc.CheckpointCreateParams) (jsonrpc.CheckpointInfo, error) {
	info, err := c.ws.Create(ctx, p.Name)
	if err != nil {
		return jsonrpc.CheckpointInfo{}, err
	}
	return infoOf(info), nil
}

func (c *checkpoints) CheckpointList(ctx context.Context) (jsonrpc.CheckpointListResult, error) {
	res := jsonrpc.CheckpointListResult{Checkpoints: []jsonrpc.CheckpointInfo{}}
	for _, i := range c.ws.List() {
		res.Checkpoints = append(res.Checkpoints, infoOf(i))
	}
	return res, nil
}

func (c *checkpoints) CheckpointRestore(ctx context.Context, p jsonrpc.CheckpointRestoreParams) (jsonrpc.CheckpointRestoreResult, error) {
	if p.ID == "" {
		return jsonrpc.CheckpointRestoreResult{}, fmt.Errorf("%w: a checkpoint id is required", jsonrpc.ErrInvalidParams)
	}
	r, err := c.ws.Restore(ctx, p.ID, p.Paths)
	if err != nil {
		return jsonrpc.CheckpointRestoreResult{}, rpcErr(err)
	}
	return jsonrpc.CheckpointRestoreResult{Restored: r.Restored, NotCovered: r.NotCovered, Changed: r.Changed}, nil
}

func (c *checkpoints) CheckpointDelete(ctx context.Context, p jsonrpc.CheckpointDeleteParams) (jsonrpc.CheckpointDeleteResult, error) {
	if p.ID == "" {
		return jsonrpc.CheckpointDeleteResult{}, fmt.Errorf("%w: a checkpoint id is required", jsonrpc.ErrInvalidParams)
	}
	if err := c.ws.Delete(ctx, p.ID); err != nil {
		return jsonrpc.CheckpointDeleteResult{}, rpcErr(err)
	}
	return jsonrpc.CheckpointDeleteResult{Deleted: p.ID}, nil
}

// CheckpointDiff is the git diff from one checkpoint to another, or to
// now. A writable git mount's is the export's: both states written as git
// trees over the pinned commit and diffed by git (names are the
// repository's). A memory mount's is git's too, over trees written into a
// scratch repository (names under the mount's prefix: memory/notes.md).
func (c *checkpoints) CheckpointDiff(ctx context.Context, p jsonrpc.CheckpointDiffParams) (jsonrpc.DiffResult, error) {
	var format gitfs.DiffFormat
	switch p.Format {
	case "", "patch":
		format = gitfs.Patch
	case "stat":
		format = gitfs.Stat
	case "name-status":
		format = gitfs.NameStatus
	default:
		return jsonrpc.DiffResult{}, fmt.Errorf("%w: format %q: want patch, stat or name-status", jsonrpc.ErrInvalidParams, p.Format)
	}
	if p.From == "" {
		return jsonrpc.DiffResult{}, fmt.Errorf("%w: a checkpoint to diff from is required", jsonrpc.ErrInvalidParams)
	}
	for _, id := range []string{p.From, p.To} {
		if id == "" {
			continue
		}
		if _, err := c.ws.Get(id); err != nil {
			return jsonrpc.DiffResult{}, rpcErr(err)
		}
	}
	var b strings.Builder
	for _, m := range c.ws.Mounts() {
		if m.Tree == nil || !m.Has(p.From) || (p.To != "" && !m.Has(p.To)) {
			continue // nothing to diff, or a tree that lost it in a restart
		}
		names, ok, err := namesIn(m.Prefix, p.Paths)
		if err != nil {
			return jsonrpc.DiffResult{}, err
		}
		if !ok {
			continue
		}
		from, err := c.ws.View(ctx, p.From, m.Prefix)
		if err != nil {
			return jsonrpc.DiffResult{}, err
		}
		var to mounts.FS = m.Tree
		if m.Overlay != nil {
			to = m.Overlay
		}
		if p.To != "" {
			if to, err = c.ws.View(ctx, p.To, m.Prefix); err != nil {
				return jsonrpc.DiffResult{}, err
			}
		}
		var text string
		if g := c.gits[m.Prefix]; g != nil {
			var a, b writablegit.State
			if a, b, err = states(from, to); err == nil {
				text, err = g.DiffStates(ctx, a, b, format, names...)
			}
		} else {
			text, err = memoryDiff(ctx, m.Prefix, from, to, format, names)
		}
		if err != nil {
			return jsonrpc.DiffResult{}, fmt.Errorf("diff of %s: %w", m.Prefix, err)
		}
		b.WriteString(text)
	}
	return jsonrpc.DiffResult{Text: b.String()}, nil
}

// namesIn sorts workspace paths into the names of the mount at prefix: ok
// is false when no path is in it; nil names mean the whole mount.
func namesIn(prefix string, paths []string) (names []string, ok bool, err error) {
	if len(paths) == 0 {
		return nil, true, nil
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			return nil, false, fmt.Errorf("%w: path %q: want an absolute, clean workspace path such as /repo/src", jsonrpc.ErrInvalidParams, p)
		}
		switch {
		case p == prefix || p == "/" || strings.HasPrefix(prefix, p+"/"):
			return nil, true, nil
		case prefix == "/" || strings.HasPrefix(p, prefix+"/"):
			names = append(names, strings.TrimPrefix(strings.TrimPrefix(p, prefix), "/"))
			ok = true
		}
	}
	return names, ok, nil
}

// states are the two states of a writable git mount a diff is between.
func states(from, to mounts.FS) (a, b writablegit.State, err error) {
	a, ok := from.(writablegit.State)
	b, ok2 := to.(writablegit.State)
	if !ok || !ok2 {
		return nil, nil, fmt.Errorf("not overlays: %T, %T", from, to)
	}
	return a, b, nil
}

// memoryDiff diffs two states of a memory mount with git: both are written
// as commits into a scratch repository by git fast-import, and diffed by
// git diff-tree. File names carry the mount's prefix.
func memoryDiff(ctx context.Context, prefix string, from, to mounts.FS, format gitfs.DiffFormat, names []string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("%w: %v", gitfs.ErrNoGit, err)
	}
	tmp, err := os.MkdirTemp("", "vfsmount-ckdiff-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	run := func(stdin *bytes.Buffer, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"--literal-pathspecs", "--git-dir", tmp}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if stdin != nil {
			cmd.Stdin = stdin
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
		}
		return out.String(), nil
	}
	if _, err := run(nil, "init", "-q", "--bare"); err != nil {
		return "", err
	}
	base := strings.TrimPrefix(prefix, "/")
	var stream bytes.Buffer
	w := bufio.NewWriter(&stream)
	for _, side := range []struct {
		ref  string
		fsys mounts.FS
	}{{"refs/heads/from", from}, {"refs/heads/to", to}} {
		fmt.Fprintf(w, "commit %s\ncommitter vfsmount <vfsmount> 0 +0000\ndata 0\n", side.ref)
		if err := importTree(ctx, w, side.fsys, ".", base); err != nil {
			return "", err
		}
		w.WriteString("\n")
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	if _, err := run(&stream, "fast-import", "--quiet"); err != nil {
		return "", err
	}
	args := []string{"diff-tree", "-r", "-M", "--no-color"}
	switch format {
	case gitfs.Stat:
		args = append(args, "--stat")
	case gitfs.NameStatus:
		args = append(args, "--name-status")
	default:
		args = append(args, "-p", "--binary", "--full-index")
	}
	args = append(args, "refs/heads/from", "refs/heads/to", "--")
	for _, n := range names {
		args = append(args, path.Join(base, n))
	}
	return run(nil, args...)
}

// importTree writes the files and symlinks at and below name as
// fast-import file commands, under base.
func importTree(ctx context.Context, w *bufio.Writer, fsys mounts.FS, name, base string) error {
	ents, err := fsys.ReadDir(ctx, name)
	if err != nil {
		return err
	}
	for _, e := range ents {
		child := mounts.Join(name, e.Name)
		full := filepath.ToSlash(path.Join(base, child))
		switch {
		case e.Type.IsDir():
			if err := importTree(ctx, w, fsys, child, base); err != nil {
				return err
			}
		case e.Type&fs.ModeSymlink != 0:
			target, err := fsys.ReadLink(ctx, child)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "M 120000 inline %s\ndata %d\n%s\n", quotePath(full), len(target), target)
		case e.Type.IsRegular():
			a, err := fsys.Stat(ctx, child)
			if err != nil {
				return err
			}
			data, err := mounts.ReadFile(ctx, fsys, child)
			if err != nil {
				return err
			}
			mode := "100644"
			if a.Mode&0o111 != 0 {
				mode = "100755"
			}
			fmt.Fprintf(w, "M %s inline %s\ndata %d\n", mode, quotePath(full), len(data))
			w.Write(data)
			w.WriteString("\n")
		}
	}
	return nil
}

// quotePath quotes a path for fast-import when it needs it: C style, as
// git writes them.
func quotePath(p string) string {
	if !strings.ContainsAny(p, "\"\\\n") && !strings.HasPrefix(p, "\"") {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// checkpointTools adapts the checkpoints to the checkpoint tool family
// (agentbridge.Checkpointer): the same operations, answered in text.
type checkpointTools struct{ c *checkpoints }

var _ agentbridge.Checkpointer = checkpointTools{}

func (t checkpointTools) Create(ctx context.Context, name string) (string, error) {
	info, err := t.c.ws.Create(ctx, name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint %s taken (%s of changes since the previous one).", info.ID, humanBytes(info.Bytes))
	for _, e := range info.Manifest {
		if e.Coverage == checkpoint.NotCovered {
			fmt.Fprintf(&b, "\n%s is a host directory: it is not in the checkpoint, and a restore leaves it as it is.", e.Prefix)
		}
	}
	return b.String(), nil
}

func (t checkpointTools) List(ctx context.Context) (string, error) {
	list := t.c.ws.List()
	if len(list) == 0 {
		return "no checkpoints", nil
	}
	var b strings.Builder
	for _, c := range list {
		fmt.Fprintf(&b, "%s  %s  %s", c.ID, c.Time.Format(time.RFC3339), humanBytes(c.Bytes))
		if c.Name != "" {
			fmt.Fprintf(&b, "  %s", c.Name)
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func (t checkpointTools) Diff(ctx context.Context, from, to string, paths []string) (string, error) {
	res, err := t.c.CheckpointDiff(ctx, jsonrpc.CheckpointDiffParams{From: from, To: to, Paths: paths})
	if err != nil {
		return "", toolErr(err)
	}
	if res.Text == "" {
		return "no changes", nil
	}
	return res.Text, nil
}

func (t checkpointTools) Restore(ctx context.Context, id string, paths []string) (string, error) {
	r, err := t.c.ws.Restore(ctx, id, paths)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "restored %s to checkpoint %s: %d names changed back.", strings.Join(r.Restored, ", "), id, len(r.Changed))
	for _, p := range r.NotCovered {
		fmt.Fprintf(&b, "\n%s is a host directory a checkpoint cannot hold: it was left as it is.", p)
	}
	return b.String(), nil
}

func (t checkpointTools) Delete(ctx context.Context, id string) (string, error) {
	if err := t.c.ws.Delete(ctx, id); err != nil {
		return "", err
	}
	return "checkpoint " + id + " deleted", nil
}

// toolErr drops the JSON-RPC marker of bad input from an error for a tool.
func toolErr(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), jsonrpc.ErrInvalidParams.Error()+": "))
}
