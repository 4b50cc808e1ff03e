package agentbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// claudeReference says what the claude dialect was matched to.
const claudeReference = "@anthropic-ai/claude-code 2.1.332 (npm): schemas from sdk-tools.d.ts, " +

	"tool texts and result shapes from the linux-x64 binary's embedded JavaScript"

// claudeTools are Claude Code's tools as its current release gives them to
// the model: Read, Write, Edit, NotebookEdit, Glob, Grep, Bash, and the
// background-task tool TaskStop, with sdk-tools.d.ts's argument names and
// types. LS and MultiEdit, which Claude Code no longer ships, are served
// when called but not listed, for models trained on them.
//
// Results are Claude Code's (below, and Read in dialect_claude_read.go):
// Read numbers lines "N<tab>text" and returns images, PDF pages and
// notebooks as content parts; Glob lists oldest first, at most 100,
// relative to the session's directory; Grep heads its lists "Found N
// files" and sorts them newest first; a failed Bash command is an error
// result that starts "Exit code N".
//
// What the workspace cannot do is refused by name: Bash's
// dangerouslyDisableSandbox (every command runs in the workspace
// namespace, there is no outside to reach).
func claudeTools() []*dialectTool {
	editRename := map[string]string{"file_path": "path", "old_string": "oldText", "new_string": "newText", "replace_all": "replaceAll"}
	// The aliases Claude Code coerces before it validates an Edit.
	editAliases := map[string]string{"path": "path", "old_str": "oldText", "new_str": "newText", "replace_name": "replaceAll"}
	for k, v := range editRename {
		editAliases[k] = v
	}
	cwdDefault := func(a *args) error {
		// Claude Code's Glob and Grep search the current directory
		// when no path is given.
		if !a.present("path") {
			a.set("path", ".")
		}
		return nil
	}
	return []*dialectTool{
		{name: "Read", verb: VerbRead, run: (*Workspace).claudeRead, rename: map[string]string{"file_path": "path", "path": "path", "length": "limit", "allow_large": "allowLarge"},
			desc: "Reads a file from the workspace. The file_path parameter must be an absolute path (a relative one resolves against the session's directory).\n" +
				"- By default, it reads the whole file; a file over the size limit is refused unless allow_large is set\n" +
				"- You can optionally specify a line offset and limit (especially handy for long files), but it's recommended to read the whole file by not providing these parameters\n" +
				"- Results are returned using cat -n format, with line numbers starting at 1\n" +
				"- This tool can read images (PNG, JPG, GIF, WebP): the image is returned as an image\n" +
				"- This tool can read PDF files (.pdf): pass pages (e.g. \"1-5\") for large PDFs; at most 20 pages per request, each returned as an image\n" +
				"- This tool can read Jupyter notebooks (.ipynb files) and returns all cells with their outputs\n" +
				"- This tool can only read files, not directories.",
			schema: schema(
				prop{"file_path", "string", "The absolute path to the file to read", true},
				prop{"offset", "number", "The line number to start reading from. Only provide if the file is too large to read at once", false},
				prop{"limit", "number", "The number of lines to read. Only provide if the file is too large to read at once.", false},
				prop{"pages", "string", "Page range for PDF files (e.g., \"1-5\", \"3\", \"10-20\"). Only applicable to PDF files. Maximum 20 pages per request.", false},
				prop{"allow_large", "boolean", "Set to true to read a text file, or a line range of one, that is over the usual size limits, up to what still fits in your context. Only use this when you genuinely need all of it or the user asked for the whole file; otherwise read it in parts with offset and limit, or search it.", false},
			)},
		{name: "Write", verb: VerbWrite, rename: map[string]string{"file_path": "path", "path": "path", "content": "fileText"},
			desc: "Writes a file to the workspace.\n" +
				"- This tool will overwrite the existing file if there is one at the provided path.\n" +
				"- Missing parent directories are created.",
			schema: schema(
				prop{"file_path", "string", "The absolute path to the file to write (must be absolute, not relative)", true},
				prop{"content", "string", "The content to write to the file", true},
			)},
		{name: "Edit", verb: VerbEdit, rename: editAliases, reshape: needKey("oldText"),
			desc: "Performs exact string replacements in files.\n" +
				"- The edit will FAIL if old_string is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use replace_all to change every instance of old_string.\n" +
				"- Use replace_all for replacing and renaming strings across the file.\n" +
				"- An empty old_string on a file that does not exist creates it with new_string.",
			schema: schema(
				prop{"file_path", "string", "The absolute path to the file to modify", true},
				prop{"old_string", "string", "The text to replace", true},
				prop{"new_string", "string", "The text to replace it with (must be different from old_string)", true},
				prop{"replace_all", "boolean", "Replace all occurrences of old_string (default false)", false},
			)},
		{name: "NotebookEdit", verb: VerbEdit, run: (*Workspace).claudeNotebookEdit, rename: map[string]string{"notebook_path": "path"},
			desc: "Replaces, inserts, or deletes a single cell in a Jupyter notebook (.ipynb file).\n\n" +
				"Usage:\n" +
				"- `notebook_path` must be an absolute path.\n" +
				"- `cell_id` is the `id` attribute shown in the Read tool's `<cell id=\"...\">` output. It is required for `replace` and `delete`.\n" +
				"- `edit_mode` defaults to `replace`. Use `insert` to add a new cell after the cell with the given `cell_id` (or at the beginning of the notebook if `cell_id` is omitted) \u2014 `cell_type` is required when inserting. Use `delete` to remove the cell.",
			schema: schema(
				prop{"notebook_path", "string", "The absolute path to the Jupyter notebook file to edit (must be absolute, not relative)", true},
				prop{"cell_id", "string", "The ID of the cell to edit. When inserting a new cell, the new cell will be inserted after the cell with this ID, or at the beginning if not specified.", false},
				prop{"new_source", "string", "The new source for the cell", true},
				prop{"cell_type", map[string]any{"type": "string", "enum": []string{"code", "markdown"}}, "The type of the cell (code or markdown). If not specified, it defaults to the current cell type. If using edit_mode=insert, this is required.", false},
				prop{"edit_mode", map[string]any{"type": "string", "enum": []string{"replace", "insert", "delete"}}, "The type of edit to make (replace, insert, delete). Defaults to replace.", false},
			)},
		{name: "Glob", verb: VerbGlob, run: (*Workspace).claudeGlob, reshape: cwdDefault,
			desc: "- Fast file pattern matching tool that works with any codebase size\n" +
				"- Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\"\n" +
				"- Returns matching file paths sorted by modification time (oldest first), at most 100\n" +
				"- Use this tool when you need to find files by name patterns",
			schema: schema(
				prop{"pattern", "string", "The glob pattern to match files against", true},
				prop{"path", "string", "The directory to search in. If not specified, the current working directory will be used. IMPORTANT: Omit this field to use the default directory. DO NOT enter \"undefined\" or \"null\" - simply omit it for the default behavior. Must be a valid directory path if provided.", false},
			)},
		{name: "Grep", verb: VerbGrep, run: (*Workspace).claudeGrep, reshape: claudeGrepArgs, rename: map[string]string{
			"output_mode": "outputMode", "-i": "caseInsensitive", "-n": "lineNumbers", "-A": "after", "-B": "before",
			"-C": "context", "head_limit": "headLimit", "-o": "onlyMatching",
			// The aliases Claude Code coerces before it validates a Grep
			// (its Grep input normaliser): file_path for path, -l and -c
			// for output modes, -r ignored.
			"file_path": "path", "-l": "-l", "-c": "-c", "-r": "-r",
		},
			desc: "A powerful search tool over the workspace's file contents, like ripgrep.\n" +
				"- Supports regex syntax (RE2: \"log.*Error\", \"function\\\\s+\\\\w+\")\n" +
				"- Filter files with glob parameter (e.g., \"*.js\", \"**/*.tsx\") or type parameter (e.g., \"js\", \"py\", \"rust\")\n" +
				"- Output modes: \"content\" shows matching lines, \"files_with_matches\" shows only file paths (default, newest first), \"count\" shows match counts\n" +
				"- Multiline matching: by default patterns match within single lines only. For cross-line patterns, use multiline: true",
			schema: schema(
				prop{"pattern", "string", "The regular expression pattern to search for in file contents", true},
				prop{"path", "string", "File or directory to search in (rg PATH). Defaults to current working directory.", false},
				prop{"glob", "string", "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\") - maps to rg --glob", false},
				prop{"output_mode", map[string]any{"type": "string", "enum": []string{"content", "files_with_matches", "count"}}, "Output mode: \"content\" shows matching lines (supports -A/-B/-C context, -n line numbers, head_limit), \"files_with_matches\" shows file paths (supports head_limit), \"count\" shows match counts (supports head_limit). Defaults to \"files_with_matches\".", false},
				prop{"-B", "number", "Number of lines to show before each match (rg -B). Requires output_mode: \"content\", ignored otherwise.", false},
				prop{"-A", "number", "Number of lines to show after each match (rg -A). Requires output_mode: \"content\", ignored otherwise.", false},
				prop{"-C", "number", "Alias for context.", false},
				prop{"context", "number", "Number of lines to show before and after each match (rg -C). Requires output_mode: \"content\", ignored otherwise.", false},
				prop{"-n", "boolean", "Show line numbers in output (rg -n). Requires output_mode: \"content\", ignored otherwise. Defaults to true.", false},
				prop{"-i", "boolean", "Case insensitive search (rg -i)", false},
				prop{"-o", "boolean", "Print only the matched (non-empty) parts of each matching line, one match per output line (rg -o / --only-matching). Requires output_mode: \"content\", ignored otherwise. Defaults to false.", false},
				prop{"type", "string", "File type to search (rg --type). Common types: js, py, rust, go, java, etc. More efficient than include for standard file types.", false},
				prop{"head_limit", "number", "Limit output to first N lines/entries, equivalent to \"| head -N\". Works across all output modes: content (limits output lines), files_with_matches (limits file paths), count (limits count entries). Defaults to 250 when unspecified. Pass 0 for unlimited (use sparingly — large result sets waste context).", false},
				prop{"offset", "number", "Skip first N lines/entries before applying head_limit, equivalent to \"| tail -n +N | head -N\". Works across all output modes. Defaults to 0.", false},
				prop{"multiline", "boolean", "Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: false.", false},
			)},
		{name: "Bash", verb: VerbShell, run: (*Workspace).claudeBash, rename: map[string]string{"run_in_background": "background", "timeout_ms": "timeout"},
			desc: "Executes a given bash command and returns its output.\n\n" +
				"The working directory persists between commands (cd carries to the next call), but shell state does not. " +
				"The command runs in the workspace namespace: the same files at the same paths as the other tools.\n" +
				"- Output is stdout and stderr merged; a command that exits non-zero is an error result that starts with \"Exit code N\".\n" +
				"- You can specify an optional timeout in milliseconds (up to 600000ms / 10 minutes). By default, the command will timeout after 120000ms (2 minutes). A command still running at its timeout is moved to the background and its task ID returned; it is not killed.\n" +
				"- You can use the run_in_background parameter to run the command in the background; the result gives its task ID and its output file: read that file with Read, and stop the task with TaskStop.",
			schema: schema(
				prop{"command", "string", "The command to execute", true},
				prop{"timeout", "number", "Optional timeout in milliseconds (max 600000 for a foreground command)", false},
				prop{"description", "string", "Clear, concise description of what this command does in active voice.", false},
				prop{"run_in_background", "boolean", "Set to true to run this command in the background. With it, `timeout` limits how long the command may run in the background before it is stopped (default 1800000 ms, max 7200000 ms).", false},
				prop{"dangerouslyDisableSandbox", "boolean", "Set this to true to dangerously override sandbox mode and run commands without sandboxing.", false},
			)},
		// Claude Code 2.1.332 has no TaskOutput (a task's output is a
		// file Read reads); served when called, for models trained on it.
		{name: "TaskOutput", verb: VerbShell, run: (*Workspace).claudeTaskOutput, ann: &Annotations{ReadOnly: true}, hidden: true,
			desc: "- Retrieves output from a running or completed background task (a Bash command run with run_in_background)\n" +
				"- Takes a task_id parameter identifying the task\n" +
				"- Returns the task output along with status information\n" +
				"- Use block=true (default) to wait for task completion\n" +
				"- Use block=false for non-blocking check of current status",
			schema: schema(
				prop{"task_id", "string", "The task ID to get output from", true},
				prop{"block", "boolean", "Whether to wait for completion", true},
				prop{"timeout", "number", "Max wait time in ms", true},
			)},
		{name: "TaskStop", verb: VerbShell, run: (*Workspace).claudeTaskStop,
			desc: "- Stops a running background task by its ID\n" +
				"- Takes a task_id parameter identifying the task to stop\n" +
				"- Returns a success or failure status\n" +
				"- Use this tool when you need to terminate a long-running task",
			schema: schema(
				prop{"task_id", "string", "The ID of the background task to stop", false},
				prop{"shell_id", "string", "Deprecated: use task_id instead", false},
			)},
		// Served when called, not listed: the tools of earlier releases.
		{name: "LS", verb: VerbLs, hidden: true, desc: descLs, schema: schema(
			prop{"path", "string", "Absolute workspace path of the directory", true},
			prop{"ignore", strList, "Glob patterns of names to leave out", false},
		)},
		{name: "MultiEdit", verb: VerbEdit, hidden: true, rename: editRename, reshape: needKey("edits"),
			desc: "Several exact string replacements in one file, applied in order, all or nothing; each edit's old_string must be unique unless its replace_all is set.",
			schema: schema(
				prop{"file_path", "string", "The absolute path to the file to modify", true},
				prop{"edits", editsSchema("old_string", "new_string", "replace_all"), "Replacements, applied in order, all or nothing", true},
			)},
	}
}

