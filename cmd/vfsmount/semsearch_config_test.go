package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/semsearch/semsearchtest"
)

// TestSemsearchConfigBadInput: each mistake in the semsearch: section is
// a usage error of one line naming its key.
func TestSemsearchConfigBadInput(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"no endpoint", "semsearch: {model: m}\n", "config: semsearch.endpoint: required"},
		{"no model", "semsearch: {endpoint: http://127.0.0.1:11434}\n", "config: semsearch.model: required"},
		{"not a URL", "semsearch: {endpoint: 'localhost:11434', model: m}\n", `config: semsearch.endpoint: "localhost:11434" is not an http:// or https:// URL`},
		{"other scheme", "semsearch: {endpoint: 'ftp://h/v1', model: m}\n", `config: semsearch.endpoint: "ftp://h/v1" is not an http:// or https:// URL`},
		{"credentials", "semsearch: {endpoint: 'https://u:secret@h/v1', model: m}\n", `config: semsearch.endpoint: "https://u:xxxxx@h/v1" has credentials in it`},
		{"query", "semsearch: {endpoint: 'https://h/v1?key=1', model: m}\n", "config: semsearch.endpoint: \"https://h/v1?key=1\" has a query or fragment"},
		{"a key in the config", "semsearch: {endpoint: http://h, model: m, api_key: sk-123}\n", "config: semsearch.api_key: a key is not written in the config"},
		{"bad variable", "semsearch: {endpoint: http://h, model: m, api_key_env: 1KEY}\n", `config: semsearch.api_key_env: "1KEY" is not an environment variable name`},
		{"unset variable", "semsearch: {endpoint: http://h, model: m, api_key_env: VFSMOUNT_TEST_UNSET_KEY}\n", "config: semsearch.api_key_env: $VFSMOUNT_TEST_UNSET_KEY is not set"},
		{"unknown key", "semsearch: {endpoint: http://h, model: m, modle: x}\n", `unknown key "modle"`},
		{"allowlist without endpoint", "tools: [read, semSearch]\n", `"semSearch" cannot be served: no embeddings endpoint is configured`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runTool(context.Background(), "tools", "--config", writeConfig(t, tt.yaml))
			assert.Equal(t, exitUsage, code, errOut)
			assert.Contains(t, errOut, tt.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
			assert.NotContains(t, errOut, "secret")
		})
	}
}

func toolNames(t *testing.T, out string) []string {
	t.Helper()
	var defs []agentbridge.ToolDef
	require.NoError(t, json.Unmarshal([]byte(out), &defs))
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return names
}

// TestSemsearchConfigServes: with the section, tools lists semSearch in
// every dialect and call answers it through the endpoint, with the key
// from its variable and the vectors in the cache directory the section
// names (relative to the config file), or else --cache-dir; without it,
// no semSearch.
func TestSemsearchConfigServes(t *testing.T) {
	ctx := context.Background()
	srv := semsearchtest.Start(t)
	host := t.TempDir()
	writeFile(t, filepath.Join(host, "cfg.go"), "package cfg\n\n// parseConfig reads the config file.\nfunc parseConfig(path string) error {\n\treturn nil\n}\n")
	writeFile(t, filepath.Join(host, "notes.md"), "The server listens on a socket.\n")
	mount := "type=host,src=" + host + ",dst=/host"
	t.Setenv("VFSMOUNT_TEST_EMBED_KEY", "sk-test-123")

	code, out, errOut := runTool(ctx, "tools", "--json", "--mount", mount, "--config", writeConfig(t, ""))
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, toolNames(t, out), "semSearch", "no section, no tool")

	cfg := writeConfig(t, "semsearch:\n  endpoint: "+srv.URL+"/v1\n  model: nomic-embed-text\n  api_key_env: VFSMOUNT_TEST_EMBED_KEY\n  cache: vectors\n")
	for _, d := range agentbridge.Dialects {
		code, out, errOut = runTool(ctx, "tools", "--json", "--dialect", d, "--mount", mount, "--config", cfg)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, toolNames(t, out), "semSearch", d)
	}
	assert.Equal(t, int64(0), srv.Requests.Load(), "listing the tools calls nothing")

	code, out, errOut = runTool(ctx, "call", "--mount", mount, "--config", cfg, "semSearch", `{"query": "parse config file"}`)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.True(t, strings.HasPrefix(out, "/host/cfg.go:3-6 (score "), out)
	assert.Contains(t, out, "     4\tfunc parseConfig(path string) error {")
	for _, a := range srv.Auth() {
		assert.Equal(t, "Bearer sk-test-123", a)
	}
	assert.Equal(t, "nomic-embed-text", srv.Models()[0])
	blobs, err := filepath.Glob(filepath.Join(filepath.Dir(cfg), "vectors", "semsearch", "*", "blobs", "*", "*"))
	require.NoError(t, err)
	assert.Len(t, blobs, 2, "a vector file per blob, in the cache the section names")

	// Without cache:, the vectors go to --cache-dir.
	cacheDir := t.TempDir()
	cfg = writeConfig(t, "semsearch:\n  endpoint: "+srv.URL+"\n  model: nomic-embed-text\n")
	code, out, errOut = runTool(ctx, "call", "--mount", mount, "--config", cfg, "--cache-dir", cacheDir, "semSearch", `{"query": "socket server"}`)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.True(t, strings.HasPrefix(out, "/host/notes.md:1-1 (score "), out)
	_, err = os.Stat(filepath.Join(cacheDir, "semsearch"))
	require.NoError(t, err)

	// An endpoint that is down: the call is a tool error (exit 1)
	// naming it; the workspace's other tools answer.
	srv.Status.Store(503)
	code, out, _ = runTool(ctx, "call", "--mount", mount, "--config", cfg, "--cache-dir", cacheDir, "semSearch", `{"query": "socket server"}`)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, out, "semSearch: embeddings endpoint "+srv.URL+" answered 503")
}
