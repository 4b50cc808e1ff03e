package agentbridge

import "encoding/json"

// claudeTools are Claude Code's and the Agent SDK's names: Read, LS, Glob,
// Grep, Write, Edit, MultiEdit and Bash, with their argument names.
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
