package agentbridge

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fidelity check: the pinned harness releases, installed from npm,
// against the dialects. Each listed tool's argument names, which of them
// are required, and their descriptions are compared with the harness's
// own schema, and the result and error strings the dialects record are
// looked for in the harness's code, so the next release that changes a
// tool is a failing diff here, not a silent drift. It downloads about
// 360 MB (the Claude Code and Codex linux-x64 binaries), so it runs only
// with VFSMOUNT_FIDELITY=1 (make fidelity); VFSMOUNT_FIDELITY_DIR keeps the
// packages between runs.

// The releases the dialects are matched to.
const (
	fidelityClaude = "2.1.332"
	fidelityCodex  = "0.171.0"
	fidelityCursor = "1.0.32"
)

// fidelityPackages fetches the pinned packages with npm pack and unpacks
// them: name -> directory holding the package's files.
func fidelityPackages(t *testing.T) map[string]string {
	t.Helper()
	if os.Getenv("VFSMOUNT_FIDELITY") != "1" {
		t.Skip("the fidelity check installs the pinned harness releases from npm; run it with VFSMOUNT_FIDELITY=1 (make fidelity)")
	}
	dir := os.Getenv("VFSMOUNT_FIDELITY_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	specs := map[string]string{
		"claude":        "@anthropic-ai/claude-code@" + fidelityClaude,
		"claude-binary": "@anthropic-ai/claude-code-linux-x64@" + fidelityClaude,
		"codex-binary":  "@openai/codex@" + fidelityCodex + "-linux-x64",
		"cursor":        "@cursor/sdk@" + fidelityCursor,
	}
	out := map[string]string{}
	for name, spec := range specs {
		dst := filepath.Join(dir, name)
		if _, err := os.Stat(filepath.Join(dst, "package", "package.json")); err != nil {
			require.NoError(t, os.MkdirAll(dst, 0o755))
			cmd := exec.Command("npm", "pack", "--silent", spec)
			cmd.Dir = dst
			tgz, err := cmd.Output()
			require.NoError(t, err, "npm pack %s", spec)
			tar := exec.Command("tar", "xzf", strings.TrimSpace(string(tgz)))
			tar.Dir = dst
			b, err := tar.CombinedOutput()
			require.NoError(t, err, "%s", b)
		}
		out[name] = filepath.Join(dst, "package")
	}
	return out
}

// tsProp is one property of an interface in a .d.ts file.
type tsProp struct {
	desc string
	req  bool
}

var (
	tsInterface = regexp.MustCompile(`(?ms)^export interface (\w+) \{\n(.*?)^\}`)
	tsProperty  = regexp.MustCompile(`(?ms)^  /\*\*\n(.*?)\*/\n  ("?[\w-]+"?)(\??):`)
)

// tsInterfaces parses the interfaces of a json-schema-to-typescript file
// (Claude Code's sdk-tools.d.ts): name -> property -> description.
func tsInterfaces(src string) map[string]map[string]tsProp {
	out := map[string]map[string]tsProp{}
	for _, m := range tsInterface.FindAllStringSubmatch(src, -1) {
		props := map[string]tsProp{}
		for _, p := range tsProperty.FindAllStringSubmatch(m[2], -1) {
			var lines []string
			for _, l := range strings.Split(p[1], "\n") {
				l = strings.TrimSpace(l)
				l = strings.TrimPrefix(strings.TrimPrefix(l, "*"), " ")
				lines = append(lines, l)
			}
			props[strings.Trim(p[2], `"`)] = tsProp{desc: strings.TrimSpace(strings.Join(lines, "\n")), req: p[3] == ""}
		}
		out[m[1]] = props
	}
	return out
}

// schemaProps is a dialect tool's properties as the harness sees them.
func schemaProps(t *testing.T, tool *dialectTool) map[string]tsProp {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	require.NoError(t, json.Unmarshal([]byte(tool.schema.text), &s), tool.name)
	out := map[string]tsProp{}
	for k, v := range s.Properties {
		out[k] = tsProp{desc: v.Description}
	}
	for _, k := range s.Required {
		p := out[k]
		p.req = true
		out[k] = p
	}
	return out
}

// claudeInterfaces names the sdk-tools.d.ts interface of each listed
// claude tool.
var claudeInterfaces = map[string]string{
	"Read": "FileReadInput", "Write": "FileWriteInput", "Edit": "FileEditInput", "Glob": "GlobInput",
	"Grep": "GrepInput", "Bash": "BashInput", "TaskStop": "TaskStopInput", "NotebookEdit": "NotebookEditInput",
}

