package examples_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/fusetest"
)

// claudeSettings is the part of Claude Code's settings the example sets.
type claudeSettings struct {
	EnabledMcpjsonServers []string `json:"enabledMcpjsonServers"`
	Permissions           struct {
		Allow []string `json:"allow"`
	} `json:"permissions"`
}

// codexServer reads the [mcp_servers.NAME] table of a Codex config.toml
// written as the example is: one key = value per line, string values and
// string arrays in double quotes (the JSON-compatible part of TOML).
func codexServer(t *testing.T, path, name string) map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]json.RawMessage{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			in = line == "[mcp_servers."+name+"]"
		case in:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "%s: %q is not key = value", path, line)
			raw := json.RawMessage(strings.TrimSpace(v))
			require.True(t, json.Valid(raw), "%s: the value of %s is not a plain string or string array", path, k)
			out[strings.TrimSpace(k)] = raw
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// TestShippedHarnessConfigs checks the shape of every shipped harness
// config: the server is named vfsmount (Claude Code reserves workspace),
// it runs vfsmount mcp in the harness's dialect, and the approval settings
// the docs promise are there.
func TestShippedHarnessConfigs(t *testing.T) {
	for file, dialect := range map[string]string{"claude-code/.mcp.json": "claude", "cursor/mcp.json": "cursor"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var cfg mcpConfig
		require.NoError(t, json.Unmarshal(data, &cfg), file)
		assert.NotContains(t, cfg.MCPServers, "workspace", "%s: Claude Code does not load a server named workspace", file)
		require.Contains(t, cfg.MCPServers, "vfsmount", file)
		assert.Equal(t, []string{"--dialect", dialect}, cfg.MCPServers["vfsmount"].Args[len(cfg.MCPServers["vfsmount"].Args)-2:], file)
	}

	data, err := os.ReadFile("claude-code/settings.local.json")
	require.NoError(t, err)
	var set claudeSettings
	require.NoError(t, json.Unmarshal(data, &set))
	assert.Equal(t, []string{"vfsmount"}, set.EnabledMcpjsonServers, "approves the project server")
	assert.Equal(t, []string{"mcp__vfsmount"}, set.Permissions.Allow)

	srv := codexServer(t, "codex/config.toml", "vfsmount")
	assert.JSONEq(t, `"vfsmount"`, string(srv["command"]))
	assert.JSONEq(t, `["mcp", "--config", "vfsmount.yaml", "--dialect", "codex"]`, string(srv["args"]))
	assert.JSONEq(t, `"approve"`, string(srv["default_tools_approval_mode"]), "Codex refuses destructive tools otherwise")

	for _, doc := range []string{"claude-code/README.md", "cursor/README.md"} {
		data, err := os.ReadFile(doc)
		require.NoError(t, err)
		assert.NotContains(t, string(data), `"workspace": {`, doc)
	}
	readme, err := os.ReadFile("claude-code/README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), `claude --tools ""`, "the way to leave only the workspace's tools")
}

// TestClaudeCodeLoadsConfig runs the real Claude Code CLI's `claude mcp
// list` (no model needed) on a project holding the shipped .mcp.json and
// settings: the server must connect. Without the settings it waits for
// approval, and under the old name it is refused: both checked, so the test
// sees what a user would. CI installs claude (.ci/run); elsewhere it runs
// when claude is on PATH.
func TestClaudeCodeLoadsConfig(t *testing.T) {
	claude, err := exec.LookPath("claude")
	if err != nil {
		if fusetest.Required() {
			t.Fatal("claude is required with VFSMOUNT_REQUIRE_FUSE=1 (.ci/run installs @anthropic-ai/claude-code with npm)")
		}
		t.Skip("claude (npm @anthropic-ai/claude-code) is not on PATH")
	}
	fusetest.Need(t)
	// The config runs "vfsmount" from PATH, as a user's install has it.
	binDir := t.TempDir()
	require.NoError(t, os.Symlink(vfsmountBinary(t), filepath.Join(binDir, "vfsmount")))
	project := gitProject(t)
	mcpJSON, err := os.ReadFile("claude-code/.mcp.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), mcpJSON, 0o644))
	home := t.TempDir()
	list := func() string {
		t.Helper()
		cmd := exec.Command(claude, "mcp", "list")
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+binDir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	assert.Contains(t, list(), "vfsmount: vfsmount mcp --config vfsmount.yaml --dialect claude - ⏸ Pending approval", "a project server waits for approval")

	settings, err := os.ReadFile("claude-code/settings.local.json")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), settings, 0o644))
	// Claude Code 2.1.332 applies a project's settings.local.json only in
	// a workspace the user trusted (its trust dialog, recorded in
	// ~/.claude.json).
	assert.Contains(t, list(), "⏸ Pending approval", "an untrusted workspace's settings are gated")
	trust, err := json.Marshal(map[string]any{"projects": map[string]any{project: map[string]any{"hasTrustDialogAccepted": true}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude.json"), trust, 0o600))
	assert.Contains(t, list(), "vfsmount: vfsmount mcp --config vfsmount.yaml --dialect claude - ✔ Connected")

	old := strings.Replace(string(mcpJSON), `"vfsmount": {`, `"workspace": {`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(old), 0o644))
	assert.Contains(t, list(), `"workspace" is a reserved MCP server name and was not loaded`, "why the server is not called workspace")
	assert.Empty(t, mountsUnder(t, project))
}
