package agentbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// codexTools are OpenAI Codex's tools as a current Codex model gets them.
//
// The reference is the Codex CLI as released on npm, @openai/codex 0.171.0
// (its linux-x64 build: the tool descriptions are the strings of that
// binary), and codex-rs's tool specs for the shapes (types, required keys,
// additionalProperties false). Codex gives its models one shell family;
// this dialect advertises the one 0.171.0 gives every current model on
// Linux and macOS, where its unified_exec feature is on by default:
// exec_command (a command that keeps running past yield_time_ms, with a
// session id) and write_stdin (read more of it, type into it). Its
// apply_patch is the JSON-function variant codex-rs offers models without
// custom-tool support: MCP has no freeform tools. read_file, list_dir and
// grep_files are codex-rs's own file tools (experimental_supported_tools
// of earlier model families; 0.171.0 no longer ships them), kept under
// their names and schemas for the models trained on them.
//
// view_image is 0.171.0's: the image as an image content part (its
// "high" detail is the original bytes here: the workspace does not
// resize). Every exec_command starts in the session's directory: a cd in
// one call does not carry to the next, as in Codex.
//
// Not offered: the code-mode surface 0.171.0 gives its default model (one
// JavaScript exec tool whose script calls the other tools, run by its
// codex-code-mode-host). MCP could carry it as one tool taking a string,
// but honouring it means a JavaScript runtime in the workspace and the
// other tools bound into it; a model without it uses these tools, which
// are the ones code mode calls.
//
// Two legacy shells are served when called but not listed: shell (an argv,
// the tool of older model families) and shell_command (a command string
// run to its end: what the catalog's shell_type "shell_command" named
// before 0.171.0 folded it into exec_command). A model trained on either
// is not refused, and one that sees this list is not offered three shells.
//
// What the workspace cannot honour is refused by name rather than
// dropped: sandbox_permissions "require_escalated" (every command already
// runs in the workspace namespace, and there is nothing outside it to
// escalate to), and read_file's indentation mode. Where the workspace
// does something else the description says what it does: read_file has
// no indentation mode, and grep_files lists paths in path order (codex-rs:
// by modification time).
func codexTools() []*dialectTool {
	approval := []prop{
		{"sandbox_permissions", map[string]any{"type": "string", "enum": []string{"use_default", "require_escalated"}},
			"Per-command sandbox override. Defaults to `use_default`; use `require_escalated` for unsandboxed execution.", false},
		{"justification", "string", "User-facing approval question for `require_escalated`; omit otherwise.", false},
		{"prefix_rule", strList, "Reusable approval prefix for `cmd`, only with `sandbox_permissions: \"require_escalated\"`; for example [\"git\", \"pull\"].", false},
	}
	maxTokens := prop{"max_output_tokens", "number", "Output token budget. Defaults to 10000 tokens; larger requests may be capped by policy.", false}
	return []*dialectTool{
		{name: "read_file", verb: VerbRead, rename: map[string]string{"file_path": "path"}, reshape: codexReadFile,
			desc: "Reads a local file with 1-indexed line numbers.",
			schema: strictSchema(
				prop{"file_path", "string", "Absolute path to the file", true},
				prop{"offset", "number", "The line number to start reading from. Must be 1 or greater.", false},
				prop{"limit", "number", "The maximum number of lines to return.", false},
			)},
		{name: "list_dir", verb: VerbLs, rename: map[string]string{"dir_path": "path"},
			desc: "Lists entries in a local directory with 1-indexed entry numbers and simple type labels.",
			schema: strictSchema(
				prop{"dir_path", "string", "Absolute path to the directory to list.", true},
				prop{"offset", "number", "The entry number to start listing from. Must be 1 or greater.", false},
				prop{"limit", "number", "The maximum number of entries to return.", false},
				prop{"depth", "number", "The maximum directory depth to traverse. Must be 1 or greater.", false},
			)},
		{name: "grep_files", verb: VerbGrep,
			rename:  map[string]string{"include": "glob", "limit": "headLimit"},
			reshape: codexGrepFiles,
			desc:    "Finds files whose contents match the pattern and lists them by path.",
			schema: strictSchema(
				prop{"pattern", "string", "Regular expression pattern to search for.", true},
				prop{"include", "string", "Optional glob that limits which files are searched (e.g. \"*.rs\" or \"*.{ts,tsx}\").", false},
				prop{"path", "string", "Directory or file path to search. Defaults to the session's working directory.", false},
				prop{"limit", "number", "Maximum number of file paths to return (defaults to 100).", false},
			)},
		{name: "apply_patch", verb: VerbEdit, rename: map[string]string{"input": "patchContent"}, reshape: needKey("patchContent"),
			desc: codexApplyPatchDesc,
			schema: strictSchema(
				prop{"input", "string", "The entire contents of the apply_patch command", true},
			)},
		{name: "exec_command", verb: VerbShell, run: (*Workspace).execCommand, patchResult: execPatchResult,
			rename: map[string]string{"cmd": "command", "workdir": "cwd"},
			desc:   "Runs a command in a PTY, returning output or a session ID for ongoing interaction.",
			schema: strictSchema(append([]prop{
				{"cmd", "string", "Shell command to execute.", true},
				{"workdir", "string", "Working directory for the command. Defaults to the turn cwd.", false},
				{"tty", "boolean", "True allocates a PTY for the command; false or omitted uses plain pipes.", false},
				{"yield_time_ms", "number", "Wait before yielding output. Defaults to 10000 ms; effective range is 250-30000 ms.", false},
				maxTokens,
				{"shell", "string", "Shell binary to launch. Defaults to the user's default shell.", false},
				{"login", "boolean", "Request login-shell startup. Omit to inherit.", false},
			}, approval...)...)},
		{name: "write_stdin", verb: VerbShell, run: (*Workspace).writeStdin,
			desc: "Writes characters to an existing unified exec session and returns recent output.",
			schema: strictSchema(
				prop{"session_id", "number", "Identifier of the running unified exec session.", true},
				prop{"chars", "string", "Bytes to write to stdin. Defaults to empty, which polls without writing.", false},
				prop{"yield_time_ms", "number", "Wait before yielding output. Non-empty writes default to 250 ms and cap at 30000 ms; empty polls wait 5000-300000 ms by default.", false},
				maxTokens,
			)},
		{name: "view_image", verb: VerbRead, run: (*Workspace).codexViewImage,
			desc: "View a local image file from the filesystem when visual inspection is needed. Use this for images already available on disk.",
			schema: strictSchema(
				prop{"path", "string", "Local filesystem path to an image file.", true},
				prop{"detail", "string", "Image detail level. Defaults to `high`; use `original` to preserve exact resolution.", false},
			)},
		{name: "shell_command", verb: VerbShell, hidden: true, run: (*Workspace).shellCommand,
			rename: map[string]string{"workdir": "cwd", "timeout_ms": "timeout"},
			desc:   "Runs a shell command and returns its output.\n- Always set the `workdir` param when using the shell_command function. Do not use `cd` unless absolutely necessary.",
			schema: strictSchema(append([]prop{
				{"command", "string", "The shell script to execute in the user's default shell", true},
				{"workdir", "string", "The working directory to execute the command in", false},
				{"timeout_ms", "number", "The timeout for the command in milliseconds", false},
				{"login", "boolean", "Whether to run the shell with login shell semantics. Defaults to true.", false},
			}, approval...)...)},
		{name: "shell", verb: VerbShell, hidden: true, desc: descShell, rename: map[string]string{"workdir": "cwd", "timeout_ms": "timeout"}, reshape: codexCommand, schema: schema(
			prop{"command", stringOrList, "The command: an argv list (e.g. [\"bash\", \"-lc\", \"ls\"]) or a command line", true},
			prop{"workdir", "string", "Working directory", false},
			prop{"timeout_ms", "integer", "Timeout in milliseconds (default 120000, max 600000)", false},
		)},
	}
}

