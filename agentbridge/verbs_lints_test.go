package agentbridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// A Go module with something for each linter to find: go vet (a Printf
// verb of the wrong type in a.go and sub/s.go), gofmt -l (c.go) and
// staticcheck (an unused function and x == x in b.go).
var lintModule = map[string]string{
	"m/go.mod":    "module example.com/m\n\ngo 1.22\n",
	"m/a.go":      "package m\n\nimport \"fmt\"\n\nfunc F() {\n\tfmt.Printf(\"%d\\n\", \"x\")\n}\n",
	"m/b.go":      "package m\n\nfunc unused() {}\n\nfunc Same(a int) bool {\n\treturn a == a\n}\n",
	"m/c.go":      "package m\nfunc   C() {}\n",
	"m/sub/s.go":  "package sub\n\nimport \"fmt\"\n\nfunc G() { fmt.Println(\"%d\", 1) }\n",
	"m/notes.txt": "nothing to lint\n",
}

// goTool returns the output of the go command run in the module of this
// repository (go env, go tool -n).
func goTool(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err, "go %v", args)
	return strings.TrimSpace(string(out))
}

// lintWorkspace is a kernel-backed workspace (kernelWorkspaceOpts: FUSE
// and bubblewrap, which must be there with VFSMOUNT_REQUIRE_FUSE=1) with
// lintModule written to /memory/m through the tools, and real linters:
// go vet, gofmt -l and staticcheck -f sarif (this repository's go.mod
// tool, built by go tool -n). The Go toolchain, its build cache and the
// staticcheck binary are bound into the shell's namespace at their host
// paths (the cache writable, so vet finds the standard library compiled),
// and a cache directory for staticcheck too.
func lintWorkspace(t *testing.T, extra ...Linter) *Workspace {
	t.Helper()
	goroot := goTool(t, "env", "GOROOT")
	gocache := goTool(t, "env", "GOCACHE")
	staticcheck := goTool(t, "tool", "-n", "staticcheck")
	scCache := t.TempDir() // staticcheck's, kept across the calls of one test
	goEnv := []string{"PATH=" + filepath.Join(goroot, "bin") + ":/usr/bin:/bin", "GOCACHE=" + gocache, "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS="}
	lints := append([]Linter{
		{Glob: "**/*.go", Command: []string{"go", "vet", "./..."}, Env: goEnv},
		{Glob: "**/*.go", Command: []string{filepath.Join(goroot, "bin", "gofmt"), "-l", "{files}"}, Format: LintFiles},
		{Name: "staticcheck", Glob: "**/*.go", Command: []string{staticcheck, "-f", "sarif", "./..."}, Env: append(goEnv, "STATICCHECK_CACHE="+scCache)},
	}, extra...)
	w := kernelWorkspaceOpts(t, nil, func(o *Options) {
		o.Shell.Binds = append(o.Shell.Binds, ShellBind{Path: goroot}, ShellBind{Path: gocache, Writable: true}, ShellBind{Path: staticcheck}, ShellBind{Path: scCache, Writable: true})
		o.Lints = lints
	})
	for p, c := range lintModule {
		ok(t, w, "write", obj{"path": "/memory/" + p, "fileText": c})
	}
	return w
}

type lintAnswer struct {
	FileDiagnostics []struct {
		Path        string `json:"path"`
		Diagnostics []struct {
			Severity string `json:"severity"`
			Range    *struct {
				Start struct{ Line, Character int }  `json:"start"`
				End   *struct{ Line, Character int } `json:"end"`
			} `json:"range"`
			Message string `json:"message"`
			Source  string `json:"source"`
			Code    string `json:"code"`
		} `json:"diagnostics"`
		DiagnosticsCount int `json:"diagnosticsCount"`
	} `json:"fileDiagnostics"`
	TotalFiles       int `json:"totalFiles"`
	TotalDiagnostics int `json:"totalDiagnostics"`
}