// claudeDescribedOtherwise are the property descriptions the dialect
// words for the workspace on purpose, and why; every other one is
// Claude Code's word for word.
var claudeDescribedOtherwise = map[string]string{
	"Bash.description": "Claude Code's runs to paragraphs on what the user sees; the workspace has no user face",
	"TaskStop.task_id": "the workspace has no agent teammates to stop by name",
}

func TestFidelityClaude(t *testing.T) {
	pkgs := fidelityPackages(t)
	src, err := os.ReadFile(filepath.Join(pkgs["claude"], "sdk-tools.d.ts"))
	require.NoError(t, err)
	ifaces := tsInterfaces(string(src))
	require.NotEmpty(t, ifaces["BashInput"], "sdk-tools.d.ts parsed")
	_, hasTaskOutput := ifaces["TaskOutputInput"]
	d, err := lookupDialect(DialectClaude)
	require.NoError(t, err)
	var listed []string
	for _, tool := range d.tools {
		if tool.hidden {
			if tool.name == "TaskOutput" {
				assert.False(t, hasTaskOutput, "Claude Code has TaskOutput again: list it")
			}
			continue
		}
		listed = append(listed, tool.name)
		iface, ok := claudeInterfaces[tool.name]
		require.True(t, ok, "no sdk-tools.d.ts interface named for %s", tool.name)
		theirs, ok := ifaces[iface]
		require.True(t, ok, "sdk-tools.d.ts has no %s any more (%s)", iface, tool.name)
		ours := schemaProps(t, tool)
		assert.Equal(t, sortedKeys(theirs), sortedKeys(ours), "%s's argument names", tool.name)
		for k, p := range theirs {
			o, ok := ours[k]
			if !ok {
				continue
			}
			assert.Equal(t, p.req, o.req, "%s.%s required", tool.name, k)
			if _, own := claudeDescribedOtherwise[tool.name+"."+k]; !own {
				assert.Equal(t, p.desc, o.desc, "%s.%s's description", tool.name, k)
			}
		}
	}
	sort.Strings(listed)
	assert.Equal(t, []string{"Bash", "Edit", "Glob", "Grep", "NotebookEdit", "Read", "TaskStop", "Write"}, listed)

	bin, err := os.ReadFile(filepath.Join(pkgs["claude-binary"], "claude"))
	require.NoError(t, err)
	for _, s := range []string{
		// dialect_claude.go's results and errors, as the binary's
		// JavaScript has them.
		"Command running in background with ID: ${e}. Output is being written to: ${n}.",
		"Command did not complete within its ${_e}s timeout and was moved to the background (ID: ${e}). Output is being written to: ${n}.",
		"It is running now: do not start a second copy while it runs. If it is no longer needed, stop it with ${Aa}.",
		"To check interim output, use ${Q} on that file path.",
		"No output had been read from it when it was moved. A program that buffers its output, or a pipe into one such as tail, can keep the output file empty until the command finishes.",
		"Output too large (${pn(e.originalSize)}). Full output saved to: ${e.filepath}",
		"Preview (first ${pn(r$)}):",
		`nie="<persisted-output>"`,
		"File content (${pn(t)}) exceeds maximum allowed size (${pn(e)}). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.",
		"To read it anyway, up to what still fits in your context, call ${Oe} again with ${KAe}: true \\u2014 only if you genuinely need all of it or the user asked for the whole file.",
		`[["-l","flag_l","files_with_matches"],["-c","flag_c","count"]]`,
		"<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
		"Successfully stopped task: ",
		"No task found with ID: ",
		"Missing required parameter: task_id",
		"[Showing results with pagination = ",
		// dialect_claude_notebook.go's.
		"File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.",
		"Cell type is required when using edit_mode=insert.",
		"Notebook file does not exist.",
		"Notebook is not valid JSON.",
		notebookInvalid,
		"Cell ID must be specified when not inserting a new cell.",
		"Cell with ID \"${n}\" not found in notebook.",
		"Cell with index ${h} does not exist in notebook.",
		"Updated cell ${e} with ${o}",
		"Inserted ${e?`cell ${e}`:\"a new cell\"} with ${o}",
		"Deleted cell ${e}",
	} {
		assert.True(t, bytes.Contains(bin, []byte(s)), "Claude Code %s no longer has %q", fidelityClaude, s)
	}
}

// codexFromEarlier are the listed codex tools 0.171.0 no longer ships,
// kept from codex-rs's earlier releases (dialect_codex.go says why).
var codexFromEarlier = map[string]string{
	"read_file":  "experimental_supported_tools of earlier model families",
	"list_dir":   "experimental_supported_tools of earlier model families",
	"grep_files": "experimental_supported_tools of earlier model families",
}

