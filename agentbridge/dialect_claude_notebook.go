package agentbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Claude Code's NotebookEdit, as 2.1.332 runs it (its NotebookEditTool in
// the linux-x64 binary's JavaScript): one cell of an .ipynb file replaced,
// inserted after another (or first) or deleted, found by its id or by
// "cell-N". The notebook is written back as JSON.stringify(nb, null, 1)
// writes it: keys in their order, one space of indent, a byte-order mark
// and a final newline kept when the file had them, CRLF kept. A replaced
// code cell loses its outputs and execution count; a markdown or raw cell
// has neither.
//
// It is an edit: the path rules see it read the file and then write it.
// What Claude Code checks beside (that the model read the file first, and
// since) is the harness's bookkeeping of its own context; the workspace's
// other edit tools do not ask it either.

// notebookInvalid is Claude Code's word for a file that is JSON but no
// notebook.
const notebookInvalid = `Notebook file is not a valid Jupyter notebook (top-level "cells" must be an array of cell objects, each with a string or string-array "source").`

var cellIndexRE = regexp.MustCompile(`^cell-(\d+)$`)

// claudeSays is an error in Claude Code's own words, capitals and full
// stops included: the model knows them.
func claudeSays(msg string) error { return errors.New(msg) }

func (w *Workspace) claudeNotebookEdit(ctx context.Context, a *args) (string, error) {
	p, err := a.path(a.tool, "path", true, "")
	if err != nil {
		return "", err
	}
	if !a.present("new_source") {
		return "", a.missing("new_source")
	}
	src, err := a.str("new_source", false) // "" is a source too
	if err != nil {
		return "", err
	}
	cellID, err := a.str("cell_id", false)
	if err != nil {
		return "", err
	}
	cellType, err := a.str("cell_type", false)
	if err != nil {
		return "", err
	}
	if cellType != "" && cellType != "code" && cellType != "markdown" {
		return "", a.errf("argument %q must be code or markdown, got %q", a.key("cell_type"), cellType)
	}
	mode, err := a.str("edit_mode", false)
	if err != nil {
		return "", err
	}
	switch mode {
	case "":
		mode = "replace"
	case "replace", "insert", "delete":
	default:
		return "", a.errf("argument %q must be replace, insert or delete, got %q", a.key("edit_mode"), mode)
	}
	if path.Ext(p.name) != ".ipynb" {
		return "", claudeSays("File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.")
	}
	if mode == "insert" && cellType == "" {
		return "", claudeSays("Cell type is required when using edit_mode=insert.")
	}
	if err := w.checkWritable(a.tool, p); err != nil {
		return "", err
	}
	real, attr, exists, err := w.resolve(ctx, p.name, true, true)
	if err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	if !exists {
		return "", claudeSays("Notebook file does not exist.")
	}
	if attr.IsDir() {
		return "", fmt.Errorf("%s %s: is a directory; give a file path", a.tool, p.abs())
	}
	before, err := w.readText(ctx, a.tool, p, real)
	if err != nil {
		return "", err
	}
	nb, err := parseOrdered(strings.TrimPrefix(before, "\uFEFF"))
	if err != nil {
		return "", claudeSays("Notebook is not valid JSON.")
	}
	root, _ := nb.(*orderedObject)
	cells, ok := notebookCells(root)
	if !ok {
		return "", claudeSays(notebookInvalid)
	}
	at, err := notebookCell(cells, cellID, mode)
	if err != nil {
		return "", err
	}

	id := cellID
	switch mode {
	case "delete":
		cells = append(cells[:at:at], cells[at+1:]...)
	case "insert":
		id = ""
		if f, ok := root.get("nbformat").(json.Number); ok {
			minor, _ := root.get("nbformat_minor").(json.Number)
			if n, _ := f.Int64(); n > 4 || n == 4 && minorAtLeast(minor, 5) {
				var b [4]byte
				_, _ = rand.Read(b[:])
				id = hex.EncodeToString(b[:])
			}
		}
		c := &orderedObject{}
		c.set("cell_type", cellType)
		if id != "" {
			c.set("id", id)
		}
		c.set("source", src)
		c.set("metadata", &orderedObject{})
		if cellType == "code" {
			c.set("execution_count", nil)
			c.set("outputs", []any{})
		}
		cells = append(cells[:at:at], append([]any{c}, cells[at:]...)...)
	default:
		c := cells[at].(*orderedObject)
		if cellType == "code" && c.get("cell_type") != "code" && hasAttachments(c) {
			return "", claudeSays("The notebook was not changed: this cell has attachments (such as pasted images), and a code cell cannot hold attachments. To add code after this cell, use edit_mode=insert with cell_type=code and the same cell_id. To edit this cell's text, leave out cell_type and keep any `attachment:` links in new_source. Deleting this cell loses the attachments, so do that only if the user agrees.")
		}
		c.set("source", src)
		if cellType != "" {
			c.set("cell_type", cellType)
		}
		switch c.get("cell_type") {
		case "code":
			c.set("execution_count", nil)
			c.set("outputs", []any{})
			if !hasAttachments(c) {
				c.del("attachments")
			}
		case "markdown", "raw":
			c.del("execution_count")
			c.del("outputs")
		}
	}
	root.set("cells", cells)

	var b strings.Builder
	if strings.HasPrefix(before, "\uFEFF") {
		b.WriteString("\uFEFF")
	}
	writeJS(&b, root, "")
	if strings.HasSuffix(before, "\n") {
		b.WriteString("\n")
	}
	after := b.String()
	if crlf(before) {
		after = strings.ReplaceAll(after, "\n", "\r\n")
	}
	if err := w.checkSize(a.tool, p.abs(), len(after)); err != nil {
		return "", err
	}
	if w.dryRun {
		return fmt.Sprintf("would edit %s %s\n%s", p.abs(), dryRunNote, unifiedDiff(p.abs(), p.abs(), before, after, true, true)), nil
	}
	if err := w.writeFile(ctx, real, []byte(after)); err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	switch mode {
	case "insert":
		if id != "" {
			return fmt.Sprintf("Inserted cell %s with %s", id, src), nil
		}
		return "Inserted a new cell with " + src, nil
	case "delete":
		return "Deleted cell " + cellID, nil
	}
	return fmt.Sprintf("Updated cell %s with %s", cellID, src), nil
}

