package agentbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// Claude Code's Read (dialect_claude.go), answered as its current release
// answers it: text numbered "N<tab>line", and images, PDF pages and
// notebooks as content parts.

// claudeRead is Claude Code's Read: images, PDFs and notebooks by their
// extension, text numbered "N<tab>line".
func (w *Workspace) claudeRead(ctx context.Context, a *args) (string, error) {
	p, err := a.path(a.tool, "path", true, "")
	if err != nil {
		return "", err
	}
	if out, ok, err := taskOutputFile(a, p.abs()); ok {
		if err != nil {
			return "", err
		}
		return numberLines(out), nil
	}
	ext := strings.ToLower(path.Ext(p.name))
	if a.present("pages") && ext != ".pdf" {
		return "", a.errf("argument %q applies to PDF files only; %s is not one", "pages", p.abs())
	}
	switch ext {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return w.readImage(ctx, a, p)
	case ".pdf":
		return w.readPDF(ctx, a, p)
	case ".ipynb":
		return w.readNotebook(ctx, a, p)
	}
	allowLarge, err := a.boolean("allowLarge", false)
	if err != nil {
		return "", err
	}
	delete(a.m, "allowLarge")
	if !a.present("limit") {
		// Claude Code's Read has no line cut: without a limit it reads
		// the whole file, and refuses one over its size limit unless
		// allow_large says to read what fits.
		if _, attr, _, err := w.resolve(ctx, p.name, true, false); err == nil && attr.Mode.IsRegular() &&
			attr.Size > int64(w.limits.MaxReadBytes) && !allowLarge {
			//lint:ignore ST1005 Claude Code's own words (its FileTooLargeError), which the model knows.
			return "", fmt.Errorf("File content (%s) exceeds maximum allowed size (%s). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file. To read it anyway, up to what still fits in your context, call Read again with allow_large: true \u2014 only if you genuinely need all of it or the user asked for the whole file.",
				humanSize(int(attr.Size)), humanSize(w.limits.MaxReadBytes))
		}
		a.set("limit", math.MaxInt32)
	}
	text, err := w.read(ctx, a)
	if err != nil {
		return "", err
	}
	if text == fmt.Sprintf("(%s is empty)", p.abs()) {
		return "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>", nil
	}
	// The canonical read pads line numbers to six columns (cat -n);
	// Claude Code writes them bare.
	var b strings.Builder
	b.Grow(len(text))
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i+1], text[i+1:]
		} else {
			text = ""
		}
		b.WriteString(strings.TrimLeft(line, " "))
	}
	return b.String(), nil
}

// readWhole reads the file p names, up to the largest file a tool writes.
func (w *Workspace) readWhole(ctx context.Context, a *args, p wpath) ([]byte, error) {
	real, attr, _, err := w.resolve(ctx, p.name, true, false)
	if err != nil {
		return nil, w.explain(ctx, a.tool, p, err)
	}
	if attr.IsDir() {
		return nil, fmt.Errorf("%s %s: is a directory; %s", a.tool, p.abs(), listHint(ctx))
	}
	if !attr.Mode.IsRegular() {
		return nil, notRegular(a.tool, p, attr.Mode)
	}
	if attr.Size > w.limits.MaxFileBytes {
		return nil, fmt.Errorf("%s %s: %d bytes is more than the %d a read returns whole", a.tool, p.abs(), attr.Size, w.limits.MaxFileBytes)
	}
	data, err := readInto(ctx, w.fsys, real, mounts.OpenOptions{}, nil, false)
	if err != nil {
		return nil, w.explain(ctx, a.tool, p, err)
	}
	return data, nil
}

var imageTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}

