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
		return nil, &patchError{line: first, msg: `a patch must start with "*** Begin Patch"`, whole: true,
			codex: "The first line of the patch must be '*** Begin Patch'"}
	}
	end := len(lines) - 1
	if strings.TrimSpace(lines[end]) != "*** End Patch" {
		return nil, &patchError{line: first + end, msg: `a patch must end with "*** End Patch"`, whole: true,
			codex: "The last line of the patch must be '*** End Patch'"}
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
					return nil, &patchError{line: lineNo(i), msg: fmt.Sprintf(`every line of an added file must start with "+", got %q`, clip(lines[i])),
						codex: notHunkHeader(lines[i])}
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
						return nil, &patchError{line: lineNo(i), msg: `"*** End of File" before any change`, codex: "Update hunk does not contain any lines"}
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
					return nil, &patchError{line: lineNo(i), msg: fmt.Sprintf(`in Update File %s, expected a line starting with ' ', '-', '+' or "@@", got %q`, fp.Path, clip(raw)),
						codex: fmt.Sprintf("Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", raw)}
				}
				i++
			}
			if len(fp.Chunks) == 0 && fp.MoveTo == "" {
				return nil, &patchError{line: fp.Line, msg: fmt.Sprintf("Update File %s has no changes", fp.Path),
					codex: fmt.Sprintf("Update file hunk for path '%s' is empty", fp.Path)}
			}
			for _, c := range fp.Chunks {
				if len(c.Old) == 0 && len(c.New) == 0 {
					return nil, &patchError{line: c.Line, msg: fmt.Sprintf("empty @@ chunk in Update File %s", fp.Path), codex: "Update hunk does not contain any lines"}
				}
			}
			out = append(out, fp)
		default:
			return nil, &patchError{line: lineNo(i), msg: fmt.Sprintf(`expected "*** Add File:", "*** Update File:" or "*** Delete File:", got %q`, clip(lines[i])),
				codex: notHunkHeader(lines[i])}
		}
	}
	for _, fp := range out {
		if fp.Path == "" {
			return nil, &patchError{line: fp.Line, msg: "the file path is missing", codex: notHunkHeader(lines[fp.Line-first])}
		}
	}
	if len(out) == 0 {
		return nil, &patchError{line: lineNo(end), msg: "the patch names no file", codex: "No files were modified.", bare: true}
	}
	return out, nil
}

// patchError is a patch that does not parse: the line of the text where
// it fails and why, in the tool face's words (Error) and in codex-rs's
// (codexText), which a model trained on Codex has seen.
type patchError struct {
	line  int
	msg   string
	codex string
	whole bool // codex-rs calls it an invalid patch, not an invalid hunk
	bare  bool // codex-rs says codex as it is
}