// codexApplyPatchDesc is codex-rs's description of its JSON apply_patch
// tool. It says paths are relative; here they may also be absolute
// workspace paths.
const codexApplyPatchDesc = `Use the ` + "`apply_patch`" + ` tool to edit files.
Your patch language is a stripped‑down, file‑oriented diff format designed to be easy to parse and safe to apply. You can think of it as a high‑level envelope:

*** Begin Patch
[ one or more file sections ]
*** End Patch

Within that envelope, you get a sequence of file operations.
You MUST include a header to specify the action you are taking.
Each operation starts with one of three headers:

*** Add File: <path> - create a new file. Every following line is a + line (the initial contents).
*** Delete File: <path> - remove an existing file. Nothing follows.
*** Update File: <path> - patch an existing file in place (optionally with a rename).

May be immediately followed by *** Move to: <new path> if you want to rename the file.
Then one or more “hunks”, each introduced by @@ (optionally followed by a hunk header).
Within a hunk each line starts with:

For instructions on [context_before] and [context_after]:
- By default, show 3 lines of code immediately above and 3 lines immediately below each change. If a change is within 3 lines of a previous change, do NOT duplicate the first change’s [context_after] lines in the second change’s [context_before] lines.
- If 3 lines of context is insufficient to uniquely identify the snippet of code within the file, use the @@ operator to indicate the class or function to which the snippet belongs. For instance, we might have:
@@ class BaseClass
[3 lines of pre-context]
- [old_code]
+ [new_code]
[3 lines of post-context]

- If a code block is repeated so many times in a class or function such that even a single ` + "`@@`" + ` statement and 3 lines of context cannot uniquely identify the snippet of code, you can use multiple ` + "`@@`" + ` statements to jump to the right context. For instance:

@@ class BaseClass
@@ 	 def method():
[3 lines of pre-context]
- [old_code]
+ [new_code]
[3 lines of post-context]

The full grammar definition is below:
Patch := Begin { FileOp } End
Begin := "*** Begin Patch" NEWLINE
End := "*** End Patch" NEWLINE
FileOp := AddFile | DeleteFile | UpdateFile
AddFile := "*** Add File: " path NEWLINE { "+" line NEWLINE }
DeleteFile := "*** Delete File: " path NEWLINE
UpdateFile := "*** Update File: " path NEWLINE [ MoveTo ] { Hunk }
MoveTo := "*** Move to: " newPath NEWLINE
Hunk := "@@" [ header ] NEWLINE { HunkLine } [ "*** End of File" NEWLINE ]
HunkLine := (" " | "-" | "+") text NEWLINE

A full patch can combine several operations:

*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-print("Hi")
+print("Hello, world!")
*** Delete File: obsolete.txt
*** End Patch

It is important to remember:

- You must include a header with your intended action (Add/Delete/Update)
- You must prefix new lines with ` + "`+`" + ` even when creating a new file
- File references can only be relative, NEVER ABSOLUTE.
`