// claudeGrepArgs maps Claude Code's Grep onto the canonical grep: its
// files_with_matches mode, its default of the current directory, its
// "context" beside -C, and the aliases it coerces (-l, -c, -r).
func claudeGrepArgs(a *args) error {
	if !a.present("path") {
		a.set("path", ".")
	}
	for _, f := range []struct{ flag, mode string }{{"-l", "files_with_matches"}, {"-c", "count"}} {
		if !a.present(f.flag) {
			continue
		}
		on, err := a.boolean(f.flag, false)
		if err != nil {
			return err
		}
		delete(a.m, f.flag)
		if on && !a.present("outputMode") {
			a.set("outputMode", f.mode)
		}
	}
	if a.present("-r") {
		if _, err := a.boolean("-r", false); err != nil {
			return err
		}
		delete(a.m, "-r") // Grep always searches a directory recursively
	}
	if a.present("outputMode") {
		var m string
		if err := json.Unmarshal(a.m["outputMode"], &m); err == nil {
			switch m {
			case "files_with_matches":
				a.set("outputMode", "files")
			case "content", "count":
			default:
				return a.errf("argument %q must be content, files_with_matches or count, got %q", a.key("outputMode"), m)
			}
		}
	}
	return nil
}

// The runs of Claude Code's tools, answered as its current release answers
// them: what each result looks like is that release's
// mapToolResultToToolResultBlockParam of the tool. Read is
// dialect_claude_read.go.

