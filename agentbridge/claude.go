package agentbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Claude Code's tools (dialect_claude.go), answered as the current Claude
// Code answers them. What each result looks like is that release's
// mapToolResultToToolResultBlockParam of the tool.

// claudeGlobLimit is how many paths Claude Code's Glob returns.
const claudeGlobLimit = 100

// claudeRead is Claude Code's Read: images, PDFs and notebooks by their
// extension, text numbered "N<tab>line".
func (w *Workspace) claudeRead(ctx context.Context, a *args) (string, error) {
	p, err := a.path(a.tool, "path", true, "")
	if err != nil {
		return "", err
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
	data, err := readInto(ctx, w.fsys, real, nil)
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

// claudeGlob is Claude Code's Glob: ripgrep --files --sort=modified, so
// oldest first, at most 100, paths relative to the current directory
// when they lie below it.
func (w *Workspace) claudeGlob(ctx context.Context, a *args) (string, error) {
	g, err := w.globSearch(ctx, a)
	if err != nil {
		return "", err
	}
	if len(g.hits) == 0 {
		return "No files found", nil
	}
	hits := g.hits
	sort.SliceStable(hits, func(i, j int) bool {
		if !hits[i].mtime.Equal(hits[j].mtime) {
			return hits[i].mtime.Before(hits[j].mtime)
		}
		return hits[i].path < hits[j].path
	})
	total := len(hits)
	if total > claudeGlobLimit {
		hits = hits[:claudeGlobLimit]
	}
	lines := make([]string, 0, len(hits)+1)
	for _, h := range hits {
		lines = append(lines, relTo(a, h.path))
	}
	if total > claudeGlobLimit {
		lines = append(lines, fmt.Sprintf("(Showing %d of %d matching files; %d more are not listed. Narrow the pattern or path to see the rest.)",
			len(hits), total, total-len(hits)))
	}
	return strings.Join(lines, "\n"), nil
}

// relTo is a workspace path as Claude Code shows it: relative to the
// session's directory when below it, else absolute.
func relTo(a *args, p string) string {
	dir := mounts.PathOf(a.base())
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir)+1:]
	}
	return p
}

// claudeGrep is Claude Code's Grep: files newest first under "Found N
// files", counts with a total, content lines as ripgrep prints them, and
// the pagination applied said at the end.
func (w *Workspace) claudeGrep(ctx context.Context, a *args) (string, error) {
	g, err := w.grepSearch(ctx, a, "files")
	if err != nil {
		return "", err
	}
	page := func(n int) (from, to int, applied bool) {
		from = min(g.skip, n)
		to = n
		if g.head > 0 && n-from > g.head {
			to, applied = from+g.head, true
		}
		return from, to, applied
	}
	pagination := func(applied bool) string {
		var ps []string
		if applied {
			ps = append(ps, fmt.Sprintf("limit: %d", g.head))
		}
		if g.skip > 0 {
			ps = append(ps, fmt.Sprintf("offset: %d", g.skip))
		}
		return strings.Join(ps, ", ")
	}
	switch g.q.mode {
	case "content":
		var lines []string
		for _, h := range g.hits {
			if (g.q.before > 0 || g.q.after > 0) && len(lines) > 0 {
				lines = append(lines, "--")
			}
			rel := relTo(a, h.shown)
			for _, l := range h.r.lines {
				lines = append(lines, rel+strings.TrimPrefix(l, h.shown))
			}
		}
		from, to, applied := page(len(lines))
		out := strings.Join(lines[from:to], "\n")
		if out == "" {
			out = "No matches found"
		}
		if pg := pagination(applied); pg != "" {
			out += "\n[Showing results with pagination = " + pg + "]"
		}
		return out, nil
	case "count":
		from, to, applied := page(len(g.hits))
		var lines []string
		total := 0
		for _, h := range g.hits[from:to] {
			lines = append(lines, relTo(a, h.shown)+":"+strconv.Itoa(h.r.count))
			total += h.r.count
		}
		out := strings.Join(lines, "\n")
		if out == "" {
			out = "No matches found"
		}
		files := to - from
		out += fmt.Sprintf("\nFound %d total %s across %d %s.", total, plural(total, "occurrence", "occurrences"), files, plural(files, "file", "files"))
		if pg := pagination(applied); pg != "" {
			out += " with pagination = " + pg
		}
		return out, nil
	}
	hits := g.hits
	mtimes := make(map[string]time.Time, len(hits))
	for _, h := range hits {
		if at, err := w.fsys.Stat(ctx, h.name); err == nil {
			mtimes[h.name] = at.Mtime
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		mi, mj := mtimes[hits[i].name], mtimes[hits[j].name]
		if !mi.Equal(mj) {
			return mi.After(mj)
		}
		return hits[i].shown < hits[j].shown
	})
	from, to, applied := page(len(hits))
	if to == from {
		return "No files found", nil
	}
	lines := make([]string, 0, to-from)
	for _, h := range hits[from:to] {
		lines = append(lines, relTo(a, h.shown))
	}
	head := fmt.Sprintf("Found %d %s", len(lines), plural(len(lines), "file", "files"))
	if pg := pagination(applied); pg != "" {
		head += " " + pg
	}
	return head + "\n" + strings.Join(lines, "\n"), nil
}

