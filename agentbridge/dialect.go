package agentbridge

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Dialect names.
const (
	DialectCursor = "cursor" // canonical
	DialectClaude = "claude"
	DialectCodex  = "codex"
)

// Dialects lists the supported dialects.
var Dialects = []string{DialectCursor, DialectClaude, DialectCodex}

type dialect struct {
	name  string
	tools []*dialectTool
}

// dialectTool is one tool of a dialect: a name, a schema, and how its
// arguments map onto a canonical verb. A dialect only renames and reshapes.
type dialectTool struct {
	name    string
	verb    string
	desc    string
	schema  string
	rename  map[string]string // dialect key -> canonical key
	reshape func(a *args) error
}

func (d *dialect) find(name string) *dialectTool {
	for _, t := range d.tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

var dialects = map[string]*dialect{
	DialectCursor: {name: DialectCursor, tools: cursorTools()},
	DialectClaude: {name: DialectClaude, tools: claudeTools()},
	DialectCodex:  {name: DialectCodex, tools: codexTools()},
}

func lookupDialect(name string) (*dialect, error) {
	if name == "" {
		name = DialectCursor
	}
	d, ok := dialects[name]
	if !ok {
		return nil, fmt.Errorf("unknown dialect %q (known: %s)", name, strings.Join(Dialects, ", "))
	}
	return d, nil
}

// prop is one property of an input schema.
type prop struct {
	name string
	typ  any // "string", "integer", "boolean", or a full schema map
	desc string
	req  bool
}

func schema(props ...prop) string {
	ps := map[string]any{}
	var req []string
	for _, p := range props {
		var s map[string]any
		switch t := p.typ.(type) {
		case string:
			s = map[string]any{"type": t}
		case map[string]any:
			s = t
		}
		s["description"] = p.desc
		ps[p.name] = s
		if p.req {
			req = append(req, p.name)
		}
	}
	sort.Strings(req)
	m := map[string]any{"type": "object", "properties": ps}
	if len(req) > 0 {
		m["required"] = req
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // static data
	}
	return string(b)
}

var (
	strList      = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	stringOrList = map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}}
)

func editsSchema(oldK, newK, allK string) map[string]any {
	return map[string]any{
		"type": "array", "minItems": 1,
		"items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				oldK: map[string]any{"type": "string", "description": "Exact text to replace"},
				newK: map[string]any{"type": "string", "description": "Replacement text"},
				allK: map[string]any{"type": "boolean", "description": "Replace every occurrence"},
			},
			"required": []string{newK, oldK},
		},
	}
}

// Shared descriptions: the behaviour is the canonical verb's in every dialect.
const (
	descRead = "Read a text file of the workspace. Output is cat -n style (line number, tab, text). " +
		"Reads up to 2000 lines from offset (1-based); a footer says how to read more. Binary files and directories are refused."
	descLs = "List a directory of the workspace, sorted by name. Directories end in /, symlinks show -> target, " +
		"mount points show their mount and whether it is writable."
	descGlob = "Find files by glob pattern (doublestar: **/*.go), newest first. Paths are absolute workspace paths."
	descGrep = "Search file contents with a regular expression (RE2 syntax), like ripgrep. Binary files and .git are skipped; " +
		"hidden files are searched; .gitignore is honoured in host mounts."
	descWrite = "Create or overwrite a file with the given content; missing parent directories are created."
	descEdit  = "Edit a file by exact string replacement. oldText must occur exactly once unless replaceAll is set; " +
		"multiple edits apply in order, all or nothing."
	descDelete = "Delete a file or symlink, or a directory (empty, or with recursive: true)."
	descShell  = "Run a bash command in the workspace namespace (the same files at the same paths) and return exit code, stdout and stderr."
	descPatch  = "Apply a patch in the apply_patch format (*** Begin Patch … *** End Patch) with Add File, Update File " +
		"(optional Move to) and Delete File sections. All or nothing across every file."
)

