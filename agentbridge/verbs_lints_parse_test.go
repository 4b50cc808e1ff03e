package agentbridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lintTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "lints", name))
	require.NoError(t, err)
	return string(b)
}

func TestLintParseGoVet(t *testing.T) {
	finds, rest := parseLineOutput(lintTestdata(t, "govet.txt"), "")
	assert.Empty(t, rest)
	assert.Equal(t, []finding{
		{file: "sub/s.go", line: 5, col: 12, severity: "error", message: "fmt.Println call has possible Printf formatting directive %d"},
		{file: "a.go", line: 6, col: 14, severity: "error", message: `fmt.Printf format %d has arg "x" of wrong type string`},
	}, finds)
}

func TestLintParseStaticcheckText(t *testing.T) {
	finds, rest := parseLineOutput(lintTestdata(t, "staticcheck.txt"), "warning")
	assert.Empty(t, rest)
	require.Len(t, finds, 3)
	assert.Equal(t, finding{file: "b.go", line: 3, col: 6, severity: "warning", message: "func unused is unused", code: "U1000"}, finds[1])
}

func TestLintParseGccStyle(t *testing.T) {
	finds, rest := parseLineOutput(lintTestdata(t, "gcc.txt"), "")
	assert.Equal(t, "main.c: In function 'main':\n", rest, "a line that is no diagnostic is kept for the raw note")
	assert.Equal(t, []finding{
		{file: "main.c", line: 4, col: 9, severity: "warning", message: "unused variable 'x' [-Wunused-variable]"},
		{file: "main.c", line: 6, col: 5, severity: "error", message: "'y' undeclared (first use in this function)"},
		{file: "main.c", line: 6, severity: "information", message: "each undeclared identifier is reported only once"},
	}, finds)
}

func TestLintParseFiles(t *testing.T) {
	finds := parseFilesOutput(lintTestdata(t, "gofmt-l.txt"), "", "", "gofmt")
	assert.Equal(t, []finding{{file: "/tmp/lt/m/c.go", severity: "warning", message: "the file is not formatted as gofmt wants it"}}, finds)
}