// Claude Code's Bash bounds.
const (
	claudeBashMaxResult = 30000 // maxResultSizeChars
	claudeBashErrorCap  = 10000 // an error's text, head and tail kept
)

// claudeBash is Claude Code's Bash: stdout and stderr merged, leading
// blank lines and trailing space cut; a non-zero exit (but grep's 1, diff's
// 1 and their kin, which mean "no match" and "differ") is an error result
// "Exit code N" and the output. run_in_background starts the command as a
// task of the session and returns its id at once.
func (w *Workspace) claudeBash(ctx context.Context, a *args) (string, error) {
	command, err := a.str("command", true)
	if err != nil {
		return "", err
	}
	if _, err := a.str("description", false); err != nil {
		return "", err
	}
	unsandboxed, err := a.boolean("dangerouslyDisableSandbox", false)
	if err != nil {
		return "", err
	}
	if unsandboxed {
		return "", a.errf("argument %q cannot be honoured here: every command runs in the workspace namespace, with the network as the workspace was started with, and there is nothing outside it to reach; run it without", "dangerouslyDisableSandbox")
	}
	background, err := a.boolean("background", false)
	if err != nil {
		return "", err
	}
	maxMs := int(w.limits.MaxShellTimeout.Milliseconds())
	timeout, err := a.integer("timeout", min(shellDefaultTimeout, maxMs), 1, maxMs)
	if err != nil {
		return "", err
	}
	if background && (a.sess == nil || !a.sess.keeps()) {
		return "", a.errf("argument %q needs a session that outlives this call (an MCP session or a JSON-RPC connection keeps one; a single `vfsmount call` does not); run the command in the foreground", a.key("background"))
	}
	run, err := w.prepareShell(ctx, a, "cwd")
	if err != nil {
		return "", err
	}
	if w.dryRun {
		return run.dryRun(command), nil
	}
	out := &capWriter{}
	p, err := w.startShell(run, command, out, nil)
	if err != nil {
		return "", err
	}
	if background {
		p.log = out
		id, pruned, err := a.sess.add(p)
		if err != nil {
			p.stop("the session keeps no processes")
			return "", a.errf("%v", err)
		}
		w.bound(p)
		msg := fmt.Sprintf("Command running in background with ID: %d. Read its output with TaskOutput (task_id %q; block: false answers at once) and stop it with TaskStop.", id, strconv.Itoa(id))
		if pruned != nil {
			pruned.stop("the session had too many processes")
			msg += fmt.Sprintf("\nTask %d (%s) was stopped: a session keeps at most %d.", pruned.id, clip(pruned.cmdline), w.maxSessionProcs)
		}
		return msg, nil
	}
	res := w.finishShell(ctx, run, p, time.Duration(timeout)*time.Millisecond)
	text := strings.TrimRight(leadingBlankLines(out.String()), " \t\r\n")
	if res.dirNote != "" {
		text = strings.TrimPrefix(text+"\n("+res.dirNote+")", "\n")
	}
	if res.killed != "" {
		return "", &toolError{text: capMiddle(strings.TrimSpace("Command "+res.killed+"; it was stopped\n"+text), claudeBashErrorCap)}
	}
	if p.exitCode != 0 && !benignExit(command, p.exitCode) {
		code := exitOf(p)
		return "", &toolError{text: capMiddle(strings.TrimSpace(fmt.Sprintf("Exit code %d\n%s", code, text)), claudeBashErrorCap)}
	}
	return capMiddle(text, claudeBashMaxResult), nil
}

// leadingBlankLines drops the blank lines output starts with.
func leadingBlankLines(s string) string {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			return s
		}
		s = s[i+1:]
	}
}

// capMiddle keeps the head and the tail of s within n characters, as
// Claude Code cuts a long error.
func capMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	half := n / 2
	head, tail := s[:half], s[len(s)-half:]
	return fmt.Sprintf("%s\n... [%d characters truncated] ...\n%s", head, len(s)-2*half, tail)
}