// readLintsOK calls readLints on paths and decodes the JSON it answers,
// which must be all of its text.
func readLintsOK(t *testing.T, w *Workspace, dialect string, paths ...string) (lintAnswer, map[string][]string) {
	t.Helper()
	ans, got, rest := readLintsNotes(t, w, dialect, paths...)
	require.Empty(t, rest, "more than the JSON")
	return ans, got
}

// readLintsNotes is readLintsOK when notes may follow the JSON: it
// returns them too.
func readLintsNotes(t *testing.T, w *Workspace, dialect string, paths ...string) (lintAnswer, map[string][]string, string) {
	t.Helper()
	res := call(t, w, dialect, VerbReadLints, obj{"paths": paths})
	require.False(t, res.IsError, res.Text)
	var ans lintAnswer
	dec := json.NewDecoder(strings.NewReader(res.Text))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&ans), res.Text)
	rest, err := io.ReadAll(dec.Buffered())
	require.NoError(t, err)
	// path -> "source code line:char severity message", for asserts.
	got := map[string][]string{}
	total := 0
	for _, f := range ans.FileDiagnostics {
		assert.Equal(t, len(f.Diagnostics), f.DiagnosticsCount, f.Path)
		total += f.DiagnosticsCount
		got[f.Path] = []string{}
		for _, d := range f.Diagnostics {
			pos := "-"
			if d.Range != nil {
				pos = strings.TrimSpace(strings.Join([]string{itoa(d.Range.Start.Line), itoa(d.Range.Start.Character)}, ":"))
			}
			got[f.Path] = append(got[f.Path], strings.TrimSpace(d.Source+" "+d.Code)+" "+pos+" "+d.Severity+" "+d.Message)
		}
	}
	assert.Equal(t, total, ans.TotalDiagnostics)
	return ans, got, strings.TrimSpace(string(rest))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestReadLintsRealLinters(t *testing.T) {
	w := lintWorkspace(t,
		Linter{Glob: "**/*.nostart", Command: []string{"no-such-linter-here", "{files}"}},
		Linter{Glob: "**/*.txt", Command: []string{"/bin/echo", "Everything is on fire"}},
	)
	for _, dialect := range Dialects {
		defs, err := w.Tools(dialect)
		require.NoError(t, err)
		var def *ToolDef
		for i := range defs {
			if defs[i].Name == VerbReadLints {
				def = &defs[i]
			}
		}
		require.NotNil(t, def, "readLints in %s", dialect)
		assert.Equal(t, Annotations{ReadOnly: true, Idempotent: true}, def.Annotations)
		assert.JSONEq(t, `{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"},"description":"Workspace paths of files or directories (every file below) to read diagnostics for; absolute, or relative to the session's directory"}},"required":["paths"]}`,
			string(def.InputSchema))
	}
	assert.Contains(t, w.Brief(), VerbReadLints)

	t.Run("a named file: go vet, gofmt and staticcheck on it alone", func(t *testing.T) {
		ans, got := readLintsOK(t, w, "", "/memory/m/b.go", "/memory/m/a.go")
		assert.Equal(t, map[string][]string{
			"/memory/m/a.go": {
				`go 6:14 error fmt.Printf format %d has arg "x" of wrong type string`,
				`staticcheck SA5009 6:13 error Printf format %d has arg #1 of wrong type string`,
			},
			"/memory/m/b.go": {
				"staticcheck U1000 3:6 warning func unused is unused",
				"staticcheck SA4000 6:9 warning identical expressions on the left and right side of the '==' operator",
			},
		}, got, "sub/s.go and c.go were not asked about")
		assert.Equal(t, 2, ans.TotalFiles)
	})
	t.Run("a directory: every file below, relative to the session's directory", func(t *testing.T) {
		ans, got := readLintsOK(t, w, DialectClaude, "m/sub", "m/c.go")
		assert.Equal(t, map[string][]string{
			"/memory/m/c.go":     {"gofmt - warning the file is not formatted as gofmt wants it"},
			"/memory/m/sub/s.go": {"go 5:12 error fmt.Println call has possible Printf formatting directive %d"},
		}, got)
		assert.Equal(t, 2, ans.TotalFiles)
	})
	t.Run("the whole module", func(t *testing.T) {
		ans, got, notes := readLintsNotes(t, w, DialectCodex, "/memory/m/")
		assert.Len(t, got, 4, "a, b, c and sub/s: the files with diagnostics")
		assert.Equal(t, 5, ans.TotalFiles, "the four Go files and notes.txt")
		assert.Equal(t, 6, ans.TotalDiagnostics)
		assert.Equal(t, "readLints: the output of /bin/echo Everything is on fire (in /memory/m, exit code 0) is not in the line format; it follows as printed:\nEverything is on fire", notes,
			"the linter of notes.txt said something no parser reads")
	})
	t.Run("a clean named file is listed with none", func(t *testing.T) {
		ok(t, w, "write", obj{"path": "/memory/m/d.go", "fileText": "package m\n\n// D is fine.\nfunc D() {}\n"})
		_, got := readLintsOK(t, w, "", "/memory/m/d.go")
		assert.Equal(t, map[string][]string{"/memory/m/d.go": {}}, got)
	})
	t.Run("an output no parser reads: raw, with a note, not an error", func(t *testing.T) {
		got := ok(t, w, VerbReadLints, obj{"paths": []string{"/memory/m/notes.txt"}})
		assert.Equal(t, "readLints: the output of /bin/echo Everything is on fire (in /memory/m, exit code 0) is not in the line format; it follows as printed:\nEverything is on fire\n", got)
	})
	t.Run("a linter that cannot start is an error naming it", func(t *testing.T) {
		ok(t, w, "write", obj{"path": "/memory/m/x.nostart", "fileText": "x"})
		msg := fail(t, w, VerbReadLints, obj{"paths": []string{"/memory/m/x.nostart"}})
		assert.Contains(t, msg, "readLints: the linter no-such-linter-here could not start: no-such-linter-here: No such file or directory")
	})
	t.Run("bad paths", func(t *testing.T) {
		assert.Contains(t, fail(t, w, VerbReadLints, obj{"paths": []string{"/memory/m/nope.go"}}), "no such file or directory")
		assert.Contains(t, fail(t, w, VerbReadLints, obj{"paths": []string{}}), `argument "paths" must name at least one file or directory`)
		assert.Contains(t, fail(t, w, VerbReadLints, obj{}), `missing required argument "paths"`)
		ok(t, w, "write", obj{"path": "/memory/m/img.png", "fileText": "x"})
		assert.Contains(t, fail(t, w, VerbReadLints, obj{"paths": []string{"/memory/m/img.png"}}),
			"readLints: no linter here checks the files named (the linters check **/*.go, **/*.go, **/*.go, **/*.nostart, **/*.txt)")
	})
}

