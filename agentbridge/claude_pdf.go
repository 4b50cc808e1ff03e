package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

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
