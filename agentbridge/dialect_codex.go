package agentbridge

import (
	"encoding/json"
	"strings"
)

// codexTools are Codex's names: read_file, list_dir, grep_files,
// apply_patch and shell; writes and deletes go through apply_patch.
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
