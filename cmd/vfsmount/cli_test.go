package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(name, []byte(content), 0o644))
}

// runCLI runs the command line in-process.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = newApp(&out, &errOut).main(context.Background(), args)
	return code, out.String(), errOut.String()
}

// commandNames lists the subcommands, in the order help shows them.
func commandNames() []string {
	var names []string
	for _, c := range newApp(io.Discard, io.Discard).commands() {
		names = append(names, c.Name())
	}
	return names
}

// mounted reports whether dir appears in /proc/mounts.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/mounts")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

// TestBadInput: every kind of bad input is exit 2 with one line naming the
// culprit, and nothing gets mounted. These fail before the kernel is
// involved, so they run in-process.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	file := filepath.Join(dir, "file")
	writeFile(t, file, "x")
	typeErr := filepath.Join(dir, "typeerr.yaml")
	writeFile(t, typeErr, "# workspace\nmounts: memory\n")
	unknownKey := filepath.Join(dir, "unknownkey.yaml")
	writeFile(t, unknownKey, "mounts:\n  - type: memory\n    dst: /m\n    colour: blue\n")
	dupDst := filepath.Join(dir, "dup.yaml")
	writeFile(t, dupDst, "mounts:\n  - {type: memory, dst: /memory}\n")

	tests := []struct {
		name string
		args []string
		want string // the whole stderr line, without "vfsmount: " and "\n"
	}{
		{"unknown type", []string{"mount", "--mount", "type=nope,dst=/x", mnt},
			`--mount "type=nope,dst=/x": unknown mount type "nope" (known: {known})`},
		{"missing dst", []string{"mount", "--mount", "type=memory", mnt},
			`--mount "type=memory": missing key "dst" (an absolute path such as /memory)`},
		{"relative dst", []string{"mount", "-m", "type=memory,dst=memory", mnt},
			`--mount "type=memory,dst=memory": dst "memory" must be an absolute path (start with /)`},
		{"unclean dst", []string{"mount", "--mount=type=memory,dst=/memory/../m", mnt},
			`--mount "type=memory,dst=/memory/../m": dst "/memory/../m" is not clean (did you mean "/m"?)`},
		{"duplicate dst", []string{"mount", "--mount", "type=memory,dst=/m", "--mount", "type=memory,dst=/m", mnt},
			`--mount "type=memory,dst=/m": dst "/m" is already mounted by --mount "type=memory,dst=/m"`},
		{"duplicate dst across config and flag", []string{"mount", "--config", dupDst, "--mount", "type=memory,dst=/memory", mnt},
			`--mount "type=memory,dst=/memory": dst "/memory" is already mounted by ` + dupDst + `:2`},
		{"unknown option key", []string{"mount", "--mount", "type=memory,dst=/m,colour=blue", mnt},
			`--mount "type=memory,dst=/m,colour=blue": unknown key "colour" for type memory (allowed: type, dst, max_bytes, max_files, persist)`},
		{"unknown option key in config", []string{"mount", "--config", unknownKey, mnt},
			unknownKey + `:2: unknown key "colour" for type memory (allowed: type, dst, max_bytes, max_files, persist)`},
		{"mountpoint missing", []string{"mount", filepath.Join(dir, "nope")},
			"mountpoint " + filepath.Join(dir, "nope") + ": no such directory (create it: mkdir -p " + filepath.Join(dir, "nope") + ")"},
		{"mountpoint is a file", []string{"mount", file},
			"mountpoint " + file + ": not a directory"},
		{"config missing", []string{"mount", "--config", filepath.Join(dir, "none.yaml"), mnt},
			"config " + filepath.Join(dir, "none.yaml") + ": cannot read: no such file or directory"},
		{"config unreadable", []string{"mount", "-c", dir, mnt},
			"config " + dir + ": cannot read: is a directory"},
		{"yaml type error", []string{"mount", "--config", typeErr, mnt},
			typeErr + ":2: want a list of mounts, got a string (memory)"},
		{"unknown flag", []string{"mount", "--bogus", mnt},
			"mount: unknown flag: --bogus (see vfsmount help mount)"},
		{"unknown global flag", []string{"--bogus", "mount", mnt},
			"unknown flag: --bogus (see vfsmount help)"},
		{"bad log format", []string{"--log-format", "xml", "mount", mnt},
			`--log-format "xml": want text or json`},
		{"missing mountpoint argument", []string{"mount"},
			"mount: want 1 argument(s), got 0 (usage: vfsmount mount [--config FILE] [--mount SPEC]... MOUNTPOINT)"},
		{"extra argument", []string{"mount", mnt, mnt},
			"mount: want 1 argument(s), got 2 (usage: vfsmount mount [--config FILE] [--mount SPEC]... MOUNTPOINT)"},
		{"unknown command", []string{"mounty", mnt},
			`unknown command "mounty" (see vfsmount help)`},
		{"umount missing mountpoint", []string{"umount", filepath.Join(dir, "nope")},
			"mountpoint " + filepath.Join(dir, "nope") + ": no such directory (create it: mkdir -p " + filepath.Join(dir, "nope") + ")"},
		{"help for unknown command", []string{"help", "nope"},
			`help: unknown command "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			assert.Equal(t, exitUsage, code, "exit code; stderr: %s", stderr)
			assert.Equal(t, "vfsmount: "+strings.ReplaceAll(tc.want, "{known}", mountTypes().names())+"\n", stderr)
			assert.Empty(t, stdout)
			assert.False(t, mounted(t, mnt), "nothing is mounted")
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, stdout, stderr := runCLI(args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.Empty(t, stderr)
		for _, name := range commandNames() {
			assert.Contains(t, stdout, "\n  "+name+" ", "%v lists %s", args, name)
		}
	}
	for _, name := range commandNames() {
		for _, args := range [][]string{{"help", name}, {name, "--help"}, {name, "-h"}} {
			code, stdout, stderr := runCLI(args...)
			assert.Equal(t, 0, code, "%v", args)
			assert.Empty(t, stderr)
			assert.True(t, strings.HasPrefix(stdout, "Usage: vfsmount "+name), "%v: %q", args, stdout)
			assert.Regexp(t, `(?s)\nExample:\n(.*\n)?  \$ vfsmount `+name, stdout, "%v has a worked example", args)
			assert.Contains(t, stdout, "--log-format", "%v lists the global flags", args)
		}
	}
	code, stdout, _ := runCLI("help", "mount")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "--mount type=memory,dst=/memory", "help mount lists the mount types")

	code, _, stderr := runCLI()
	assert.Equal(t, exitUsage, code, "no command")
	assert.Contains(t, stderr, "Commands:")
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := runCLI("version")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "vfsmount "+version, lines[0])
	assert.Regexp(t, `^go +go1\.\d+`, lines[1])
	assert.Regexp(t, `^go-fuse +\S+$`, lines[2])
}

func TestExitCode(t *testing.T) {
	assert.Equal(t, 0, exitCode(nil))
	assert.Equal(t, 1, exitCode(os.ErrClosed))
	assert.Equal(t, 2, exitCode(usageErrorf("x")))
	assert.Equal(t, 1, exitCode(&exitError{code: 1}))
	assert.Equal(t, "a b c", errorLine(usageErrorf("a\n  b\n\nc")))
}
