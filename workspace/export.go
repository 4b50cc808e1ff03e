package workspace

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/policy"
)

// Export hands the changes of a workspace's writable git mounts back to
// git: the diff, commit and reset of vfsmount's commands and of JSON-RPC
// (jsonrpc.Exporter). These are the operator's commands (the person
// running the workspace), never the agent's tools: they work on the mounts
// themselves, below the policy decorators, and no path rule binds them.
// What they change is audited all the same: each name a reset changes is a
// change line, and a commit a line of its own, with the face "operator". A
// reset tells the kernel face which names changed (notify), so the shell
// sees the commit's content at once.
type Export struct {
	mounts []exportMount // sorted by prefix
	audit  *policy.AuditLog
	notify func(names ...string)
}

// exportMount is one writable git mount at its prefix: its export
// capability.
type exportMount struct {
	prefix string
	fs     mounts.ExportFS
}

var _ jsonrpc.Exporter = (*Export)(nil)

// newExport finds the writable git mounts of the union table; nil when
// there is none.
func newExport(table map[string]mounts.FS, audit *policy.AuditLog, notify func(names ...string)) *Export {
	e := &Export{audit: audit, notify: notify}
	for prefix, fsys := range table {
		if w, ok := mounts.Exportable(fsys); ok {
			e.mounts = append(e.mounts, exportMount{prefix: prefix, fs: w})
		}
	}
	if len(e.mounts) == 0 {
		return nil
	}
	slices.SortFunc(e.mounts, func(a, b exportMount) int { return strings.Compare(a.prefix, b.prefix) })
	return e
}

// pick sorts workspace paths by the writable git mount holding them: the
// names in the mount ("." for the whole mount). No paths means every mount,
// whole. A path in no writable git mount is bad input; one above a mount
// ("/" for /repo) covers it whole.
func (e *Export) pick(paths []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(paths) == 0 {
		for _, m := range e.mounts {
			out[m.prefix] = nil
		}
		return out, nil
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			return nil, fmt.Errorf("%w: path %q: want an absolute, clean workspace path such as /repo/src", jsonrpc.ErrInvalidParams, p)
		}
		found := false
		for _, m := range e.mounts {
			switch {
			case p == m.prefix || p == "/" || strings.HasPrefix(m.prefix, p+"/"):
				out[m.prefix], found = nil, true
			case strings.HasPrefix(p, m.prefix+"/") || m.prefix == "/":
				if names, whole := out[m.prefix]; !whole || names != nil {
					out[m.prefix] = append(names, strings.TrimPrefix(strings.TrimPrefix(p, m.prefix), "/"))
				}
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: path %s is in no writable git mount (%s)", jsonrpc.ErrInvalidParams, p, e.prefixes())
		}
	}
	return out, nil
}

func (e *Export) prefixes() string {
	var ps []string
	for _, m := range e.mounts {
		ps = append(ps, m.prefix)
	}
	return strings.Join(ps, ", ")
}

func (e *Export) Diff(ctx context.Context, p jsonrpc.DiffParams) (jsonrpc.DiffResult, error) {
	format, err := gitfs.ParseDiffFormat(p.Format)
	if err != nil {
		return jsonrpc.DiffResult{}, fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
	}
	picked, err := e.pick(p.Paths)
	if err != nil {
		return jsonrpc.DiffResult{}, err
	}
	var b strings.Builder
	for _, m := range e.mounts {
		names, ok := picked[m.prefix]
		if !ok {
			continue
		}
		text, err := m.fs.ExportDiff(ctx, format.String(), names...)
		if err != nil {
			return jsonrpc.DiffResult{}, fmt.Errorf("diff of %s: %w", m.prefix, err)
		}
		b.WriteString(text)
	}
	return jsonrpc.DiffResult{Text: b.String()}, nil
}

func (e *Export) Commit(ctx context.Context, p jsonrpc.CommitParams) (jsonrpc.CommitResult, error) {
	ctx = asOperator(ctx)
	switch {
	case p.Branch == "":
		return jsonrpc.CommitResult{}, fmt.Errorf("%w: a branch is required (--branch NAME)", jsonrpc.ErrInvalidParams)
	case strings.TrimSpace(p.Message) == "":
		return jsonrpc.CommitResult{}, fmt.Errorf("%w: a message is required (-m MSG)", jsonrpc.ErrInvalidParams)
	}
	var m *exportMount
	for i := range e.mounts {
		if p.Dst == "" || e.mounts[i].prefix == p.Dst {
			if m != nil {
				return jsonrpc.CommitResult{}, fmt.Errorf("%w: several writable git mounts (%s): say which with --dst", jsonrpc.ErrInvalidParams, e.prefixes())
			}
			m = &e.mounts[i]
		}
	}
	if m == nil {
		return jsonrpc.CommitResult{}, fmt.Errorf("%w: --dst %s is no writable git mount (%s)", jsonrpc.ErrInvalidParams, p.Dst, e.prefixes())
	}
	id, err := m.fs.ExportCommit(ctx, p.Message, p.Branch, p.Force)
	if e.audit != nil && (err != nil || id != "") {
		e.audit.Commit(ctx, m.prefix, "refs/heads/"+p.Branch, id, err)
	}
	if errors.Is(err, gitfs.ErrBadBranch) {
		err = fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
	}
	if err != nil || id == "" {
		return jsonrpc.CommitResult{}, err
	}
	return jsonrpc.CommitResult{Commit: id, Ref: "refs/heads/" + p.Branch}, nil
}

func (e *Export) Reset(ctx context.Context, p jsonrpc.ResetParams) (jsonrpc.ResetResult, error) {
	ctx = asOperator(ctx)
	picked, err := e.pick(p.Paths)
	if err != nil {
		return jsonrpc.ResetResult{}, err
	}
	var res jsonrpc.ResetResult
	res.Reset = []string{}
	for _, m := range e.mounts {
		names, ok := picked[m.prefix]
		if !ok {
			continue
		}
		if names == nil {
			names = []string{"."}
		}
		// Every changed name the reset covers is one the kernel may
		// cache: the content of a file below a reset directory too.
		touched, err := m.fs.ExportReset(ctx, names...)
		if errors.Is(err, overlayfs.ErrResetInside) {
			err = fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
		}
		// Tell the kernel face even after a failure: some names may be
		// reset already.
		var ws []string
		for _, n := range touched {
			ws = append(ws, mounts.NameOf(path.Join(m.prefix, n)))
			if e.audit != nil && n != "." {
				e.audit.Change(ctx, "reset", path.Join(m.prefix, n), err)
			}
		}
		if e.notify != nil {
			e.notify(ws...)
		}
		if err != nil {
			return res, fmt.Errorf("reset of %s: %w", m.prefix, err)
		}
		for _, n := range names {
			res.Reset = append(res.Reset, path.Join(m.prefix, n))
		}
	}
	return res, nil
}

// shellBinds are the host paths the writable git mounts' .git needs in the
// shell tool's namespace ([WritableGit.ShellBinds]); none on a nil Export.
func (e *Export) shellBinds() []agentbridge.ShellBind {
	if e == nil {
		return nil
	}
	var out []agentbridge.ShellBind
	for _, m := range e.mounts {
		if b, ok := m.fs.(interface {
			ShellBinds() []agentbridge.ShellBind
		}); ok {
			out = append(out, b.ShellBinds()...)
		}
	}
	return out
}
