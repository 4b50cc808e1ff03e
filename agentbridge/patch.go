package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// The apply_patch format (Codex), as TOOLS.md describes it:
//
//	*** Begin Patch
//	*** Add File: path/new.txt
//	+line
//	*** Update File: path/old.go
//	*** Move to: path/renamed.go
//	@@ optional context header
//	 context line
//	-removed line
//	+added line
//	*** End of File
//	*** Delete File: path/gone.txt
//	*** End Patch

// PatchOp is the kind of one file operation of a patch.
type PatchOp int

const (
	PatchAdd PatchOp = iota + 1
	PatchDelete
	PatchUpdate
)

// FilePatch is one file operation of a parsed patch.
type FilePatch struct {
	Op     PatchOp
	Path   string // as written in the patch
	MoveTo string // Update only; "" when the file keeps its name
	Lines  []string
	Chunks []PatchChunk // Update only
	Line   int          // 1-based line of the header in the patch text
}

// PatchChunk is one @@ section of an Update: Old must be found in the file
// (after Context, when given) and is replaced by New.
type PatchChunk struct {
	Context string // text after "@@", "" when none
	Old     []string
	New     []string
	EOF     bool // "*** End of File": Old is anchored at the end
	Line    int  // 1-based line where the chunk starts
}

// ParsePatch parses the apply_patch format leniently: whitespace around
// markers is ignored, a surrounding heredoc (<<'EOF' … EOF) is stripped, and
// the first chunk of an Update may omit its "@@" line. Errors name the line.
func ParsePatch(text string) ([]FilePatch, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	// first maps an index of lines to its 1-based line in text.
	first := 1
	trim := func() {
		for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
			lines = lines[1:]
			first++
		}
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
	}
	trim()
	if len(lines) >= 2 {
		head := strings.TrimSpace(lines[0])
		if i := strings.Index(head, "<<"); i >= 0 && !strings.HasPrefix(head, "***") {
			tag := strings.Trim(strings.TrimSpace(head[i+2:]), `'"`)
			if tag != "" && strings.TrimSpace(lines[len(lines)-1]) == tag {
				lines = lines[1 : len(lines)-1]
				first++
				trim()
			}
		}
	}
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "*** Begin Patch" {
		return nil, fmt.Errorf("line %d: a patch must start with \"*** Begin Patch\"", first)
	}
	end := len(lines) - 1
	if strings.TrimSpace(lines[end]) != "*** End Patch" {
		return nil, fmt.Errorf("line %d: a patch must end with \"*** End Patch\"", first+end)
	}
	var out []FilePatch
	i := 1
	lineNo := func(k int) int { return first + k }
	for i < end {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "":
			i++
		case strings.HasPrefix(l, "*** Add File:"):
			fp := FilePatch{Op: PatchAdd, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Add File:")), Line: lineNo(i)}
			i++
			for i < end && !isMarker(lines[i]) {
				if !strings.HasPrefix(lines[i], "+") {
					return nil, fmt.Errorf("line %d: every line of an added file must start with \"+\", got %q", lineNo(i), clip(lines[i]))
				}
				fp.Lines = append(fp.Lines, lines[i][1:])
				i++
			}
			out = append(out, fp)
		case strings.HasPrefix(l, "*** Delete File:"):
			out = append(out, FilePatch{Op: PatchDelete, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Delete File:")), Line: lineNo(i)})
			i++
		case strings.HasPrefix(l, "*** Update File:"):
			fp := FilePatch{Op: PatchUpdate, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Update File:")), Line: lineNo(i)}
			i++
			if i < end && strings.HasPrefix(strings.TrimSpace(lines[i]), "*** Move to:") {
				fp.MoveTo = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "*** Move to:"))
				i++
			}
			var cur *PatchChunk
			for i < end {
				raw := lines[i]
				t := strings.TrimSpace(raw)
				if t == "*** End of File" {
					if cur == nil {
						return nil, fmt.Errorf("line %d: \"*** End of File\" before any change", lineNo(i))
					}
					cur.EOF = true
					i++
					continue
				}
				if isMarker(raw) {
					break
				}
				if strings.HasPrefix(strings.TrimLeft(raw, "\t"), "@@") {
					fp.Chunks = append(fp.Chunks, PatchChunk{Context: strings.TrimSpace(strings.TrimPrefix(t, "@@")), Line: lineNo(i)})
					cur = &fp.Chunks[len(fp.Chunks)-1]
					i++
					continue
				}
				if cur == nil {
					// A first chunk without "@@".
					fp.Chunks = append(fp.Chunks, PatchChunk{Line: lineNo(i)})
					cur = &fp.Chunks[len(fp.Chunks)-1]
				}
				switch {
				case raw == "":
					// An empty line is an empty context line whose
					// leading space was lost.
					cur.Old = append(cur.Old, "")
					cur.New = append(cur.New, "")
				case raw[0] == ' ':
					cur.Old = append(cur.Old, raw[1:])
					cur.New = append(cur.New, raw[1:])
				case raw[0] == '-':
					cur.Old = append(cur.Old, raw[1:])
				case raw[0] == '+':
					cur.New = append(cur.New, raw[1:])
				default:
					return nil, fmt.Errorf("line %d: in Update File %s, expected a line starting with ' ', '-', '+' or \"@@\", got %q", lineNo(i), fp.Path, clip(raw))
				}
				i++
			}
			if len(fp.Chunks) == 0 && fp.MoveTo == "" {
				return nil, fmt.Errorf("line %d: Update File %s has no changes", fp.Line, fp.Path)
			}
			for _, c := range fp.Chunks {
				if len(c.Old) == 0 && len(c.New) == 0 {
					return nil, fmt.Errorf("line %d: empty @@ chunk in Update File %s", c.Line, fp.Path)
				}
			}
			out = append(out, fp)
		default:
			return nil, fmt.Errorf("line %d: expected \"*** Add File:\", \"*** Update File:\" or \"*** Delete File:\", got %q", lineNo(i), clip(lines[i]))
		}
	}
	for _, fp := range out {
		if fp.Path == "" {
			return nil, fmt.Errorf("line %d: the file path is missing", fp.Line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("line %d: the patch names no file", lineNo(end))
	}
	return out, nil
}

// isMarker reports whether l starts a new file section or ends the patch.
func isMarker(l string) bool {
	t := strings.TrimSpace(l)
	return strings.HasPrefix(t, "*** Add File:") || strings.HasPrefix(t, "*** Delete File:") ||
		strings.HasPrefix(t, "*** Update File:") || t == "*** End Patch"
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// applyChunks applies an Update's chunks to content. Each chunk is searched
// from where the previous one ended: exactly, then ignoring trailing
// whitespace, then ignoring surrounding whitespace.
func applyChunks(content string, chunks []PatchChunk) (string, error) {
	lines := strings.Split(content, "\n")
	if strings.HasSuffix(content, "\n") {
		lines = lines[:len(lines)-1]
	}
	type repl struct {
		at, n int
		with  []string
	}
	var rs []repl
	pos := 0
	for ci, c := range chunks {
		if c.Context != "" {
			k := seek(lines, []string{c.Context}, pos, false)
			if k < 0 {
				return "", fmt.Errorf("chunk %d (patch line %d): context line %q not found", ci+1, c.Line, clip(c.Context))
			}
			pos = k + 1
		}
		if len(c.Old) == 0 {
			at := len(lines)
			if c.Context != "" {
				at = pos
			}
			rs = append(rs, repl{at, 0, c.New})
			continue
		}
		old, nw := c.Old, c.New
		k := seek(lines, old, pos, c.EOF)
		if k < 0 && len(old) > 0 && old[len(old)-1] == "" {
			// A trailing empty line in the patch often stands for the
			// end of the file.
			old = old[:len(old)-1]
			if len(nw) > 0 && nw[len(nw)-1] == "" {
				nw = nw[:len(nw)-1]
			}
			k = seek(lines, old, pos, c.EOF)
		}
		if k < 0 {
			return "", fmt.Errorf("chunk %d (patch line %d): these lines were not found in the file: %q", ci+1, c.Line, clip(strings.Join(old, "\n")))
		}
		rs = append(rs, repl{k, len(old), nw})
		pos = k + len(old)
	}
	var b []string
	prev := 0
	for _, r := range rs {
		if r.at < prev {
			return "", errors.New("chunks overlap; order them as they appear in the file")
		}
		b = append(b, lines[prev:r.at]...)
		b = append(b, r.with...)
		prev = r.at + r.n
	}
	b = append(b, lines[prev:]...)
	if len(b) == 0 {
		return "", nil
	}
	return strings.Join(b, "\n") + "\n", nil
}

// seek finds pattern in lines at or after start, trying three levels of
// strictness; with eof it first tries the position that ends the file.
func seek(lines, pattern []string, start int, eof bool) int {
	eqs := []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return strings.TrimRight(a, " \t\r") == strings.TrimRight(b, " \t\r") },
		func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
	}
	match := func(at int, eq func(a, b string) bool) bool {
		for j, p := range pattern {
			if !eq(lines[at+j], p) {
				return false
			}
		}
		return true
	}
	for _, eq := range eqs {
		if eof {
			if at := len(lines) - len(pattern); at >= start && match(at, eq) {
				return at
			}
		}
		for at := start; at+len(pattern) <= len(lines); at++ {
			if match(at, eq) {
				return at
			}
		}
	}
	return -1
}

// patchStep is one validated change, ready to write.
type patchStep struct {
	op      PatchOp
	shown   string // workspace path for messages
	name    string // resolved FS name
	content string // new content (add, update)
	old     string // content before (update, delete), for rollback
	existed bool
	moveTo  string // resolved FS name of the Move to target
	moveAbs string
}

// applyPatch validates every file operation of patch, then writes. When a
// write fails halfway, the steps already done are undone, so the tree is
// as before (best effort: a mount that fails a write may fail the undo).
func (w *Workspace) applyPatch(ctx context.Context, patch string) (string, error) {
	fps, err := ParsePatch(patch)
	if err != nil {
		return "", fmt.Errorf("apply_patch: the patch does not parse: %v; nothing was changed", err)
	}
	var steps []patchStep
	claimed := map[string]bool{}
	for _, fp := range fps {
		st, err := w.planPatch(ctx, fp)
		if err != nil {
			return "", fmt.Errorf("apply_patch: %v; nothing was changed", err)
		}
		for _, n := range []string{st.name, st.moveTo} {
			if n == "" {
				continue
			}
			if claimed[n] {
				return "", fmt.Errorf("apply_patch: %s is named twice in the patch; combine its changes; nothing was changed", mounts.PathOf(n))
			}
			claimed[n] = true
		}
		steps = append(steps, st)
	}
	for _, st := range steps {
		if st.op != PatchDelete {
			if err := w.checkSize("apply_patch:", st.shown, len(st.content)); err != nil {
				return "", err
			}
		}
	}
	if w.dryRun {
		return dryPatch(steps), nil
	}
	var done []patchStep
	for _, st := range steps {
		if err := w.doStep(ctx, st); err != nil {
			for i := len(done) - 1; i >= 0; i-- {
				w.undoStep(ctx, done[i])
			}
			return "", fmt.Errorf("apply_patch: %v; the changes made before it were undone", err)
		}
		done = append(done, st)
	}
	var b strings.Builder
	b.WriteString("applied patch:\n")
	for _, st := range steps {
		switch {
		case st.op == PatchAdd:
			fmt.Fprintf(&b, "A %s\n", st.shown)
		case st.op == PatchDelete:
			fmt.Fprintf(&b, "D %s\n", st.shown)
		case st.moveTo != "":
			fmt.Fprintf(&b, "R %s -> %s\n", st.shown, st.moveAbs)
		default:
			fmt.Fprintf(&b, "M %s\n", st.shown)
		}
	}
	return b.String(), nil
}

// patchPath converts a path of a patch, absolute or relative to "/"
// (TOOLS.md), with the same [clean] rule as every path argument.
func patchPath(p string) wpath {
	return wpath{given: p, name: clean(".", p), rel: !strings.HasPrefix(p, "/")}
}

func (w *Workspace) planPatch(ctx context.Context, fp FilePatch) (patchStep, error) {
	p := patchPath(fp.Path)
	if err := mounts.CheckPath("patch", p.name); err != nil || p.name == "." {
		return patchStep{}, fmt.Errorf("line %d: invalid path %q", fp.Line, fp.Path)
	}
	st := patchStep{op: fp.Op, shown: p.abs()}
	verb := map[PatchOp]string{PatchAdd: "Add File", PatchDelete: "Delete File", PatchUpdate: "Update File"}[fp.Op]
	if err := w.checkWritable(verb, p); err != nil {
		return st, err
	}
	real, attr, exists, err := w.resolve(ctx, p.name, fp.Op != PatchDelete, fp.Op == PatchAdd)
	if err != nil {
		return st, w.explain(ctx, verb, p, err)
	}
	st.name, st.existed = real, exists
	if exists && attr.IsDir() {
		return st, fmt.Errorf("%s %s: is a directory", verb, p.abs())
	}
	switch fp.Op {
	case PatchAdd:
		st.content = strings.Join(fp.Lines, "\n")
		if len(fp.Lines) > 0 {
			st.content += "\n"
		}
		if exists {
			if st.old, err = w.readText(ctx, verb, p, real); err != nil {
				return st, err
			}
		}
	case PatchDelete:
		if !attr.Mode.IsRegular() && attr.Mode&fs.ModeSymlink == 0 {
			return st, fmt.Errorf("%s %s: not a file", verb, p.abs())
		}
		if attr.Mode.IsRegular() {
			if st.old, err = w.readText(ctx, verb, p, real); err != nil {
				return st, err
			}
		}
	case PatchUpdate:
		if st.old, err = w.readText(ctx, verb, p, real); err != nil {
			return st, err
		}
		if st.content, err = applyChunks(st.old, fp.Chunks); err != nil {
			return st, fmt.Errorf("%s %s: %v", verb, p.abs(), err)
		}
		if fp.MoveTo != "" {
			mp := patchPath(fp.MoveTo)
			if err := mounts.CheckPath("patch", mp.name); err != nil || mp.name == "." {
				return st, fmt.Errorf("line %d: invalid Move to path %q", fp.Line, fp.MoveTo)
			}
			if err := w.checkWritable("Move to", mp); err != nil {
				return st, err
			}
			mreal, mattr, mexists, err := w.resolve(ctx, mp.name, true, true)
			if err != nil {
				return st, w.explain(ctx, "Move to", mp, err)
			}
			if mexists && mreal != real {
				if mattr.IsDir() {
					return st, fmt.Errorf("Move to %s: is a directory", mp.abs())
				}
				return st, fmt.Errorf("Move to %s: already exists; delete it first or choose another name", mp.abs())
			}
			if mreal != real {
				st.moveTo, st.moveAbs = mreal, mp.abs()
			}
		}
	}
	return st, nil
}

func (w *Workspace) doStep(ctx context.Context, st patchStep) error {
	p := wpath{name: st.name}
	switch st.op {
	case PatchDelete:
		if err := mounts.Unlink(ctx, w.fsys, st.name); err != nil {
			return w.explain(ctx, "Delete File", p, err)
		}
	case PatchAdd:
		if err := w.writeFile(ctx, st.name, []byte(st.content)); err != nil {
			return w.explain(ctx, "Add File", p, err)
		}
	case PatchUpdate:
		target := st.name
		if st.moveTo != "" {
			target = st.moveTo
		}
		if err := w.writeFile(ctx, target, []byte(st.content)); err != nil {
			return w.explain(ctx, "Update File", wpath{name: target}, err)
		}
		if st.moveTo != "" {
			if err := mounts.Unlink(ctx, w.fsys, st.name); err != nil {
				_ = mounts.Unlink(ctx, w.fsys, st.moveTo)
				return w.explain(ctx, "Update File", p, err)
			}
		}
	}
	return nil
}

func (w *Workspace) undoStep(ctx context.Context, st patchStep) {
	var err error
	switch {
	case st.op == PatchAdd && !st.existed:
		err = mounts.Unlink(ctx, w.fsys, st.name)
	case st.op == PatchAdd, st.op == PatchDelete:
		err = w.writeFile(ctx, st.name, []byte(st.old))
	case st.op == PatchUpdate:
		if st.moveTo != "" {
			_ = mounts.Unlink(ctx, w.fsys, st.moveTo)
		}
		err = w.writeFile(ctx, st.name, []byte(st.old))
	}
	if err != nil {
		w.log.Error("agentbridge: apply_patch rollback failed", "path", mounts.PathOf(st.name), "err", err)
	}
}

// dryPatch shows the diff of every step of a patch without applying it.
func dryPatch(steps []patchStep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "would apply patch (%d %s) %s\n", len(steps), plural(len(steps), "file", "files"), dryRunNote)
	for _, st := range steps {
		from, to := mounts.PathOf(st.name), mounts.PathOf(st.name)
		if st.moveTo != "" {
			to = mounts.PathOf(st.moveTo)
		}
		switch st.op {
		case PatchAdd:
			b.WriteString(unifiedDiff(from, to, st.old, st.content, st.existed, true))
		case PatchDelete:
			b.WriteString(unifiedDiff(from, to, st.old, "", true, false))
		default:
			b.WriteString(unifiedDiff(from, to, st.old, st.content, true, true))
		}
	}
	return b.String()
}
