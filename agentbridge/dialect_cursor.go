package agentbridge

import (
	"context"
	"encoding/json"
	"sort"
)

// cursorReference says what the cursor dialect was matched to.
const cursorReference = "@cursor/sdk 1.0.18 (npm): argument names and types from its tool-call types " +

	"(vendor/cursor-sdk-shared/tool-call-types.d.ts), behaviour from its local executors (dist/cjs/429.index.js); " +

	"the canonical dialect adds read offset/limit, ls depth/offset/limit, glob limit, grep lineNumbers/noIgnore, edit replaceAll, delete recursive"

// cursorTools are the canonical dialect: the verbs under their own names,
// with the Cursor SDK's argument names (glob globPattern/targetDirectory,
// grep contextBefore/contextAfter/sort/sortAscending and outputMode
// files_with_matches with content as the default, shell
// workingDirectory) and its ls, a tree of the directory within a size
// budget as its directoryTreeRoot. The names this dialect had before
// (glob pattern/path, grep before/after and outputMode files, shell cwd)
// are still accepted, not listed.
func cursorTools() []*dialectTool {
	return []*dialectTool{
		{name: "read", verb: VerbRead, desc: descRead, schema: schema(
			prop{"path", "string", "Absolute workspace path of the file", true},
			prop{"offset", "integer", "1-based line to start at", false},
			prop{"limit", "integer", "Number of lines to read (default 2000)", false},
		)},
		{name: "ls", verb: VerbLs, run: (*Workspace).cursorLs,
			desc: "List a directory of the workspace as a tree, sorted by name: every file and directory below it while the names fit in a budget of " +
				"2500 characters, then per directory the count of files not shown by extension. Directories end in /, symlinks show -> target, " +
				"mount points show their mount and whether it is writable.",
			schema: schema(
				prop{"path", "string", "Absolute workspace path of the directory", true},
				prop{"ignore", strList, "Glob patterns of names to leave out", false},
				prop{"depth", "integer", "List only this many levels (1: the directory's own entries); default: as deep as the budget allows", false},
				prop{"offset", "integer", "1-based entry to start at", false},
				prop{"limit", "integer", "Number of entries to show (default 1000)", false},
			)},
		{name: "glob", verb: VerbGlob, rename: map[string]string{"globPattern": "pattern", "targetDirectory": "path", "pattern": "pattern", "path": "path"},
			reshape: needKey("pattern"),
			desc:    descGlob,
			schema: schema(
				prop{"globPattern", "string", "Glob pattern, e.g. **/*.go", true},
				prop{"targetDirectory", "string", "Directory to search (default /)", false},
				prop{"limit", "integer", "Show at most this many paths (default 1000)", false},
			)},
		{name: "grep", verb: VerbGrep, run: (*Workspace).cursorGrep, reshape: cursorGrepArgs,
			rename: map[string]string{"contextBefore": "before", "contextAfter": "after", "before": "before", "after": "after"},
			desc: "Search file contents with a regular expression (RE2 syntax), like ripgrep. Binary files and .git are skipped; " +
				"hidden files are searched; .gitignore is honoured in host mounts. Files are ordered newest first unless sort says otherwise.",
			schema: schema(
				prop{"pattern", "string", "Regular expression (RE2)", true},
				prop{"path", "string", "File or directory to search (default /)", false},
				prop{"glob", "string", "Only files matching this glob, e.g. *.go or src/**/*.ts", false},
				prop{"outputMode", map[string]any{"type": "string", "enum": []string{"content", "files_with_matches", "count"}}, "content: matching lines (default); files_with_matches: paths; count: matches per file", false},
				prop{"contextBefore", "integer", "Lines of context before each match (content mode)", false},
				prop{"contextAfter", "integer", "Lines of context after each match (content mode)", false},
				prop{"context", "integer", "Lines of context before and after each match (content mode)", false},
				prop{"caseInsensitive", "boolean", "Ignore case", false},
				prop{"type", "string", "Only files of this ripgrep type: go, py, js, ts, rust, java, c, cpp, md, …", false},
				prop{"headLimit", "integer", "Show at most this many output lines (default 250, 0 = all)", false},
				prop{"offset", "integer", "Skip this many output lines first", false},
				prop{"multiline", "boolean", "Let patterns span lines; . matches newlines", false},
				prop{"sort", map[string]any{"type": "string", "enum": []string{"modified", "path", "none"}}, "Order of the files: modified (default), path, or none (path order here)", false},
				prop{"sortAscending", "boolean", "Sort ascending (oldest first, A to Z); default descending", false},
				prop{"lineNumbers", "boolean", "Show line numbers in content mode (default true)", false},
				prop{"noIgnore", "boolean", "Also search files .gitignore excludes", false},
			)},
		{name: "write", verb: VerbWrite, run: (*Workspace).cursorWrite, desc: descWrite, schema: schema(
			prop{"path", "string", "Absolute workspace path of the file", true},
			prop{"fileText", "string", "The full new content", true},
			prop{"returnFileContentAfterWrite", "boolean", "Also return the file's content as written", false},
		)},
		{name: "edit", verb: VerbEdit, desc: descEdit + " Alternatively pass patchContent in the apply_patch format.", schema: schema(
			prop{"path", "string", "Absolute workspace path of the file (not needed with patchContent)", false},
			prop{"oldText", "string", "Exact text to replace", false},
			prop{"newText", "string", "Replacement text", false},
			prop{"replaceAll", "boolean", "Replace every occurrence", false},
			prop{"edits", editsSchema("oldText", "newText", "replaceAll"), "Several replacements, applied in order, all or nothing", false},
			prop{"patchContent", "string", "A patch in the apply_patch format", false},
		)},
		{name: "delete", verb: VerbDelete, desc: descDelete, schema: schema(
			prop{"path", "string", "Absolute workspace path to delete", true},
			prop{"recursive", "boolean", "Delete a directory with its contents", false},
		)},
		{name: "shell", verb: VerbShell, desc: descShell, rename: map[string]string{"workingDirectory": "cwd", "cwd": "cwd"}, schema: schema(
			prop{"command", "string", "The command line, run with bash -c", true},
			prop{"workingDirectory", "string", "Working directory (default the session's: at first the first writable mount; cd moves it)", false},
			prop{"timeout", "integer", "Timeout in milliseconds (default 120000, max 600000)", false},
		)},
	}
}