// Without linters, or without a shell, there is no readLints: not listed,
// not callable, and an allowlist naming it says why.
func TestReadLintsNotOffered(t *testing.T) {
	lint := []Linter{{Glob: "**/*.go", Command: []string{"go", "vet", "./..."}}}
	for _, tc := range []struct {
		name string
		opts Options
		why  string
	}{
		{"no linters", Options{}, `tools: "readLints" cannot be served: no linters are configured (lints:)`},
		{"no shell", Options{Lints: lint}, `tools: "readLints" cannot be served: the linters run in the shell's namespace, and there is no shell: the kernel face is not up`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := New(memfs.New(memfs.Options{}), tc.opts)
			require.NoError(t, err)
			for _, d := range Dialects {
				defs, err := w.Tools(d)
				require.NoError(t, err)
				for _, def := range defs {
					assert.NotEqual(t, VerbReadLints, def.Name, d)
				}
			}
			assert.NotContains(t, w.Brief(), VerbReadLints)
			res := w.Call(context.Background(), "", VerbReadLints, json.RawMessage(`{"paths":["/"]}`))
			assert.True(t, res.IsError)
			assert.Contains(t, res.Text, `unknown tool "readLints"`)

			o := tc.opts
			o.Tools = []string{VerbRead, VerbReadLints}
			_, err = New(memfs.New(memfs.Options{}), o)
			require.Error(t, err)
			assert.Equal(t, tc.why, err.Error())
		})
	}
	t.Run("a bad linter is an error naming its field", func(t *testing.T) {
		_, err := New(memfs.New(memfs.Options{}), Options{Lints: []Linter{lint[0], {Glob: "**/*.go", Command: []string{"x"}, Format: "xml"}}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `lints[1].format: unknown format "xml"`)
	})
}