// readImage returns the image as MCP image content, its type from its
// bytes (a .png that is a JPEG is sent as the JPEG it is).
func (w *Workspace) readImage(ctx context.Context, a *args, p wpath) (string, error) {
	data, err := w.readWhole(ctx, a, p)
	if err != nil {
		return "", err
	}
	mime := http.DetectContentType(data)
	if !strings.HasPrefix(mime, "image/") {
		return "", fmt.Errorf("%s %s: not an image (%s), though its name says %s", a.tool, p.abs(), mime, imageTypes[strings.ToLower(path.Ext(p.name))])
	}
	a.content = []Content{{Type: "image", Data: data, MIMEType: mime}}
	return fmt.Sprintf("Read image %s (%s, %s)", p.abs(), humanSize(len(data)), mime), nil
}

// humanSize is Claude Code's size: bytes, KB or MB with one decimal.
func humanSize(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1024), ".0") + "KB"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1024*1024)), ".0") + "MB"
}

// notebook is the part of an .ipynb file Read shows.
type notebook struct {
	Cells []struct {
		ID       string          `json:"id"`
		CellType string          `json:"cell_type"`
		Source   json.RawMessage `json:"source"`
		Outputs  []struct {
			OutputType string                     `json:"output_type"`
			Text       json.RawMessage            `json:"text"`
			Data       map[string]json.RawMessage `json:"data"`
			Ename      string                     `json:"ename"`
			Evalue     string                     `json:"evalue"`
			Traceback  []string                   `json:"traceback"`
		} `json:"outputs"`
	} `json:"cells"`
	Metadata struct {
		LanguageInfo struct {
			Name string `json:"name"`
		} `json:"language_info"`
	} `json:"metadata"`
}

// multiline is a notebook string: one string or a list of lines.
func multiline(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, "")
	}
	return ""
}

// readNotebook renders the cells as Claude Code does: each cell as
// <cell id="…">source</cell id="…"> (markdown cells say their type, code
// cells their language unless it is python), each output's text after
// it, images as image content; neighbouring texts joined by a newline.
func (w *Workspace) readNotebook(ctx context.Context, a *args, p wpath) (string, error) {
	data, err := w.readWhole(ctx, a, p)
	if err != nil {
		return "", err
	}
	var nb notebook
	if err := json.Unmarshal(data, &nb); err != nil {
		return "", fmt.Errorf("%s %s: Notebook file is not valid JSON (it may be truncated, corrupted, or still being written): %v", a.tool, p.abs(), jsonErr(err))
	}
	lang := nb.Metadata.LanguageInfo.Name
	if lang == "" {
		lang = "python"
	}
	var parts []Content
	addText := func(s string) {
		if n := len(parts); n > 0 && parts[n-1].Type == "text" {
			parts[n-1].Text += "\n" + s
			return
		}
		parts = append(parts, Content{Type: "text", Text: s})
	}
	for i, c := range nb.Cells {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("cell-%d", i)
		}
		var tags string
		if c.CellType != "code" {
			tags += "<cell_type>" + c.CellType + "</cell_type>"
		} else if lang != "python" {
			tags += "<language>" + lang + "</language>"
		}
		addText(fmt.Sprintf("<cell id=%q>%s%s</cell id=%q>", id, tags, multiline(c.Source), id))
		if c.CellType != "code" {
			continue
		}
		for _, o := range c.Outputs {
			var text string
			switch o.OutputType {
			case "stream":
				text = multiline(o.Text)
			case "execute_result", "display_data":
				text = multiline(o.Data["text/plain"])
			case "error":
				text = o.Ename + ": " + o.Evalue + "\n" + strings.Join(o.Traceback, "\n")
			}
			if text != "" {
				addText("\n" + text)
			}
			for _, mime := range []string{"image/png", "image/jpeg"} {
				var b64 string
				if raw, ok := o.Data[mime]; ok && json.Unmarshal(raw, &b64) == nil {
					var img []byte
					if err := json.Unmarshal([]byte(strconv.Quote(strings.ReplaceAll(b64, "\n", ""))), &img); err == nil {
						parts = append(parts, Content{Type: "image", Data: img, MIMEType: mime})
					}
					break
				}
			}
		}
	}
	if len(parts) == 0 {
		return "No cells found in notebook", nil
	}
	var texts []string
	images := false
	for _, c := range parts {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		} else {
			images = true
		}
	}
	if images {
		a.content = parts
	}
	return strings.Join(texts, "\n"), nil
}