func TestLintParseSARIF(t *testing.T) {
	finds, err := parseSARIF([]byte(lintTestdata(t, "staticcheck.sarif")))
	require.NoError(t, err)
	assert.Equal(t, []finding{
		// No level on the result: the rule's default level.
		{file: "a.go", line: 6, col: 13, endLine: 6, endCol: 19, severity: "error", message: "Printf format %d has arg #1 of wrong type string", code: "SA5009"},
		{file: "b.go", line: 3, col: 6, severity: "warning", message: "func unused is unused", code: "U1000"},
		{file: "b.go", line: 6, col: 9, endLine: 6, endCol: 15, severity: "warning", message: "identical expressions on the left and right side of the '==' operator", code: "SA4000"},
	}, finds)

	// A result's own level, a file: URI and a base id.
	finds, err = parseSARIF([]byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},
		"originalUriBaseIds":{"SRC":{"uri":"file:///repo/"}},
		"results":[
		 {"ruleId":"R1","level":"note","message":{"text":"one"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"file:///memory/a%20b.go"},"region":{"startLine":2}}}]},
		 {"ruleId":"R2","message":{"text":"two"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"src/c.go","uriBaseId":"SRC"},"region":{"startLine":1,"startColumn":4}}}]},
		 {"ruleId":"R3","message":{"text":"nowhere"}}]}]}`))
	require.NoError(t, err)
	assert.Equal(t, []finding{
		{file: "/memory/a b.go", line: 2, severity: "information", message: "one", code: "R1"},
		{file: "/repo/src/c.go", line: 1, col: 4, severity: "warning", message: "two", code: "R2"},
	}, finds)

	for _, bad := range []string{`{"runs": 3}`, `{"version":"1.0.0","runs":[]}`, `{"hello":"world"}`, `{`} {
		_, err := parseSARIF([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestLintParseESLint(t *testing.T) {
	finds, err := parseESLint([]byte(lintTestdata(t, "eslint.json")))
	require.NoError(t, err)
	assert.Equal(t, []finding{
		{file: "/memory/web/src/app.js", line: 3, col: 7, endLine: 3, endCol: 8, severity: "error", message: "'x' is assigned a value but never used.", code: "no-unused-vars"},
		{file: "/memory/web/src/app.js", line: 5, col: 14, severity: "warning", message: "Missing semicolon.", code: "semi"},
	}, finds)
	_, err = parseESLint([]byte(`[{"messages":[]}]`))
	assert.Error(t, err)
	_, err = parseESLint([]byte(`[1, 2]`))
	assert.Error(t, err)
}

// An output no parser understands is shown raw with a one-line note;
// nothing panics, whatever the bytes.
func TestLintUnknownOutput(t *testing.T) {
	for _, tc := range []struct{ format, stdout, stderr string }{
		{LintAuto, "Everything is on fire\nreally\n", ""},
		{LintSARIF, "<xml/>", ""},
		{LintJSON, `{"not":"a list"}`, ""},
		{LintAuto, `{"version": 2, "runs": "no"`, "trailing"},
		{LintFiles, "", "lstat nosuch.go: no such file or directory\n"},
		{LintLine, "\x00\xff\xfe:::\n", ""},
	} {
		l := &Linter{Glob: "**", Command: []string{"tool"}, Format: tc.format}
		finds, raw := parseLintOutput(l, lintOutput{cmdline: "tool", dir: "/memory", exitCode: 1, stdout: tc.stdout, stderr: tc.stderr})
		assert.Empty(t, finds, tc)
		require.NotEmpty(t, raw, tc)
		note, body, _ := strings.Cut(raw, "\n")
		assert.True(t, strings.HasPrefix(note, "readLints: the output of tool (in /memory, exit code 1) "), note)
		assert.Contains(t, body, strings.TrimSpace(tc.stdout + tc.stderr)[:3])
	}
	// A long output is shown capped, its head and tail.
	long := strings.Repeat("no diagnostic here\n", 10000)
	_, raw := parseLintOutput(&Linter{Command: []string{"tool"}}, lintOutput{cmdline: "tool", dir: "/m", stdout: long + "THE END\n"})
	assert.Contains(t, raw, "bytes truncated; output is capped at 30000")
	assert.True(t, strings.HasSuffix(raw, "THE END\n"), "the tail is kept")
	assert.Less(t, len(raw), 31000)
	// A linter that says nothing but fails is said to.
	_, raw = parseLintOutput(&Linter{Command: []string{"tool"}}, lintOutput{cmdline: "tool", dir: "/m", exitCode: 2})
	assert.Equal(t, "readLints: tool (in /m) exited with code 2 and reported nothing.\n", raw)
	// A clean run is no note.
	finds, raw := parseLintOutput(&Linter{Command: []string{"tool"}}, lintOutput{cmdline: "tool", dir: "/m"})
	assert.Empty(t, finds)
	assert.Empty(t, raw)
}

func TestLintPath(t *testing.T) {
	assert.Equal(t, "memory/m/a.go", lintPath("memory/m", "a.go"))
	assert.Equal(t, "memory/m/a.go", lintPath("memory/m", "./a.go"))
	assert.Equal(t, "memory/a.go", lintPath("memory/m", "../a.go"))
	assert.Equal(t, "repo/x.go", lintPath("memory/m", "/repo/x.go"))
	assert.Equal(t, "repo/x.go", lintPath("memory/m", "file:///repo/x.go"))
}

func TestLinterCheck(t *testing.T) {
	good := Linter{Glob: "**/*.go", Command: []string{"go", "vet", "./..."}}
	require.NoError(t, good.Check())
	for _, tc := range []struct {
		mod  func(*Linter)
		want string
	}{
		{func(l *Linter) { l.Glob = "" }, "glob: missing"},
		{func(l *Linter) { l.Glob = "[a" }, `glob: "[a" is not a valid glob pattern`},
		{func(l *Linter) { l.Command = nil }, "command: missing"},
		{func(l *Linter) { l.Format = "xml" }, `format: unknown format "xml"`},
		{func(l *Linter) { l.Severity = "fatal" }, `severity: unknown severity "fatal"`},
		{func(l *Linter) { l.Env = []string{"NOEQUALS"} }, `env: "NOEQUALS" is not KEY=VALUE`},
		{func(l *Linter) { l.Roots = []string{"a/go.mod"} }, `roots: "a/go.mod" is not a file name`},
	} {
		l := good
		tc.mod(&l)
		err := l.Check()
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestLinterMatches(t *testing.T) {
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"**/*.go", "memory/m/a.go", true},
		{"**/*.go", "memory/m/a.txt", false},
		{"*.go", "memory/m/a.go", true},
		{"/repo/**/*.py", "repo/x/y.py", true},
		{"repo/**/*.py", "repo/y.py", true},
		{"/repo/**/*.py", "memory/y.py", false},
		{"Dockerfile", "repo/sub/Dockerfile", true},
	} {
		l := Linter{Glob: tc.glob}
		assert.Equal(t, tc.want, l.matches(tc.name), "%s on %s", tc.glob, tc.name)
	}
}
