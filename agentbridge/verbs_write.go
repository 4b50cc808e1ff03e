package agentbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

const (
	filePerm      = 0o644
	dirPerm       = 0o755
	snippetMargin = 3 // lines of context around each change in an edit result
)

func (w *Workspace) write(ctx context.Context, a *args) (string, error) {
	p, err := a.path(a.tool, "path", true, "")
	if err != nil {
		return "", err
	}
	if !a.present("fileText") {
		return "", a.missing("fileText")
	}
	text, err := a.str("fileText", false)
	if err != nil {
		return "", err
	}
	if err := w.checkWritable(a.tool, p); err != nil {
		return "", err
	}
	real, attr, exists, err := w.resolve(ctx, p.name, true, true)
	if err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	if exists && attr.IsDir() {
		return "", fmt.Errorf("%s %s: is a directory; give a file path", a.tool, p.abs())
	}
	if exists && mounts.IsSpecial(attr.Mode) {
		return "", notRegular(a.tool, p, attr.Mode)
	}
	if err := w.checkSize(a.tool, p.abs(), len(text)); err != nil {
		return "", err
	}
	if w.dryRun {
		if exists {
			return fmt.Sprintf("would overwrite %s (%d bytes, now %d bytes) %s", p.abs(), len(text), attr.Size, dryRunNote), nil
		}
		return fmt.Sprintf("would create %s (%d bytes) %s", p.abs(), len(text), dryRunNote), nil
	}
	if err := w.writeFile(ctx, real, []byte(text)); err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	verb := "created"
	if exists {
		verb = "overwrote"
	}
	return fmt.Sprintf("%s %s (%d bytes)", verb, p.abs(), len(text)), nil
}

// checkWritable fails early, with the mount table in the message, when the
// mount table says p is read-only; the tree would refuse anyway, but only
// after MkdirAll had a chance to fail on a parent with a vaguer message.
func (w *Workspace) checkWritable(op string, p wpath) error {
	if m, ok := w.mountFor(p.name); ok && !m.Writable {
		return w.explain(context.Background(), op, p, mounts.ErrReadOnly)
	}
	return nil
}

// writeFile creates missing parents and writes data to the resolved name.
func (w *Workspace) writeFile(ctx context.Context, name string, data []byte) error {
	if dir, _ := mounts.Split(name); dir != "." {
		if err := mounts.MkdirAll(ctx, w.fsys, dir, dirPerm); err != nil {
			return err
		}
	}
	return mounts.WriteFile(ctx, w.fsys, name, data, filePerm)
}

// readText reads a whole file for editing, refusing binary content.
func (w *Workspace) readText(ctx context.Context, op string, p wpath, name string) (string, error) {
	data, err := mounts.ReadFile(ctx, w.fsys, name)
	if err != nil {
		return "", w.explain(ctx, op, p, err)
	}
	if bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0 {
		return "", fmt.Errorf("%s %s: binary file (%d bytes); only text files can be edited", op, p.abs(), len(data))
	}
	return string(data), nil
}

type editSpec struct {
	OldText    string
	NewText    string
	ReplaceAll bool
}

// span is a byte range of the edited content that holds new text.
type span struct{ start, end int }

