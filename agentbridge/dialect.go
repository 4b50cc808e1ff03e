package agentbridge

import (
	"context"
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
	schema  toolSchema
	rename  map[string]string // dialect key -> canonical key
	reshape func(a *args) error
	// run, when set, runs the tool instead of its verb's function: a tool
	// that shapes the verb's work differently (codex's exec_command keeps
	// a process running past its call). Which verb it is still decides
	// whether it is offered, its hints, and what policy sees.
	run func(w *Workspace, ctx context.Context, a *args) (string, error)
	// hidden tools are served when called but not listed: the legacy
	// names a dialect still answers to (codex's argv shell).
	hidden bool
	// ann, when set, are the tool's MCP hints instead of its verb's: a
	// tool of the shell verb that only reads (Claude Code's TaskOutput).
	ann *Annotations
	// patchResult, when set, shapes the result of an apply_patch typed
	// into this shell tool (verbs_shell_patch.go), as the harness shows it.
	patchResult func(text string) string
}

// keys is the set of argument names the tool's schema has: what parseArgs
// accepts, with the aliases its rename adds.
func (t *dialectTool) keys() map[string]bool { return t.schema.keys }

func (d *dialect) find(name string) *dialectTool {
	for _, t := range d.tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

// dialects is the registry, plain data built once with the package. A new
// dialect is a name above and in Dialects, a row here, and its tools and
// their runs in dialect_NAME.go: each a name, a schema, and the renames
// and reshapes onto a canonical verb.
var dialects = map[string]*dialect{
	DialectCursor: {name: DialectCursor, tools: cursorTools()},
	DialectClaude: {name: DialectClaude, tools: claudeTools()},
	DialectCodex:  {name: DialectCodex, tools: codexTools()},
}

// ShellTool reports whether tool runs the shell verb in dialect ("" is
// canonical): a caller that builds the kernel face only for the shell
// (vfsmount call) asks this.
func ShellTool(dialect, tool string) bool {
	d, err := lookupDialect(dialect)
	if err != nil {
		return false
	}
	t := d.find(tool)
	return t != nil && t.verb == VerbShell
}

// DialectTools lists every tool dialect serves, in its order: those it
// lists to a model and those it serves unlisted (aliases a model trained
// on the harness may still call). The checkpoint family ([CheckpointVerbs]),
// readLints ([LintVerbs]) and semSearch ([VerbSemSearch]) are in every
// dialect, and not among them. A caller that must account for every way
// into the workspace (a security test) iterates these.
func DialectTools(dialect string) ([]string, error) {
	d, err := lookupDialect(dialect)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(d.tools))
	for i, t := range d.tools {
		out[i] = t.name
	}
	return out, nil
}

type dialectKey struct{}

// withDialect gives the call's dialect to the code below it, so a hint
// deep in a verb names the caller's tools (toolName).
func withDialect(ctx context.Context, d *dialect) context.Context {
	return context.WithValue(ctx, dialectKey{}, d)
}

// toolName is the name the calling dialect gives verb, for hints ("use
// list_dir to list it"); the canonical name when the dialect has none or
// the call is not in one.
func toolName(ctx context.Context, verb string) string {
	if d, ok := ctx.Value(dialectKey{}).(*dialect); ok && d != nil {
		for _, t := range d.tools {
			if t.verb == verb && !t.hidden {
				return t.name
			}
		}
	}
	return verb
}

// listHint is how the calling dialect lists a directory, for "is a
// directory" errors: its ls tool, or ls in its shell when it lists none
// (Claude Code has no LS any more).
func listHint(ctx context.Context) string {
	if d, ok := ctx.Value(dialectKey{}).(*dialect); ok && d != nil {
		for _, t := range d.tools {
			if t.verb == VerbLs && !t.hidden {
				return "use " + t.name + " to list it"
			}
		}
		return "list it with ls in " + toolName(ctx, VerbShell)
	}
	return "use " + VerbLs + " to list it"
}

// argName is what the calling dialect names verb's tool and its argument
// key (a canonical key), for a hint that tells the caller what to pass
// next ("call read_file with offset=…"); ok is false when that tool has no
// such argument (codex's grep_files has no offset), so the hint must say
// something else. Outside a dialect they are the verb and the key, as
// toolName has it. (Every call is in one: [Workspace.Call] puts it in ctx.
// That is also why this does not look the canonical dialect up: a tool's
// run reaches here, so the registry cannot be named here.)
func argName(ctx context.Context, verb, key string) (tool, arg string, ok bool) {
	d, _ := ctx.Value(dialectKey{}).(*dialect)
	if d == nil {
		return verb, key, true
	}
	for _, t := range d.tools {
		if t.verb != verb || t.hidden {
			continue
		}
		arg = dialectArg(t.rename, t.keys(), key)
		return t.name, arg, t.keys()[arg]
	}
	return verb, key, false
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

// A toolSchema is a tool's input schema: its JSON text, as a harness gets
// it, and the argument names it has.
type toolSchema struct {
	text string
	keys map[string]bool
}

// schema is the input schema of an object with props.
func schema(props ...prop) toolSchema {
	return encodeSchema(schemaObject(props))
}

// schemaObject is the schema of props as a JSON value, for a dialect that
// adds to it (codex's strictSchema).
func schemaObject(props []prop) map[string]any {
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
	return m
}

// encodeSchema encodes a schema object made by schemaObject. Its values are
// strings, booleans, numbers, and maps and slices of them, which
// encoding/json always encodes, so there is no error to report; the golden
// files pin every schema's text.
func encodeSchema(m map[string]any) toolSchema {
	b, _ := json.Marshal(m)
	s := toolSchema{text: string(b), keys: map[string]bool{}}
	if ps, ok := m["properties"].(map[string]any); ok {
		for k := range ps {
			s.keys[k] = true
		}
	}
	return s
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

func needKey(k string) func(a *args) error {
	return func(a *args) error {
		if !a.present(k) {
			return a.missing(k)
		}
		return nil
	}
}
