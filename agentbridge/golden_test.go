package agentbridge

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codexReference says what testdata/golden/codex.json was matched to.
const codexReference = "@openai/codex 0.171.0 (npm, linux-x64 build: tool descriptions are that binary's strings); " +
	"shapes and the tools 0.171.0 no longer ships (read_file, list_dir, grep_files, the JSON apply_patch, shell_command, shell) from openai/codex codex-rs"

// goldenTool is one tool of a dialect as the golden file keeps it.
type goldenTool struct {
	Name        string          `json:"name"`
	Listed      bool            `json:"listed"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations Annotations     `json:"annotations"`
}

// goldenDialect renders every tool of dialect name, listed or not, with
// the annotations of its verb: what a harness that loads it sees.
func goldenDialect(t *testing.T, name, reference string) []byte {
	t.Helper()
	d, err := lookupDialect(name)
	require.NoError(t, err)
	ann := map[string]Annotations{}
	for _, v := range verbTable() {
		ann[v.name] = v.ann
	}
	var tools []goldenTool
	for _, tool := range d.tools {
		var schema any
		require.NoError(t, json.Unmarshal([]byte(tool.schema.text), &schema), tool.name)
		raw, err := json.MarshalIndent(schema, "    ", "  ")
		require.NoError(t, err)
		a := ann[tool.verb]
		if tool.ann != nil {
			a = *tool.ann
		}
		tools = append(tools, goldenTool{Name: tool.name, Listed: !tool.hidden, Description: tool.desc, InputSchema: raw, Annotations: a})
	}
	out, err := json.MarshalIndent(struct {
		Dialect   string       `json:"dialect"`
		Reference string       `json:"reference"`
		Tools     []goldenTool `json:"tools"`
	}{name, reference, tools}, "", "  ")
	require.NoError(t, err)
	return append(out, '\n')
}

// checkGolden compares got with testdata/golden/NAME.json; with
// VFSMOUNT_UPDATE_GOLDEN=1 (testdata/golden/update.sh) it rewrites it.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	if os.Getenv("VFSMOUNT_UPDATE_GOLDEN") == "1" {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run testdata/golden/update.sh to write it")
	if !bytes.Equal(want, got) {
		assert.Equal(t, string(want), string(got), "the %s dialect differs from %s; if the change is meant, run testdata/golden/update.sh and review the diff", name, path)
	}
}

// TestGoldenCodex pins the codex dialect's tools, descriptions and schemas
// to the reference they were matched to.
func TestGoldenCodex(t *testing.T) {
	checkGolden(t, DialectCodex, goldenDialect(t, DialectCodex, codexReference))
}

// TestGoldenClaude pins the claude dialect to Claude Code's release it was
// matched to (dialect_claude.go).
func TestGoldenClaude(t *testing.T) {
	checkGolden(t, DialectClaude, goldenDialect(t, DialectClaude, claudeReference))
}

// TestGoldenCursor pins the cursor (canonical) dialect to the Cursor SDK
// release it was matched to (dialect_cursor.go).
func TestGoldenCursor(t *testing.T) {
	checkGolden(t, DialectCursor, goldenDialect(t, DialectCursor, cursorReference))
}
