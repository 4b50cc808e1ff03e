package agentbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// An apply_patch typed into the shell is applied, as Codex does (codex-rs
// intercepts it before anything runs): there is no apply_patch program in
// the namespace, and a model trained on Codex types these forms:
//
//	apply_patch <<'EOF'          (any heredoc delimiter, quoted or not)
//	*** Begin Patch …
//	EOF
//	apply_patch 'PATCH'          (codex's argv ["apply_patch", PATCH])
//	cd DIR && apply_patch <<'EOF' … EOF
//
// each as the whole command, wrapped in ["bash", "-lc", …] or not (the
// argv forms are joined into a command line by codexCommand first). The
// command is parsed with mvdan.cc/sh's bash parser, not matched by hand;
// anything else (a second command, a pipe, an expansion in the patch
// argument) is not an apply_patch and runs as it is. A matched patch
// becomes an edit call with patchContent: the edit verb's policy, approval
// (BeforeCall sees verb "edit"), audit, dry run and all-or-nothing apply,
// with relative paths against DIR, else the call's directory. A patch
// that does not parse is the patch's error, not the shell's.

// applyPatchNames are the command names Codex intercepts.
var applyPatchNames = []string{"apply_patch", "applypatch"}

// shellPatch returns the edit arguments a shell call stands for when its
// command is an apply_patch invocation, nil when it is not one.
func (w *Workspace) shellPatch(ctx context.Context, t *dialectTool, a *args) (*args, error) {
	command, err := a.str("command", false)
	if err != nil || command == "" {
		return nil, nil // not a command line: the verb says why
	}
	patch, dir, ok := parseApplyPatch(command)
	if !ok {
		if _, perr := ParsePatch(command); perr == nil {
			// A bare patch as the command: Codex refuses it too.
			if a.dialect != nil && a.dialect.name == DialectCodex {
				return nil, fmt.Errorf(`%s: patch detected without explicit call to apply_patch. Rerun as ["apply_patch", "<patch>"]`, a.tool)
			}
			return nil, fmt.Errorf("%s: the command is a patch, not a command line; run it as apply_patch <<'EOF' … EOF, or pass it to %s", a.tool, toolName(ctx, VerbEdit))
		}
		return nil, nil
	}
	if w.verbs[VerbEdit] == nil {
		why := "edit is not among this workspace's tools"
		if !mounts.Capabilities(w.fsys).Has(mounts.CapWrite) {
			why = "no mount can create files"
		}
		return nil, fmt.Errorf("%s: apply_patch edits files, and this workspace cannot: %s; nothing was changed", a.tool, why)
	}
	base := a.base()
	if a.present("cwd") {
		p, err := a.path(a.tool, "cwd", false, "")
		if err != nil {
			return nil, err
		}
		base = p.name
	}
	if dir != "" {
		base = clean(base, dir)
	}
	pa := &args{tool: "apply_patch", m: map[string]json.RawMessage{}, alias: map[string]string{}, dialect: a.dialect, sess: a.sess, cwd: base}
	pa.set("patchContent", patch)
	if base != a.base() {
		// The directory the patch's paths are relative to, for the
		// audit's paths (CallInfo.Paths) and a reader of the call.
		pa.set("cwd", mounts.PathOf(base))
	}
	return pa, nil
}

// parseApplyPatch recognises the forms above in command and returns the
// patch text and the cd directory ("" without one).
func parseApplyPatch(command string) (patch, dir string, ok bool) {
	if !strings.Contains(command, "apply") {
		return "", "", false // the common case, without a parse
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil || len(f.Stmts) != 1 {
		return "", "", false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess {
		return "", "", false
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		patch, ok = applyCall(command, c, st.Redirs)
		return patch, "", ok
	case *syntax.BinaryCmd:
		if c.Op != syntax.AndStmt || len(c.X.Redirs) > 0 || c.X.Negated || c.Y.Negated {
			return "", "", false
		}
		cd, isCall := c.X.Cmd.(*syntax.CallExpr)
		if !isCall || len(cd.Assigns) > 0 || len(cd.Args) != 2 || cd.Args[0].Lit() != "cd" {
			return "", "", false
		}
		dir, ok = literal(cd.Args[1])
		if !ok || dir == "" || strings.HasPrefix(dir, "-") {
			return "", "", false
		}
		ap, isCall := c.Y.Cmd.(*syntax.CallExpr)
		if !isCall {
			return "", "", false
		}
		// The heredoc belongs to apply_patch however the list is read.
		patch, ok = applyCall(command, ap, append(append([]*syntax.Redirect{}, c.Y.Redirs...), st.Redirs...))
		return patch, dir, ok
	}
	return "", "", false
}

// applyCall matches `apply_patch <<DELIM …` and `apply_patch 'PATCH'`.
func applyCall(src string, c *syntax.CallExpr, redirs []*syntax.Redirect) (string, bool) {
	if len(c.Assigns) > 0 || len(c.Args) == 0 {
		return "", false
	}
	name := c.Args[0].Lit()
	known := false
	for _, n := range applyPatchNames {
		known = known || name == n
	}
	if !known {
		return "", false
	}
	switch {
	case len(c.Args) == 2 && len(redirs) == 0:
		return literal(c.Args[1])
	case len(c.Args) == 1 && len(redirs) == 1 && (redirs[0].Op == syntax.Hdoc || redirs[0].Op == syntax.DashHdoc) && redirs[0].Hdoc != nil:
		r := redirs[0]
		body := src[r.Hdoc.Pos().Offset():r.Hdoc.End().Offset()]
		// The body's range ends with the delimiter line.
		delim, ok := literal(r.Word)
		if !ok {
			return "", false
		}
		if i := strings.LastIndexByte(body, '\n'); i >= 0 && strings.TrimSpace(body[i+1:]) == delim {
			body = body[:i]
		} else if strings.TrimSpace(body) == delim {
			body = ""
		}
		return body, true
	}
	return "", false
}

// literal is the value of a word made only of literal text and quotes
// (no expansion): what the shell would pass.
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	for _, p := range w.Parts {
		switch q := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, in := range q.Parts {
				if _, ok := in.(*syntax.Lit); !ok {
					return "", false
				}
			}
		default:
			return "", false
		}
	}
	s, err := expand.Literal(nil, w)
	if err != nil {
		return "", false
	}
	return s, true
}