// notebookCells are the notebook's cells, when it is one: an object whose
// "cells" are objects each with a string or string-list "source".
func notebookCells(root *orderedObject) ([]any, bool) {
	if root == nil {
		return nil, false
	}
	cells, ok := root.get("cells").([]any)
	if !ok {
		return nil, false
	}
	for _, c := range cells {
		o, ok := c.(*orderedObject)
		if !ok {
			return nil, false
		}
		switch s := o.get("source").(type) {
		case string:
		case []any:
			for _, l := range s {
				if _, ok := l.(string); !ok {
					return nil, false
				}
			}
		default:
			return nil, false
		}
	}
	return cells, true
}

// notebookCell finds where the edit goes, as Claude Code does: the cell
// with id cellID, or "cell-N" the Nth; for an insert, the place after it
// (the start without an id).
func notebookCell(cells []any, cellID, mode string) (int, error) {
	insert := mode == "insert"
	if cellID == "" {
		if insert {
			return 0, nil
		}
		return 0, claudeSays("Cell ID must be specified when not inserting a new cell.")
	}
	at := -1
	for i, c := range cells {
		if c.(*orderedObject).get("id") == cellID {
			at = i
			break
		}
	}
	if at < 0 {
		m := cellIndexRE.FindStringSubmatch(cellID)
		if m == nil {
			return 0, claudeSays(`Cell with ID "` + cellID + `" not found in notebook.`)
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n >= len(cells) {
			return 0, claudeSays("Cell with index " + m[1] + " does not exist in notebook.")
		}
		at = n
	}
	if insert {
		return at + 1, nil
	}
	return at, nil
}

func minorAtLeast(n json.Number, min int64) bool {
	v, err := n.Int64()
	return err == nil && v >= min
}

// hasAttachments: the cell's attachments are an object with a key.
func hasAttachments(c *orderedObject) bool {
	a, ok := c.get("attachments").(*orderedObject)
	return ok && len(a.keys) > 0
}

// crlf says whether text's lines end in CRLF (its first line's does).
func crlf(text string) bool {
	i := strings.IndexByte(text, '\n')
	return i > 0 && text[i-1] == '\r'
}

// orderedObject is a JSON object that keeps its keys' order, as
// JavaScript's objects do: a key set again keeps its place, a new one goes
// last.
type orderedObject struct {
	keys []string
	vals map[string]any
}

func (o *orderedObject) get(k string) any {
	if o == nil {
		return nil
	}
	return o.vals[k]
}

func (o *orderedObject) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *orderedObject) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// parseOrdered decodes one JSON value: objects as *orderedObject (a key
// given twice keeps its first place and its last value, as JSON.parse
// does), numbers as json.Number.
func parseOrdered(text string) (any, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	v, err := decodeOrdered(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

func decodeOrdered(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &orderedObject{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(d)
				if err != nil {
					return nil, err
				}
				o.set(k.(string), v)
			}
			_, err := d.Token()
			return o, err
		case '[':
			list := []any{}
			for d.More() {
				v, err := decodeOrdered(d)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := d.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return t, nil
}

// writeJS writes v as JSON.stringify(v, null, 1) does, at indent ind.
func writeJS(b *strings.Builder, v any, ind string) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		b.WriteString(jsNumber(v))
	case string:
		writeJSString(b, v)
	case []any:
		if len(v) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range v {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(ind + " ")
			writeJS(b, e, ind+" ")
		}
		b.WriteString("\n" + ind + "]")
	case *orderedObject:
		if len(v.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(ind + " ")
			writeJSString(b, k)
			b.WriteString(": ")
			writeJS(b, v.vals[k], ind+" ")
		}
		b.WriteString("\n" + ind + "}")
	}
}

// jsNumber is a number as JavaScript prints it: the shortest form that
// reads back the same double, in exponent form only from 1e21 and below
// 1e-6.
func jsNumber(n json.Number) string {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "null" // JSON.stringify of Infinity
	}
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e21 || a < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		e, _ := strconv.Atoi(exp)
		sign := "+"
		if e < 0 {
			sign, e = "-", -e
		}
		return mant + "e" + sign + strconv.Itoa(e)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// writeJSString quotes s as JSON.stringify does: only the quote, the
// backslash and control characters escaped.
func writeJSString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}