func TestFidelityCodex(t *testing.T) {
	pkgs := fidelityPackages(t)
	bin, err := os.ReadFile(filepath.Join(pkgs["codex-binary"], "vendor", "x86_64-unknown-linux-musl", "bin", "codex"))
	require.NoError(t, err)
	d, err := lookupDialect(DialectCodex)
	require.NoError(t, err)
	// codex-rs's tool descriptions and argument descriptions are string
	// constants of its binary: each the dialect lists is looked for.
	for _, tool := range d.tools {
		if tool.hidden || tool.name == "apply_patch" {
			continue // apply_patch's description is the JSON variant's, not a binary string
		}
		if why, ok := codexFromEarlier[tool.name]; ok {
			assert.False(t, bytes.Contains(bin, []byte(tool.desc)), "codex %s ships %s again (%s): match it to this release", fidelityCodex, tool.name, why)
			continue
		}
		assert.True(t, bytes.Contains(bin, []byte(tool.desc)), "codex %s: %s's description %q", fidelityCodex, tool.name, tool.desc)
		for k, p := range schemaProps(t, tool) {
			assert.True(t, bytes.Contains(bin, []byte(p.desc)), "codex %s: %s.%s's description %q", fidelityCodex, tool.name, k, p.desc)
		}
	}
	for _, s := range []string{
		"Process exited with code ", "Success. Updated the following files:", "Wall time", "Original token count",
		"Chunk ID", "Unknown process id ",
	} {
		assert.True(t, bytes.Contains(bin, []byte(s)), "codex %s no longer has %q", fidelityCodex, s)
	}
}

// cursorOwnArgs are the canonical verbs' arguments beyond the SDK's
// (TOOLS.md: the workspace's bounds and switches), which no tool-call
// type has.
var cursorOwnArgs = map[string]bool{
	"read.limit": true, "ls.depth": true, "ls.limit": true, "glob.limit": true,
	"grep.lineNumbers": true, "grep.noIgnore": true, "delete.recursive": true,
}

func TestFidelityCursor(t *testing.T) {
	pkgs := fidelityPackages(t)
	src, err := os.ReadFile(filepath.Join(pkgs["cursor"], "dist", "cjs", "vendor", "cursor-sdk-shared", "tool-call-types.d.ts"))
	require.NoError(t, err)
	d, err := lookupDialect(DialectCursor)
	require.NoError(t, err)
	// Every argument of every listed cursor tool is a field of the SDK's
	// tool-call types.
	for _, tool := range d.tools {
		if tool.hidden {
			continue
		}
		for k := range schemaProps(t, tool) {
			if cursorOwnArgs[tool.name+"."+k] {
				continue
			}
			assert.True(t, regexp.MustCompile(`\b`+regexp.QuoteMeta(k)+`\??:`).Match(src),
				"@cursor/sdk %s: %s's argument %q is in no tool-call type", fidelityCursor, tool.name, k)
		}
	}
}

// TestFidelityCursorOptional: readLints and semSearch take exactly the
// arguments of the SDK's ReadLintsArgs and SemSearchArgs, required where
// they are, and the SDK still has tool calls of those names.
func TestFidelityCursorOptional(t *testing.T) {
	pkgs := fidelityPackages(t)
	src, err := os.ReadFile(filepath.Join(pkgs["cursor"], "dist", "cjs", "vendor", "cursor-sdk-shared", "tool-call-types.d.ts"))
	require.NoError(t, err)
	field := regexp.MustCompile(`(?m)^\s{4}(\w+): (z\.ZodOptional<)?`)
	for _, c := range []struct {
		tool   *dialectTool
		schema string
	}{{lintTool, "ReadLintsArgsSchema"}, {semSearchTool, "SemSearchArgsSchema"}} {
		start := bytes.Index(src, []byte("export declare const "+c.schema+": z.ZodObject<{"))
		require.GreaterOrEqual(t, start, 0, "@cursor/sdk %s has no %s", fidelityCursor, c.schema)
		block := src[start:]
		block = block[:bytes.Index(block, []byte(`}, "strip"`))]
		want := map[string]bool{} // argument -> required
		for _, m := range field.FindAllSubmatch(block, -1) {
			want[string(m[1])] = len(m[2]) == 0
		}
		got := map[string]bool{}
		for k, p := range schemaProps(t, c.tool) {
			got[k] = p.req
		}
		assert.Equal(t, want, got, "%s against @cursor/sdk %s %s", c.tool.name, fidelityCursor, c.schema)
		assert.Contains(t, string(src), `type: z.ZodLiteral<"`+c.tool.name+`">`, "@cursor/sdk %s has no %s tool call", fidelityCursor, c.tool.name)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
