package agentbridge

// cursorTools are the canonical dialect: the verbs under their own names
// and argument names (TOOLS.md, runtime-abstraction §1).
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