// strictSchema is schema with additionalProperties false, as codex-rs
// declares every tool.
func strictSchema(props ...prop) toolSchema {
	m := schemaObject(props)
	m["additionalProperties"] = false
	return encodeSchema(m)
}

// codexGrepFiles asks grep for paths, at most 100 unless limit says
// otherwise, as codex-rs's grep_files.
func codexGrepFiles(a *args) error {
	a.set("outputMode", "files")
	if !a.present("headLimit") {
		a.set("headLimit", 100)
	}
	return nil
}

// codexReadFile refuses read_file's modes this workspace does not have:
// codex-rs's "indentation" mode reads a block around an anchor line.
func codexReadFile(a *args) error {
	if a.present("mode") {
		m, err := a.str("mode", false)
		if err != nil {
			return err
		}
		if m != "slice" {
			return a.errf("argument %q: only \"slice\" is supported here, got %q; read a range with offset and limit", "mode", m)
		}
	}
	if a.present("indentation") {
		return a.errf("argument %q is not supported here; read a range with offset and limit", "indentation")
	}
	return nil
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

// codexViewImage is Codex's view_image: the image at path as an image
// content part. Both detail levels send the file's own bytes: the
// workspace does not resize, so "high" is the original resolution too.
func (w *Workspace) codexViewImage(ctx context.Context, a *args) (string, error) {
	p, err := a.path(a.tool, "path", true, "")
	if err != nil {
		return "", err
	}
	detail, err := a.str("detail", false)
	if err != nil {
		return "", err
	}
	if detail != "" && detail != "high" && detail != "original" {
		return "", fmt.Errorf("view_image.detail only supports `high` or `original`; omit `detail` for default high resized behavior, got `%s`", detail)
	}
	return w.readImage(ctx, a, p)
}