// The allowlist narrows readLints out like any verb, and keeps it when it
// names it.
func TestReadLintsAllowlist(t *testing.T) {
	lint := []Linter{{Glob: "**/*.go", Command: []string{"true"}}}
	names := func(w *Workspace) []string {
		defs, err := w.Tools("")
		require.NoError(t, err)
		var out []string
		for _, d := range defs {
			out = append(out, d.Name)
		}
		return out
	}
	w := kernelWorkspaceOpts(t, nil, func(o *Options) { o.Lints = lint })
	assert.Contains(t, names(w), VerbReadLints, "offered by default")
	with := func(tools ...string) *Workspace {
		w2, err := New(w.fsys, Options{Shell: &w.shell.opts, Lints: lint, Tools: tools})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, w2.Close()) })
		return w2
	}
	assert.Equal(t, []string{VerbRead, VerbReadLints}, names(with(VerbRead, VerbReadLints)), "no shell tool, and still readLints: the linters are the host's commands")
	assert.Equal(t, []string{VerbRead}, names(with(VerbRead)))
	_, err := New(memfs.New(memfs.Options{}), Options{Tools: []string{"readlints"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tools: unknown tool "readlints" (known: read, ls, glob, grep, write, edit, delete, shell, readLints, semSearch)`)
}

// readLints goes through BeforeCall and AfterCall like every verb, with
// the paths it names; a linter that says nothing finds nothing.
func TestReadLintsHooks(t *testing.T) {
	var seen []string
	w := kernelWorkspaceOpts(t, nil, func(o *Options) {
		o.Lints = []Linter{{Glob: "**/*.go", Command: []string{"true"}}}
		o.AfterCall = func(ctx context.Context, c *CallInfo, res Result, _ time.Duration) {
			seen = append(seen, c.Verb+" "+strings.Join(c.Paths, ","))
		}
	})
	ok(t, w, "write", obj{"path": "/memory/a.go", "fileText": "package a\n"})
	_, got := readLintsOK(t, w, "", "a.go", "/memory")
	assert.Equal(t, map[string][]string{"/memory/a.go": {}}, got)
	assert.Equal(t, []string{"write /memory/a.go", "readLints a.go,/memory"}, seen)

	w = kernelWorkspaceOpts(t, nil, func(o *Options) {
		o.Lints = []Linter{{Glob: "**/*.go", Command: []string{"true"}}}
		o.BeforeCall = func(ctx context.Context, c *CallInfo) error {
			if c.Verb == VerbReadLints {
				return errors.New("not approved")
			}
			return nil
		}
	})
	assert.Contains(t, fail(t, w, VerbReadLints, obj{"paths": []string{"/memory"}}), "readLints: not approved")
}

// A linter that outlives its timeout is killed, and the call says so.
func TestReadLintsTimeout(t *testing.T) {
	w := kernelWorkspaceOpts(t, nil, func(o *Options) {
		o.Lints = []Linter{{Name: "slow", Glob: "**/*.go", Command: []string{"sleep", "60"}, Timeout: time.Second}}
	})
	ok(t, w, "write", obj{"path": "/memory/a.go", "fileText": "package a\n"})
	start := time.Now()
	msg := fail(t, w, VerbReadLints, obj{"paths": []string{"/memory/a.go"}})
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Equal(t, "readLints: the linter slow (sleep 60) did not finish within 1s and was killed", msg)
}