func (e *patchError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (e *patchError) codexText() string {
	switch {
	case e.bare:
		return e.codex
	case e.whole:
		return "invalid patch: " + e.codex
	}
	return fmt.Sprintf("invalid hunk at line %d, %s", e.line, e.codex)
}

// notHunkHeader is codex-rs's words for a line where a file section
// should start.
func notHunkHeader(line string) string {
	return fmt.Sprintf("'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", strings.TrimSpace(line))
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
				return "", &chunkError{chunk: ci + 1, line: c.Line, context: c.Context}
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
			return "", &chunkError{chunk: ci + 1, line: c.Line, old: c.Old}
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

// chunkError is a chunk of an Update whose lines (or context line) are not
// in the file, in the tool face's words (Error) and codex-rs's (codexText).
type chunkError struct {
	chunk, line int
	context     string   // the context line not found; "" when it is old
	old         []string // the lines not found
}

func (e *chunkError) Error() string {
	if e.old == nil {
		return fmt.Sprintf("chunk %d (patch line %d): context line %q not found", e.chunk, e.line, clip(e.context))
	}
	return fmt.Sprintf("chunk %d (patch line %d): these lines were not found in the file: %q", e.chunk, e.line, clip(strings.Join(e.old, "\n")))
}

func (e *chunkError) codexText(path string) string {
	if e.old == nil {
		return fmt.Sprintf("Failed to find context '%s' in %s", e.context, path)
	}
	return fmt.Sprintf("Failed to find expected lines in %s:\n%s", path, strings.Join(e.old, "\n"))
}

// seek finds pattern in lines at or after start, trying four levels of
// strictness as codex-rs's seek_sequence does: exactly, ignoring trailing
// whitespace, ignoring surrounding whitespace, and last with typographic
// dashes, quotes and odd spaces read as their ASCII ones (a patch typed in
// ASCII against a file that has them). With eof it first tries the
// position that ends the file.
func seek(lines, pattern []string, start int, eof bool) int {
	eqs := []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return strings.TrimRight(a, " \t\r") == strings.TrimRight(b, " \t\r") },
		func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
		func(a, b string) bool { return normalisePunct(a) == normalisePunct(b) },
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

// punctASCII maps the code points codex-rs's seek_sequence normalises to
// the ASCII a patch is usually typed in.
var punctASCII = strings.NewReplacer(
	// dashes and hyphens
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	// single quotes
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	// double quotes
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	// non-breaking and other odd spaces
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ",
)

func normalisePunct(s string) string { return punctASCII.Replace(strings.TrimSpace(s)) }

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
	// moveOld is the content a Move to overwrites, for rollback; nil
	// when the target did not exist.
	moveOld []byte
}

// applyPatch validates every file operation of patch, then writes. When a
// write fails halfway, the steps already done are undone, so the tree is
// as before (best effort: a mount that fails a write may fail the undo).
// Relative paths of the patch resolve against a's directory. A codex
// caller gets codex-rs's texts for what codex-rs also reports (it
// verifies every hunk before writing too, so its failures also change
// nothing): "Success. Updated the following files:", "apply_patch
// verification failed: …".
func (w *Workspace) applyPatch(ctx context.Context, a *args, patch string) (string, error) {
	codex := a.dialect != nil && a.dialect.name == DialectCodex
	fail := func(err error, what string) error {
		if codex {
			var pe *patchError
			var ce *codexFault
			switch {
			case errors.As(err, &pe):
				return errors.New("apply_patch verification failed: " + pe.codexText())
			case errors.As(err, &ce):
				return errors.New("apply_patch verification failed: " + ce.text)
			}
		}
		return fmt.Errorf("apply_patch: %s%v; nothing was changed", what, err)
	}
	fps, err := ParsePatch(patch)
	if err != nil {
		return "", fail(err, "the patch does not parse: ")
	}
	var steps []patchStep
	claimed := map[string]bool{}
	for _, fp := range fps {
		st, err := w.planPatch(ctx, a.base(), fp)
		if err != nil {
			return "", fail(err, "")
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
	if codex {
		return codexSummary(steps), nil
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

// codexSummary is codex-rs's print_summary: the added, then the modified
// (a moved file under its new name), then the deleted files.
func codexSummary(steps []patchStep) string {
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	for _, kind := range []PatchOp{PatchAdd, PatchUpdate, PatchDelete} {
		for _, st := range steps {
			if st.op != kind {
				continue
			}
			shown := st.shown
			if st.moveAbs != "" {
				shown = st.moveAbs
			}
			fmt.Fprintf(&b, "%c %s\n", "AMD"[map[PatchOp]int{PatchAdd: 0, PatchUpdate: 1, PatchDelete: 2}[kind]], shown)
		}
	}
	return b.String()
}

// codexFault is a failure codex-rs reports in words of its own; Error is
// the tool face's sentence for it.
type codexFault struct {
	err  error
	text string
}

func (e *codexFault) Error() string { return e.err.Error() }
func (e *codexFault) Unwrap() error { return e.err }

// patchPath converts a path of a patch, absolute or relative to base (the
// caller's directory), with the same [clean] rule as every path argument.
func patchPath(base, p string) wpath {
	return wpath{given: p, name: clean(base, p), rel: !strings.HasPrefix(p, "/")}
}

func (w *Workspace) planPatch(ctx context.Context, base string, fp FilePatch) (patchStep, error) {
	p := patchPath(base, fp.Path)
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
		missing := errors.Is(err, fs.ErrNotExist)
		err = w.explain(ctx, verb, p, err)
		if missing {
			// codex-rs reads the file first and says so.
			what := "Failed to read file to update"
			if fp.Op == PatchDelete {
				what = "Failed to read"
			}
			err = &codexFault{err: err, text: fmt.Sprintf("%s %s: No such file or directory (os error 2)", what, p.abs())}
		}
		return st, err
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
			var ce *chunkError
			if errors.As(err, &ce) {
				return st, &codexFault{err: fmt.Errorf("%s %s: %v", verb, p.abs(), err), text: ce.codexText(p.abs())}
			}
			return st, fmt.Errorf("%s %s: %v", verb, p.abs(), err)
		}
		if fp.MoveTo != "" {
			mp := patchPath(base, fp.MoveTo)
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
					//lint:ignore ST1005 "Move to" names the patch's "*** Move to:" line, as this section's other errors do.
					return st, fmt.Errorf("Move to %s: is a directory", mp.abs())
				}
				if !mattr.Mode.IsRegular() {
					return st, notRegular("Move to", mp, mattr.Mode)
				}
				// Codex overwrites an existing target; its content is
				// kept to put back if a later step fails.
				if st.moveOld, err = mounts.ReadFile(ctx, w.fsys, mreal); err != nil {
					return st, w.explain(ctx, "Move to", mp, err)
				}
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
				w.restoreMoveTarget(ctx, st)
				return w.explain(ctx, "Update File", p, err)
			}
		}
	}
	return nil
}

// restoreMoveTarget puts back what a Move to overwrote, or removes what
// it created.
func (w *Workspace) restoreMoveTarget(ctx context.Context, st patchStep) {
	var err error
	if st.moveOld != nil {
		err = w.writeFile(ctx, st.moveTo, st.moveOld)
	} else {
		err = mounts.Unlink(ctx, w.fsys, st.moveTo)
	}
	if err != nil {
		w.log.Error("agentbridge: apply_patch rollback failed", "path", mounts.PathOf(st.moveTo), "err", err)
	}
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
			w.restoreMoveTarget(ctx, st)
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