func cursorTools() []*dialectTool {
	return []*dialectTool{
		{name: "read", verb: VerbRead, desc: descRead, schema: schema(
			prop{"path", "string", "Absolute workspace path of the file", true},
			prop{"offset", "integer", "1-based line to start at", false},
			prop{"limit", "integer", "Number of lines to read (default 2000)", false},
		)},
		{name: "ls", verb: VerbLs, desc: descLs, schema: schema(
			prop{"path", "string", "Absolute workspace path of the directory", true},
			prop{"ignore", strList, "Glob patterns of names to leave out", false},
		)},
		{name: "glob", verb: VerbGlob, desc: descGlob, schema: schema(
			prop{"pattern", "string", "Glob pattern, e.g. **/*.go", true},
			prop{"path", "string", "Directory to search (default /)", false},
		)},
		{name: "grep", verb: VerbGrep, desc: descGrep, schema: schema(
			prop{"pattern", "string", "Regular expression (RE2)", true},
			prop{"path", "string", "File or directory to search (default /)", false},
			prop{"glob", "string", "Only files matching this glob, e.g. *.go or src/**/*.ts", false},
			prop{"type", "string", "Only files of this ripgrep type: go, py, js, ts, rust, java, c, cpp, md, …", false},
			prop{"outputMode", map[string]any{"type": "string", "enum": []string{"content", "files", "count"}}, "content: matching lines; files: paths (default); count: matches per file", false},
			prop{"caseInsensitive", "boolean", "Ignore case", false},
			prop{"lineNumbers", "boolean", "Show line numbers in content mode (default true)", false},
			prop{"before", "integer", "Lines of context before each match (content mode)", false},
			prop{"after", "integer", "Lines of context after each match (content mode)", false},
			prop{"context", "integer", "Lines of context before and after each match (content mode)", false},
			prop{"multiline", "boolean", "Let patterns span lines; . matches newlines", false},
			prop{"headLimit", "integer", "Show at most this many output lines (default 250, 0 = all)", false},
			prop{"offset", "integer", "Skip this many output lines first", false},
			prop{"noIgnore", "boolean", "Also search files .gitignore excludes", false},
		)},
		{name: "write", verb: VerbWrite, desc: descWrite, schema: schema(
			prop{"path", "string", "Absolute workspace path of the file", true},
			prop{"fileText", "string", "The full new content", true},
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
		{name: "shell", verb: VerbShell, desc: descShell, schema: schema(
			prop{"command", "string", "The command line, run with bash -c", true},
			prop{"timeout", "integer", "Timeout in milliseconds (default 120000, max 600000)", false},
			prop{"cwd", "string", "Working directory (default the first writable mount)", false},
		)},
	}
}

func claudeTools() []*dialectTool {
	grepModes := func(a *args) error {
		if !a.present("outputMode") {
			return nil
		}
		var m string
		if err := json.Unmarshal(a.m["outputMode"], &m); err == nil && m == "files_with_matches" {
			a.set("outputMode", "files")
		} else if m == "files" {
			return a.errf("argument %q must be content, files_with_matches or count, got %q", a.key("outputMode"), m)
		}
		return nil
	}
	editRename := map[string]string{"file_path": "path", "old_string": "oldText", "new_string": "newText", "replace_all": "replaceAll"}
	return []*dialectTool{
		{name: "Read", verb: VerbRead, desc: descRead, rename: map[string]string{"file_path": "path"}, schema: schema(
			prop{"file_path", "string", "Absolute workspace path of the file", true},
			prop{"offset", "integer", "1-based line to start at", false},
			prop{"limit", "integer", "Number of lines to read (default 2000)", false},
		)},
		{name: "LS", verb: VerbLs, desc: descLs, schema: schema(
			prop{"path", "string", "Absolute workspace path of the directory", true},
			prop{"ignore", strList, "Glob patterns of names to leave out", false},
		)},
		{name: "Glob", verb: VerbGlob, desc: descGlob, schema: schema(
			prop{"pattern", "string", "Glob pattern, e.g. **/*.go", true},
			prop{"path", "string", "Directory to search (default /)", false},
		)},
		{name: "Grep", verb: VerbGrep, desc: descGrep, reshape: grepModes, rename: map[string]string{
			"output_mode": "outputMode", "-i": "caseInsensitive", "-n": "lineNumbers", "-A": "after", "-B": "before",
			"-C": "context", "head_limit": "headLimit",
		}, schema: schema(
			prop{"pattern", "string", "Regular expression (RE2)", true},
			prop{"path", "string", "File or directory to search (default /)", false},
			prop{"glob", "string", "Only files matching this glob, e.g. *.go", false},
			prop{"type", "string", "Only files of this ripgrep type: go, py, js, ts, rust, …", false},
			prop{"output_mode", map[string]any{"type": "string", "enum": []string{"content", "files_with_matches", "count"}}, "Output mode (default files_with_matches)", false},
			prop{"-i", "boolean", "Ignore case", false},
			prop{"-n", "boolean", "Show line numbers in content mode (default true)", false},
			prop{"-A", "integer", "Lines after each match", false},
			prop{"-B", "integer", "Lines before each match", false},
			prop{"-C", "integer", "Lines before and after each match", false},
			prop{"multiline", "boolean", "Let patterns span lines", false},
			prop{"head_limit", "integer", "Show at most this many output lines (default 250, 0 = all)", false},
			prop{"offset", "integer", "Skip this many output lines first", false},
		)},
		{name: "Write", verb: VerbWrite, desc: descWrite, rename: map[string]string{"file_path": "path", "content": "fileText"}, schema: schema(
			prop{"file_path", "string", "Absolute workspace path of the file", true},
			prop{"content", "string", "The full new content", true},
		)},
		{name: "Edit", verb: VerbEdit, desc: descEdit, rename: editRename, reshape: noKeys("edits", "patchContent"), schema: schema(
			prop{"file_path", "string", "Absolute workspace path of the file", true},
			prop{"old_string", "string", "Exact text to replace", true},
			prop{"new_string", "string", "Replacement text", true},
			prop{"replace_all", "boolean", "Replace every occurrence", false},
		)},
		{name: "MultiEdit", verb: VerbEdit, desc: descEdit, rename: editRename, reshape: needKey("edits"), schema: schema(
			prop{"file_path", "string", "Absolute workspace path of the file", true},
			prop{"edits", editsSchema("old_string", "new_string", "replace_all"), "Replacements, applied in order, all or nothing", true},
		)},
		{name: "Bash", verb: VerbShell, desc: descShell, schema: schema(
			prop{"command", "string", "The command line, run with bash -c", true},
			prop{"timeout", "integer", "Timeout in milliseconds (default 120000, max 600000)", false},
			prop{"description", "string", "What the command does, in a few words", false},
		)},
	}
}

func codexTools() []*dialectTool {
	return []*dialectTool{
		{name: "read_file", verb: VerbRead, desc: descRead, rename: map[string]string{"file_path": "path"}, schema: schema(
			prop{"file_path", "string", "Absolute workspace path of the file", true},
			prop{"offset", "integer", "1-based line to start at", false},
			prop{"limit", "integer", "Number of lines to read (default 2000)", false},
		)},
		{name: "list_dir", verb: VerbLs, desc: descLs, rename: map[string]string{"dir_path": "path"}, schema: schema(
			prop{"dir_path", "string", "Absolute workspace path of the directory", true},
			prop{"offset", "integer", "1-based entry to start at", false},
			prop{"limit", "integer", "Number of entries to return", false},
			prop{"depth", "integer", "How many directory levels to list (default 1)", false},
		)},
		{name: "grep_files", verb: VerbGrep, desc: descGrep + " Returns the paths of matching files.",
			rename:  map[string]string{"include": "glob", "limit": "headLimit"},
			reshape: func(a *args) error { a.set("outputMode", "files"); return nil },
			schema: schema(
				prop{"pattern", "string", "Regular expression (RE2)", true},
				prop{"include", "string", "Only files matching this glob, e.g. *.go", false},
				prop{"path", "string", "Directory to search (default /)", false},
				prop{"limit", "integer", "Return at most this many paths (default 250)", false},
			)},
		{name: "apply_patch", verb: VerbEdit, desc: descPatch, rename: map[string]string{"input": "patchContent"}, reshape: needKey("patchContent"), schema: schema(
			prop{"input", "string", "The whole patch, from *** Begin Patch to *** End Patch", true},
		)},
		{name: "shell", verb: VerbShell, desc: descShell, rename: map[string]string{"workdir": "cwd", "timeout_ms": "timeout"}, reshape: codexCommand, schema: schema(
			prop{"command", stringOrList, "The command: an argv list (e.g. [\"bash\", \"-lc\", \"ls\"]) or a command line", true},
			prop{"workdir", "string", "Working directory", false},
			prop{"timeout_ms", "integer", "Timeout in milliseconds (default 120000, max 600000)", false},
		)},
	}
}

// noKeys drops canonical keys a dialect tool does not offer, so Claude's
// Edit cannot be turned into a patch by an extra field.
func noKeys(keys ...string) func(a *args) error {
	return func(a *args) error {
		for _, k := range keys {
			delete(a.m, k)
		}
		return nil
	}
}

func needKey(k string) func(a *args) error {
	return func(a *args) error {
		if !a.present(k) {
			return a.missing(k)
		}
		return nil
	}
}

// codexCommand turns Codex's argv form into a command line: ["bash", "-lc",
// SCRIPT] runs SCRIPT; any other argv is shell-quoted and joined.
func codexCommand(a *args) error {
	if !a.present("command") {
		return a.missing("command")
	}
	var argv []string
	if err := json.Unmarshal(a.m["command"], &argv); err != nil {
		return nil // a string: the canonical decoder checks it
	}
	if len(argv) == 0 {
		return a.errf("argument %q must not be empty", "command")
	}
	if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "sh" || argv[0] == "/bin/bash" || argv[0] == "/bin/sh") &&
		(argv[1] == "-c" || argv[1] == "-lc") {
		a.set("command", argv[2])
		return nil
	}
	q := make([]string, len(argv))
	for i, s := range argv {
		q[i] = shellQuote(s)
	}
	a.set("command", strings.Join(q, " "))
	return nil
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