// benignExit reports whether code is, for the last command of the line,
// an answer rather than a failure, as Claude Code reads it: grep, rg and
// their kin exit 1 for "no match", diff (and git diff, git grep) 1 for
// "differ".
func benignExit(command string, code int) bool {
	if code != 1 {
		return false
	}
	last := command
	for _, sep := range []string{"|", "&&", "||", ";", "\n"} {
		if i := strings.LastIndex(last, sep); i >= 0 {
			last = last[i+len(sep):]
		}
	}
	f := strings.Fields(last)
	if len(f) == 0 {
		return false
	}
	switch path.Base(f[0]) {
	case "grep", "rg", "egrep", "fgrep", "diff":
		return true
	case "git":
		for _, w := range f[1:] {
			if strings.HasPrefix(w, "-") {
				continue
			}
			return w == "diff" || w == "grep"
		}
	}
	return false
}

// claudeTask is the background task id names, or the error Claude Code
// gives for an id it does not know.
func claudeTask(a *args, id string) (*process, error) {
	n, err := strconv.Atoi(strings.TrimSpace(id))
	if err == nil && a.sess != nil {
		if p, ok := a.sess.proc(n); ok && p.log != nil {
			return p, nil
		}
	}
	msg := "No task found with ID: " + id
	if a.sess != nil {
		var ids []string
		for _, n := range a.sess.running() {
			if p, ok := a.sess.proc(n); ok && p.log != nil {
				ids = append(ids, strconv.Itoa(n))
			}
		}
		if len(ids) > 0 {
			msg += " (this session's tasks: " + strings.Join(ids, ", ") + ")"
		} else {
			msg += " (this session has no background tasks; start one with Bash and run_in_background: true)"
		}
	}
	return nil, errors.New(msg)
}

// taskStatus is a background task's status in Claude Code's words.
func taskStatus(p *process) string {
	switch {
	case !p.exited():
		return "running"
	case p.whyKilled() != "":
		return "killed"
	case p.exitCode == 0:
		return "completed"
	}
	return "failed"
}

// claudeTaskOutput is Claude Code's TaskOutput: the task's status and all
// it printed so far (head and tail kept past 30000 bytes), waiting for it
// to end unless block is false.
func (w *Workspace) claudeTaskOutput(ctx context.Context, a *args) (string, error) {
	id, err := a.str("task_id", true)
	if err != nil {
		return "", err
	}
	block, err := a.boolean("block", true)
	if err != nil {
		return "", err
	}
	timeout, err := a.integer("timeout", 30000, 0, 600000)
	if err != nil {
		return "", err
	}
	p, err := claudeTask(a, id)
	if err != nil {
		return "", err
	}
	p.touch()
	retrieval := "success"
	if block {
		if !p.wait(ctx, time.Duration(timeout)*time.Millisecond) {
			retrieval = "timeout"
		}
	} else if !p.exited() {
		retrieval = "not_ready"
	}
	lines := []string{
		"<retrieval_status>" + retrieval + "</retrieval_status>",
		"<task_id>" + id + "</task_id>",
		"<task_type>local_bash</task_type>",
		"<status>" + taskStatus(p) + "</status>",
	}
	if p.exited() {
		lines = append(lines, fmt.Sprintf("<exit_code>%d</exit_code>", exitOf(p)))
	}
	if out := p.log.String(); strings.TrimSpace(out) != "" {
		lines = append(lines, "<output>\n"+strings.TrimRight(out, " \t\r\n")+"\n</output>")
	}
	if why := p.whyKilled(); why != "" {
		lines = append(lines, "<error>stopped: "+why+"</error>")
	}
	return strings.Join(lines, "\n"), nil
}

// claudeTaskStop is Claude Code's TaskStop, answered with the JSON it
// answers with.
func (w *Workspace) claudeTaskStop(ctx context.Context, a *args) (string, error) {
	id, err := a.str("task_id", false)
	if err != nil {
		return "", err
	}
	if id == "" {
		if id, err = a.str("shell_id", false); err != nil {
			return "", err
		}
	}
	if id == "" {
		//lint:ignore ST1005 Claude Code's own words, which the model knows; shell_test.go holds them.
		return "", errors.New("Missing required parameter: task_id")
	}
	p, err := claudeTask(a, id)
	if err != nil {
		return "", err
	}
	if p.exited() {
		//lint:ignore ST1005 Claude Code's own words, which the model knows; shell_test.go holds them.
		return "", fmt.Errorf("Task %s is not running (status: %s)", id, taskStatus(p))
	}
	if w.dryRun {
		return fmt.Sprintf("would stop task %s (%s) (dry run: nothing was stopped)", id, p.cmdline), nil
	}
	p.stop("stopped with TaskStop")
	b, err := json.Marshal(struct {
		Message  string `json:"message"`
		TaskID   string `json:"task_id"`
		TaskType string `json:"task_type"`
		Command  string `json:"command"`
	}{fmt.Sprintf("Successfully stopped task: %s (%s)", id, p.cmdline), id, "local_bash", p.cmdline})
	if err != nil {
		return "", err
	}
	return string(b), nil
}
