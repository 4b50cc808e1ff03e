package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/internal/fusetest"
)

func TestLintsConfig(t *testing.T) {
	load := func(t *testing.T, y string) ([]agentbridge.Linter, error) {
		t.Helper()
		file, _, err := parseConfig([]byte(y), "ws.yaml", "/cfg")
		if err != nil {
			return nil, err
		}
		return loadLintsConfig(file)
	}
	t.Run("none", func(t *testing.T) {
		ls, err := load(t, "mounts: []\n")
		require.NoError(t, err)
		assert.Nil(t, ls)
	})
	t.Run("every key", func(t *testing.T) {
		ls, err := load(t, `
lints:
  - {glob: "**/*.go", command: [go, vet, ./...]}
  - glob: "**/*.go"
    command: [gofmt, -l, {files}]
    format: files
    message: run gofmt -w
  - name: sc
    glob: /repo/**/*.go
    command: staticcheck -f sarif ./...
    format: sarif
    severity: warning
    env: [GOFLAGS=-mod=mod]
    roots: [go.work, go.mod]
    timeout: 5m
`)
		require.NoError(t, err)
		assert.Equal(t, []agentbridge.Linter{
			{Glob: "**/*.go", Command: []string{"go", "vet", "./..."}},
			{Glob: "**/*.go", Command: []string{"gofmt", "-l", "{files}"}, Format: "files", Message: "run gofmt -w"},
			{Name: "sc", Glob: "/repo/**/*.go", Command: []string{"staticcheck", "-f", "sarif", "./..."}, Format: "sarif", Severity: "warning",
				Env: []string{"GOFLAGS=-mod=mod"}, Roots: []string{"go.work", "go.mod"}, Timeout: 5 * time.Minute},
		}, ls, "an unquoted {files} in a flow list is the placeholder it was meant as")
	})
	for _, tc := range []struct{ name, yaml, msg string }{
		{"no glob", "lints:\n  - {command: [go, vet]}\n", "config: lints[0].glob: missing: say which files the linter checks, such as **/*.go"},
		{"bad glob", "lints:\n  - {glob: \"**/*.go\", command: [a]}\n  - {glob: \"[a\", command: [a]}\n", `config: lints[1].glob: "[a" is not a valid glob pattern`},
		{"no command", "lints:\n  - {glob: \"*\"}\n", "config: lints[0].command: missing: the linter's argv, such as [go, vet, ./...]"},
		{"empty command", "lints:\n  - {glob: \"*\", command: []}\n", "config: lints[0].command: missing: the linter's argv, such as [go, vet, ./...]"},
		{"unknown format", "lints:\n  - {glob: \"*\", command: [x], format: xml}\n", `config: lints[0].format: unknown format "xml" (known: line, files, sarif, json; leave it out to tell from the output)`},
		{"unknown severity", "lints:\n  - {glob: \"*\", command: [x], severity: fatal}\n", `config: lints[0].severity: unknown severity "fatal" (known: error, warning, information, hint)`},
		{"bad env", "lints:\n  - {glob: \"*\", command: [x], env: [FOO]}\n", `config: lints[0].env: "FOO" is not KEY=VALUE`},
		{"bad timeout", "lints:\n  - {glob: \"*\", command: [x], timeout: soon}\n", `ws.yaml:2: want a positive duration such as 30s, got the value "soon"`},
		{"unknown key", "lints:\n  - {glob: \"*\", command: [x], colour: blue}\n", `ws.yaml:2: unknown key "colour"`},
		{"not a list", "lints: {glob: \"*\"}\n", `ws.yaml:1: want a list of linters such as {glob: "**/*.go", command: [go, vet, ./...]}, got a mapping`},
		{"a nested command word", "lints:\n  - {glob: \"*\", command: [x, [y]]}\n", "ws.yaml:2: command: each word must be a plain value, got a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml)
			require.Error(t, err)
			assert.Equal(t, exitUsage, exitCode(err), "a usage error")
			assert.Equal(t, tc.msg, errorLine(err))
		})
	}
}

// TestLintsTool: the config's linters reach the tool face: tools lists
// readLints where a shell can run (bubblewrap works), a tools: list
// naming it without lints: is a usage error saying why, and call runs a
// real gofmt -l on a host directory. The shell's namespace sees the
// system directories and the workspace, so gofmt is put in the workspace
// (/tools) wherever the toolchain is.
func TestLintsTool(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "ok.go"), []byte("package p\n\nfunc A() {}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "bad.go"), []byte("package p\nfunc   B() {}\n"), 0o644))
	gofmt, err := exec.LookPath("gofmt")
	require.NoError(t, err)
	bin, err := os.ReadFile(gofmt)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tools"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tools", "gofmt"), bin, 0o755))
	cfg := filepath.Join(dir, "ws.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
mounts:
  - {type: host, src: src, dst: /src, ro: true}
  - {type: host, src: tools, dst: /tools, ro: true}
lints:
  - {glob: "**/*.go", command: [/tools/gofmt, -l, {files}], format: files}
`), 0o644))

	noLints := filepath.Join(dir, "nolints.yaml")
	require.NoError(t, os.WriteFile(noLints, []byte("mounts:\n  - {type: memory, dst: /memory}\ntools: [read, readLints]\n"), 0o644))
	code, _, errOut := runTool(ctx, "tools", "--config", noLints)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `tools: "readLints" cannot be served: no linters are configured (lints:)`)

	fusetest.Need(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		if fusetest.Required() {
			t.Fatalf("bubblewrap is required with VFSMOUNT_REQUIRE_FUSE=1: %v", err)
		}
		t.Skip("bubblewrap not installed")
	}
	code, out, errOut := runTool(ctx, "tools", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var defs []agentbridge.ToolDef
	require.NoError(t, json.Unmarshal([]byte(out), &defs))
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	assert.Contains(t, names, agentbridge.VerbReadLints)

	code, out, errOut = runTool(ctx, "call", "--config", cfg, agentbridge.VerbReadLints, `{"paths": ["/src"]}`)
	require.Equal(t, 0, code, errOut+out)
	assert.JSONEq(t, `{"fileDiagnostics": [{"path": "/src/bad.go", "diagnostics": [
		{"severity": "warning", "message": "the file is not formatted as gofmt wants it", "source": "gofmt", "code": ""}],
		"diagnosticsCount": 1}], "totalFiles": 2, "totalDiagnostics": 1}`, out)
	assertNoVfsmountMounts(t)
}