// claudePDFMaxPages is the most pages one Read of a PDF returns (Claude
// Code: "Maximum 20 pages per request").
const claudePDFMaxPages = 20

var pdfPagesRE = regexp.MustCompile(`^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$`)

// readPDF returns pages of a PDF as Claude Code's "parts" result: one PNG
// per page, rendered by poppler's pdftoppm (the host's, run on a private
// copy of the file: never a binary or a file on the kernel face), and the
// line Claude Code says about them. Without pages it reads from the first
// page, at most 20.
func (w *Workspace) readPDF(ctx context.Context, a *args, p wpath) (string, error) {
	first, last := 1, claudePDFMaxPages
	if a.present("pages") {
		spec, err := a.str("pages", true)
		if err != nil {
			return "", err
		}
		m := pdfPagesRE.FindStringSubmatch(spec)
		if m == nil {
			return "", a.errf("argument %q must be a page or a range such as \"3\" or \"1-5\", got %q", "pages", spec)
		}
		first, _ = strconv.Atoi(m[1])
		last = first
		if m[2] != "" {
			last, _ = strconv.Atoi(m[2])
		}
		if first < 1 || last < first {
			return "", a.errf("argument %q: %q is not a range of pages (they count from 1)", "pages", spec)
		}
		if last-first+1 > claudePDFMaxPages {
			return "", a.errf("argument %q: %q is %d pages; read at most %d per request", "pages", spec, last-first+1, claudePDFMaxPages)
		}
	}
	tool, err := exec.LookPath("pdftoppm")
	if err != nil {
		return "", fmt.Errorf("%s %s: reading PDF pages needs pdftoppm (poppler-utils) on the host, which is not installed; extract text with pdftotext in the shell if it has it", a.tool, p.abs())
	}
	data, err := w.readWhole(ctx, a, p)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(string(data[:min(len(data), 5)]), "%PDF-") {
		return "", fmt.Errorf("%s %s: not a PDF file (no %%PDF- header)", a.tool, p.abs())
	}
	dir, err := os.MkdirTemp("", "vfsmount-pdf-")
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", a.tool, p.abs(), err)
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return "", fmt.Errorf("%s %s: %v", a.tool, p.abs(), err)
	}
	cmd := exec.CommandContext(ctx, tool, "-png", "-r", "100", "-f", strconv.Itoa(first), "-l", strconv.Itoa(last), in, filepath.Join(dir, "page"))
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("%s %s: PDF extraction failed: %s", a.tool, p.abs(), msg)
	}
	pages, err := filepath.Glob(filepath.Join(dir, "page*.png"))
	if err != nil {
		return "", err
	}
	if len(pages) == 0 {
		return "", fmt.Errorf("%s %s: the PDF has no page %d", a.tool, p.abs(), first)
	}
	sort.Strings(pages) // pdftoppm pads the numbers to one width
	var parts []Content
	for _, f := range pages {
		img, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		parts = append(parts, Content{Type: "image", Data: img, MIMEType: "image/png"})
	}
	text := fmt.Sprintf("PDF pages extracted: %d page(s) from %s (%s)", len(parts), p.abs(), humanSize(len(data)))
	a.content = append([]Content{{Type: "text", Text: text}}, parts...)
	return text, nil
}

// numberLines numbers text as Read shows a file: "N<tab>line".
func numberLines(text string) string {
	if strings.TrimSpace(text) == "" {
		return "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
	}
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fmt.Fprintf(&b, "%d\t%s\n", i+1, l)
	}
	return b.String()
}