// cursorGrepArgs takes the SDK's outputMode files_with_matches (and this
// dialect's former "files") and checks sort.
func cursorGrepArgs(a *args) error {
	if a.present("outputMode") {
		var m string
		if err := json.Unmarshal(a.m["outputMode"], &m); err == nil && m == "files_with_matches" {
			a.set("outputMode", "files")
		}
	}
	return nil
}

// The runs of the Cursor SDK's tools, as its local executors run them.

// cursorLsBudget is the Cursor SDK's ls budget: characters of names.
const cursorLsBudget = 2500

// cursorLs is the SDK's ls: the whole tree below the directory while the
// names fit in the budget, then counts. With depth it is the canonical
// listing of that many levels.
func (w *Workspace) cursorLs(ctx context.Context, a *args) (string, error) {
	if a.present("depth") {
		return w.lsTree(ctx, a, 1, 0)
	}
	return w.lsTree(ctx, a, 0, cursorLsBudget)
}

// cursorGrep is the SDK's grep: content unless outputMode says otherwise,
// the files ordered by sort (modified, newest first, unless
// sortAscending), as its ripgrep call does with --sortr modified.
func (w *Workspace) cursorGrep(ctx context.Context, a *args) (string, error) {
	by, err := a.str("sort", false)
	if err != nil {
		return "", err
	}
	switch by {
	case "", "modified", "path", "none":
	default:
		return "", a.errf("argument %q must be modified, path or none, got %q (this workspace keeps no access or creation times to sort by)", a.key("sort"), by)
	}
	asc, err := a.boolean("sortAscending", false)
	if err != nil {
		return "", err
	}
	byMtime := by == "" || by == "modified"
	g, err := w.grepSearch(ctx, a, "content", func(string) bool { return byMtime })
	if err != nil {
		return "", err
	}
	switch by {
	case "", "modified":
		sort.SliceStable(g.hits, func(i, j int) bool {
			mi, mj := g.hits[i].r.mtime, g.hits[j].r.mtime
			if mi.Equal(mj) {
				return g.hits[i].shown < g.hits[j].shown
			}
			return mi.Before(mj) == asc
		})
	case "path":
		if !asc {
			sort.SliceStable(g.hits, func(i, j int) bool { return g.hits[i].shown > g.hits[j].shown })
		}
	}
	return grepText(a, g)
}

// cursorWrite is write, with the SDK's returnFileContentAfterWrite.
func (w *Workspace) cursorWrite(ctx context.Context, a *args) (string, error) {
	back, err := a.boolean("returnFileContentAfterWrite", false)
	if err != nil {
		return "", err
	}
	text, err := w.write(ctx, a)
	if err != nil || !back || w.dryRun {
		return text, err
	}
	content, err := a.str("fileText", true)
	if err != nil {
		return "", err
	}
	return text + "\n" + content, nil
}