func (w *Workspace) edit(ctx context.Context, a *args) (string, error) {
	if a.present("patchContent") {
		patch, err := a.str("patchContent", true)
		if err != nil {
			return "", err
		}
		return w.applyPatch(ctx, a, patch)
	}
	p, err := a.path(a.tool, "path", true, "")
	if err != nil {
		return "", err
	}
	var edits []editSpec
	multi := a.present("edits")
	if multi {
		if edits, err = decodeEdits(a); err != nil {
			return "", err
		}
	} else {
		if !a.present("oldText") {
			return "", a.missing("oldText")
		}
		var e editSpec
		if e.OldText, err = a.str("oldText", false); err != nil {
			return "", err
		}
		if !a.present("newText") {
			return "", a.missing("newText")
		}
		if e.NewText, err = a.str("newText", false); err != nil {
			return "", err
		}
		if e.ReplaceAll, err = a.boolean("replaceAll", false); err != nil {
			return "", err
		}
		edits = []editSpec{e}
	}
	if err := w.checkWritable(a.tool, p); err != nil {
		return "", err
	}
	real, attr, exists, err := w.resolve(ctx, p.name, true, true)
	if err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	var content string
	switch {
	case !exists && len(edits) == 1 && edits[0].OldText == "":
		// An empty oldText on a missing file creates it, as Claude's
		// Edit does.
		content = ""
	case !exists:
		return "", w.explain(ctx, a.tool, p, fs.ErrNotExist)
	case attr.IsDir():
		return "", fmt.Errorf("%s %s: is a directory; give a file path", a.tool, p.abs())
	default:
		if content, err = w.readText(ctx, a.tool, p, real); err != nil {
			return "", err
		}
	}
	before := content
	var spans []span
	for i, e := range edits {
		where := ""
		if multi {
			where = fmt.Sprintf("edits[%d]: ", i)
		}
		var err error
		content, spans, err = applyEdit(content, e, spans, editNamesOf(ctx, a))
		if err != nil {
			msg := fmt.Sprintf("%s %s: %s%v", a.tool, p.abs(), where, err)
			if multi {
				msg += "; no edit was applied"
			}
			return "", errors.New(msg)
		}
	}
	n := len(spans)
	if err := w.checkSize(a.tool, p.abs(), len(content)); err != nil {
		return "", err
	}
	if w.dryRun {
		return fmt.Sprintf("would edit %s (%d %s) %s\n%s", p.abs(), n, plural(n, "change", "changes"), dryRunNote,
			unifiedDiff(mounts.PathOf(real), mounts.PathOf(real), before, content, exists, true)), nil
	}
	if err := w.writeFile(ctx, real, []byte(content)); err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	return fmt.Sprintf("edited %s (%d %s)\n%s", p.abs(), n, plural(n, "change", "changes"), snippet(content, spans)), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func decodeEdits(a *args) ([]editSpec, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(a.m["edits"], &raw); err != nil {
		return nil, a.errf("argument %q must be a list of {%s, %s, %s?} objects", a.key("edits"), a.key("oldText"), a.key("newText"), a.key("replaceAll"))
	}
	if len(raw) == 0 {
		return nil, a.errf("argument %q must hold at least one edit", a.key("edits"))
	}
	out := make([]editSpec, len(raw))
	for i, m := range raw {
		sub := &args{tool: fmt.Sprintf("%s: %s[%d]", a.tool, a.key("edits"), i), m: map[string]json.RawMessage{}, alias: map[string]string{}, rename: a.rename, schemaKeys: a.schemaKeys}
		for k, v := range m {
			c := k
			if r, ok := a.rename[k]; ok {
				c = r
				sub.alias[c] = k
			}
			sub.m[c] = v
		}
		var err error
		if !sub.present("oldText") {
			return nil, sub.missing("oldText")
		}
		if out[i].OldText, err = sub.str("oldText", false); err != nil {
			return nil, err
		}
		if !sub.present("newText") {
			return nil, sub.missing("newText")
		}
		if out[i].NewText, err = sub.str("newText", false); err != nil {
			return nil, err
		}
		if out[i].ReplaceAll, err = sub.boolean("replaceAll", false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// editNames are what the caller's dialect calls the edit's keys and the
// tools an edit error points to, so its hints can be followed as written.
type editNames struct{ old, new, all, write, read string }

func editNamesOf(ctx context.Context, a *args) editNames {
	return editNames{a.key("oldText"), a.key("newText"), a.key("replaceAll"), toolName(ctx, VerbWrite), toolName(ctx, VerbRead)}
}

// applyEdit replaces e.OldText in content. spans of earlier edits are
// shifted to stay on their text; the returned spans include this edit's.
func applyEdit(content string, e editSpec, spans []span, n editNames) (string, []span, error) {
	if e.OldText == "" {
		if content == "" {
			return e.NewText, append(spans, span{0, len(e.NewText)}), nil
		}
		return "", nil, fmt.Errorf("%s is empty; give the text to replace, or use %s to replace the whole file", n.old, n.write)
	}
	if e.OldText == e.NewText {
		return "", nil, fmt.Errorf("%s and %s are identical; nothing would change", n.old, n.new)
	}
	var idx []int
	for off := 0; ; {
		i := strings.Index(content[off:], e.OldText)
		if i < 0 {
			break
		}
		idx = append(idx, off+i)
		off += i + len(e.OldText)
	}
	switch {
	case len(idx) == 0:
		return "", nil, errors.New(notFound(content, e.OldText, n))
	case len(idx) > 1 && !e.ReplaceAll:
		lines := make([]string, len(idx))
		for i, at := range idx {
			lines[i] = fmt.Sprint(1 + strings.Count(content[:at], "\n"))
		}
		return "", nil, fmt.Errorf("%s occurs %d times (lines %s); include more surrounding lines to make it unique, or pass %s: true", n.old, len(idx), strings.Join(lines, ", "), n.all)
	}
	var b strings.Builder
	var mine []span
	prev := 0
	delta := len(e.NewText) - len(e.OldText)
	for _, at := range idx {
		b.WriteString(content[prev:at])
		start := b.Len()
		b.WriteString(e.NewText)
		mine = append(mine, span{start, b.Len()})
		prev = at + len(e.OldText)
	}
	b.WriteString(content[prev:])
	// Shift the spans of earlier edits past each replacement.
	for i := range spans {
		shift := 0
		for _, at := range idx {
			if at < spans[i].start {
				shift += delta
			}
		}
		spans[i].start = max(0, spans[i].start+shift)
		spans[i].end = max(spans[i].start, spans[i].end+shift)
	}
	return b.String(), append(spans, mine...), nil
}

// notFound explains a missing oldText by quoting the most similar line.
func notFound(content, old string, n editNames) string {
	first := strings.TrimSpace(strings.SplitN(old, "\n", 2)[0])
	if squash(content) != "" && strings.Contains(squash(content), squash(old)) {
		return fmt.Sprintf("%s not found exactly, but it matches if whitespace is ignored; copy the indentation and line breaks from the file (%s it first)", n.old, n.read)
	}
	best, bestLine, bestScore := "", 0, 0.0
	for i, line := range strings.Split(content, "\n") {
		if s := similarity(first, strings.TrimSpace(line)); s > bestScore {
			best, bestLine, bestScore = line, i+1, s
		}
	}
	if bestScore < 0.3 {
		return fmt.Sprintf("%s not found in the file; %s the file and copy the text exactly", n.old, n.read)
	}
	if len(best) > 200 {
		best = best[:200] + "…"
	}
	return fmt.Sprintf("%s not found; the most similar line is %d: %q", n.old, bestLine, best)
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// similarity is the Dice coefficient of character bigrams, cheap and good
// enough to point at the line a model misremembered.
func similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	if len(a) < 2 || len(b) < 2 {
		return 0
	}
	grams := map[string]int{}
	for i := 0; i+1 < len(a); i++ {
		grams[a[i:i+2]]++
	}
	hits := 0
	for i := 0; i+1 < len(b); i++ {
		if grams[b[i:i+2]] > 0 {
			grams[b[i:i+2]]--
			hits++
		}
	}
	return 2 * float64(hits) / float64(len(a)+len(b)-2)
}

// snippet renders the lines around each span, cat -n style, with "…"
// between groups that are not adjacent.
func snippet(content string, spans []span) string {
	if len(spans) == 0 {
		return ""
	}
	lines := strings.Split(content, "\n")
	if strings.HasSuffix(content, "\n") {
		lines = lines[:len(lines)-1]
	}
	type rng struct{ lo, hi int } // 0-based inclusive line indexes
	var rs []rng
	for _, s := range spans {
		lo := strings.Count(content[:min(s.start, len(content))], "\n")
		hi := lo + strings.Count(content[min(s.start, len(content)):min(s.end, len(content))], "\n")
		rs = append(rs, rng{max(0, lo-snippetMargin), min(len(lines)-1, hi+snippetMargin)})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	var merged []rng
	for _, r := range rs {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	var b strings.Builder
	for i, r := range merged {
		if i > 0 {
			b.WriteString("     …\n")
		}
		for l := r.lo; l <= r.hi && l < len(lines); l++ {
			fmt.Fprintf(&b, "%6d\t%s\n", l+1, truncateLine(lines[l]))
		}
	}
	return b.String()
}

func (w *Workspace) delete(ctx context.Context, a *args) (string, error) {
	p, err := a.path(a.tool, "path", true, "")
	if err != nil {
		return "", err
	}
	recursive, err := a.boolean("recursive", false)
	if err != nil {
		return "", err
	}
	// The final component is not followed: deleting a symlink removes
	// the link, as rm does.
	real, attr, _, err := w.resolve(ctx, p.name, false, false)
	if err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	if m, ok := w.mountAt(real); ok || real == "." {
		what := "the workspace root"
		if ok {
			what = fmt.Sprintf("the mount point of %s (%s)", m.Prefix, m.Source)
		}
		return "", fmt.Errorf("%s %s: it is %s and cannot be deleted; delete entries inside it instead", a.tool, p.abs(), what)
	}
	if err := w.checkWritable(a.tool, wpath{given: p.given, name: real}); err != nil {
		return "", err
	}
	if w.dryRun {
		return w.dryDelete(ctx, p, real, attr, recursive)
	}
	if !attr.IsDir() {
		if err := mounts.Unlink(ctx, w.fsys, real); err != nil {
			return "", w.explain(ctx, a.tool, p, err)
		}
		return "deleted " + p.abs(), nil
	}
	if !recursive {
		if err := mounts.Rmdir(ctx, w.fsys, real); err != nil {
			return "", w.explain(ctx, a.tool, p, err)
		}
		return "deleted empty directory " + p.abs(), nil
	}
	n := 0
	_ = w.walk(ctx, real, walkOpts{}, func(string, string, mounts.DirEntry) error { n++; return nil })
	if err := mounts.RemoveAll(ctx, w.fsys, real); err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	return fmt.Sprintf("deleted %s and %d %s below it", p.abs(), n, plural(n, "entry", "entries")), nil
}

// dryDelete says what delete would remove, after the same checks.
func (w *Workspace) dryDelete(ctx context.Context, p wpath, real string, attr mounts.Attr, recursive bool) (string, error) {
	if !attr.IsDir() {
		return fmt.Sprintf("would delete %s (%s, %d bytes) %s", p.abs(), kindOf(attr.Mode), attr.Size, dryRunNote), nil
	}
	ents, err := w.fsys.ReadDir(ctx, real)
	if err != nil {
		return "", w.explain(ctx, "delete", p, err)
	}
	if len(ents) == 0 {
		return fmt.Sprintf("would delete empty directory %s %s", p.abs(), dryRunNote), nil
	}
	if !recursive {
		return "", w.explain(ctx, "delete", p, mounts.ErrNotEmpty)
	}
	n := 0
	_ = w.walk(ctx, real, walkOpts{}, func(string, string, mounts.DirEntry) error { n++; return nil })
	return fmt.Sprintf("would delete %s and %d %s below it %s", p.abs(), n, plural(n, "entry", "entries"), dryRunNote), nil
}