// claudeGlobLimit is how many paths Claude Code's Glob returns.
const claudeGlobLimit = 100

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
	g, err := w.grepSearch(ctx, a, "files", func(mode string) bool { return mode == "files" })
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
	sort.SliceStable(hits, func(i, j int) bool {
		mi, mj := hits[i].r.mtime, hits[j].r.mtime
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
	claudeBackgroundTimeout    = 1800000 // ms a background command may run by default
	claudeBackgroundMaxTimeout = 7200000 // ms, the most it may be given
	claudeBashMaxResult        = 30000   // maxResultSizeChars
	claudeBashErrorCap         = 10000   // an error's text, head and tail kept
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
	// A foreground command waits up to the policy's longest call; a
	// background one runs up to Claude Code's background maximum.
	maxMs, defMs := int(w.limits.MaxShellTimeout.Milliseconds()), shellDefaultTimeout
	if background {
		maxMs, defMs = claudeBackgroundMaxTimeout, claudeBackgroundTimeout
	}
	timeout, err := a.integer("timeout", min(defMs, maxMs), 1, maxMs)
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
	// The output is kept up to the longest result (not the inline cap):
	// a task's output file, and a long output saved whole for Read.
	out := &capWriter{limit: max(w.limits.MaxOutputBytes, shellOutputCap)}
	if background {
		// A task's output file is all it printed, its jobs' too.
		run.after = out
	}
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
		w.boundFor(p, time.Duration(timeout)*time.Millisecond)
		msg := fmt.Sprintf("Command running in background with ID: %d. Output is being written to: %s. To check interim output, use Read on that file path.", id, taskPath(id))
		if pruned != nil {
			pruned.stop("the session had too many processes")
			msg += fmt.Sprintf("\nTask %d (%s) was stopped: a session keeps at most %d.", pruned.id, clip(pruned.cmdline), w.maxSessionProcs)
		}
		return msg, nil
	}
	wait := time.Duration(timeout) * time.Millisecond
	if !p.wait(ctx, wait) && ctx.Err() == nil && a.sess != nil && a.sess.keeps() && p.redirectAfter(out) {
		// Claude Code moves a foreground command still running at its
		// timeout to the background and gives its task id; it is not
		// killed.
		p.log = out
		if id, pruned, err := a.sess.add(p); err == nil {
			w.boundFor(p, claudeBackgroundTimeout*time.Millisecond)
			msg := fmt.Sprintf("Command did not complete within its %ds timeout and was moved to the background (ID: %d). Output is being written to: %s. "+
				"If it is still running after 30m in the background, it will be stopped. "+
				"It is running now: do not start a second copy while it runs. If it is no longer needed, stop it with TaskStop. ",
				max(1, (timeout+500)/1000), id, taskPath(id))
			if out.String() == "" {
				msg += "No output had been read from it when it was moved. A program that buffers its output, or a pipe into one such as tail, can keep the output file empty until the command finishes. "
			}
			msg += "To check interim output, use Read on that file path."
			if pruned != nil {
				pruned.stop("the session had too many processes")
				msg += fmt.Sprintf("\nTask %d (%s) was stopped: a session keeps at most %d.", pruned.id, clip(pruned.cmdline), w.maxSessionProcs)
			}
			return msg, nil
		}
	}
	res := w.finishShell(ctx, run, p, wait)
	text := strings.TrimRight(leadingBlankLines(out.String()), " \t\r\n")
	if res.dirNote != "" {
		text = strings.TrimPrefix(text+"\n("+res.dirNote+")", "\n")
	}
	if res.jobs != 0 {
		text = strings.TrimPrefix(text+"\n"+fmt.Sprintf("Background jobs this command started are still running (ID: %d). Their output is being written to: %s. "+
			"To check it, use Read on that file path; stop them with TaskStop. They are stopped when this session ends.", res.jobs, taskPath(res.jobs)), "\n")
	}
	if res.jobsNote != "" {
		text = strings.TrimPrefix(text+"\n("+res.jobsNote+")", "\n")
	}
	if res.killed != "" {
		return "", &toolError{text: capMiddle(strings.TrimSpace("Command "+res.killed+"; it was stopped\n"+text), claudeBashErrorCap)}
	}
	if p.exitCode != 0 && !benignExit(command, p.exitCode) {
		code := exitOf(p)
		return "", &toolError{text: capMiddle(strings.TrimSpace(fmt.Sprintf("Exit code %d\n%s", code, text)), claudeBashErrorCap)}
	}
	if len(text) > claudeBashMaxResult && a.sess != nil && a.sess.keeps() && res.jobs == 0 {
		// Claude Code saves an output over its cap whole to a file the
		// model reads with Read, and shows its true size and a preview.
		p.log = out
		if id, pruned, err := a.sess.add(p); err == nil {
			if pruned != nil {
				pruned.stop("the session had too many processes")
			}
			return claudePersisted(text, out.size(), taskPath(id)), nil
		}
	}
	return capMiddle(text, claudeBashMaxResult), nil
}

// claudePreviewBytes is how much of a saved output Claude Code previews.
const claudePreviewBytes = 2000

// claudePersisted is Claude Code's result for an output saved to a file:
// its size, where it is, and its first 2000 bytes cut at a line's end.
func claudePersisted(text string, size int, file string) string {
	preview, more := text, false
	if len(preview) > claudePreviewBytes {
		preview, more = preview[:claudePreviewBytes], true
		if i := strings.LastIndexByte(preview, '\n'); i > claudePreviewBytes/2 {
			preview = preview[:i]
		}
	}
	var b strings.Builder
	b.WriteString("<persisted-output>\n")
	fmt.Fprintf(&b, "Output too large (%s). Full output saved to: %s\n", humanSize(size), file)
	fmt.Fprintf(&b, "Preview (first %s):\n%s\n", humanSize(claudePreviewBytes), preview)
	if more {
		b.WriteString("...\n")
	}
	b.WriteString("</persisted-output>")
	return b.String()
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
	if !p.running() {
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
