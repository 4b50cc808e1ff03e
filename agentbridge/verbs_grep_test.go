package agentbridge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

func grepFixture(t *testing.T) *Workspace {
	return fixtureWithMounts(t, map[string]string{
		"/repo/a.go":             "package a\n\nfunc Foo() {}\nfunc bar() { Foo() }\n",
		"/repo/b.py":             "def foo():\n    return 1\n",
		"/repo/sub/c.go":         "package sub\n// FOO here\nvar x = 1\nvar y = 2\nvar z = 3\nfunc Foo() {}\n",
		"/repo/.hidden.go":       "package hidden // Foo\n",
		"/repo/.git/HEAD":        "Foo\n",
		"/repo/bin.dat":          "Foo\x00\x01",
		"/memory/.gitignore":     "ignored/\n*.log\n",
		"/memory/kept.txt":       "Foo\n",
		"/memory/x.log":          "Foo\n",
		"/memory/ignored/i":      "Foo\n",
		"/memory/sub/.gitignore": "!x.log\n",
		"/memory/sub/x.log":      "Foo\n",
	}, []mounts.MountInfo{
		{Prefix: "/repo", Description: mounts.Description{Type: "git", Source: "git@1a2b3c4"}},
		{Prefix: "/memory", Description: mounts.Description{Type: "host", Source: "host", IgnoreFiles: true}, Writable: true},
	}, Options{})
}

func TestGrep(t *testing.T) {
	w := grepFixture(t)
	tests := []struct {
		name string
		args obj
		want string
	}{
		{"files mode, hidden searched, .git and binary skipped", obj{"pattern": "Foo", "path": "/repo"},
			"/repo/.hidden.go\n/repo/a.go\n/repo/sub/c.go\n"},
		{"count", obj{"pattern": "Foo", "path": "/repo", "outputMode": "count"},
			"/repo/.hidden.go:1\n/repo/a.go:2\n/repo/sub/c.go:1\n"},
		{"content", obj{"pattern": "Foo\\(\\)", "path": "/repo", "outputMode": "content"},
			"/repo/a.go:3:func Foo() {}\n/repo/a.go:4:func bar() { Foo() }\n/repo/sub/c.go:6:func Foo() {}\n"},
		{"content without line numbers", obj{"pattern": "^var y", "path": "/repo", "outputMode": "content", "lineNumbers": false},
			"/repo/sub/c.go:var y = 2\n"},
		{"context", obj{"pattern": "var y", "path": "/repo/sub/c.go", "outputMode": "content", "context": 1},
			"/repo/sub/c.go-3-var x = 1\n/repo/sub/c.go:4:var y = 2\n/repo/sub/c.go-5-var z = 3\n"},
		{"before/after with separator", obj{"pattern": "^(package|func)", "path": "/repo/sub/c.go", "outputMode": "content", "after": 1},
			"/repo/sub/c.go:1:package sub\n/repo/sub/c.go-2-// FOO here\n--\n/repo/sub/c.go:6:func Foo() {}\n"},
		{"case insensitive", obj{"pattern": "foo", "path": "/repo/sub", "caseInsensitive": true, "outputMode": "count"}, "/repo/sub/c.go:2\n"},
		{"type", obj{"pattern": "(?i)foo", "path": "/repo", "type": "py"}, "/repo/b.py\n"},
		{"glob on base name", obj{"pattern": "Foo", "path": "/repo", "glob": "c.*"}, "/repo/sub/c.go\n"},
		{"glob on path", obj{"pattern": "Foo", "path": "/repo", "glob": "sub/**"}, "/repo/sub/c.go\n"},
		{"negated glob", obj{"pattern": "Foo", "path": "/repo", "glob": "!*.go"}, "No matches found"},
		{"multiline", obj{"pattern": "var x.*var y", "path": "/repo", "multiline": true, "outputMode": "content"},
			"/repo/sub/c.go:3:var x = 1\n/repo/sub/c.go:4:var y = 2\n"},
		{"no multiline by default", obj{"pattern": "1\\nvar", "path": "/repo"}, "No matches found"},
		{"headLimit and offset", obj{"pattern": "Foo", "path": "/repo", "headLimit": 1, "offset": 1},
			"/repo/a.go\n… 1 more lines; call grep with offset=2\n"},
		{".gitignore honoured in host mounts", obj{"pattern": "Foo", "path": "/memory"}, "/memory/kept.txt\n/memory/sub/x.log\n"},
		{"noIgnore", obj{"pattern": "Foo", "path": "/memory", "noIgnore": true},
			"/memory/ignored/i\n/memory/kept.txt\n/memory/sub/x.log\n/memory/x.log\n"},
		{"claude dialect shape is the same", obj{"pattern": "Foo", "path": "/repo/a.go"}, "/repo/a.go\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The fixture's files are made in map order, so their
			// mtimes (the default order) are not known: sort by path.
			args := obj{"sort": "path", "sortAscending": true, "outputMode": "files_with_matches"}
			for k, v := range tc.args {
				args[k] = v
			}
			assert.Equal(t, tc.want, ok(t, w, "grep", args))
		})
	}
	t.Run("cursor defaults: content, newest file first, sort and sortAscending", func(t *testing.T) {
		w := fixture(t, nil, Options{})
		for _, f := range []string{"b.txt", "a.txt", "c.txt"} { // made in this order
			ok(t, w, "write", obj{"path": "/memory/" + f, "fileText": "x\nhit " + f + "\n"})
		}
		assert.Equal(t, "/memory/c.txt:2:hit c.txt\n/memory/a.txt:2:hit a.txt\n/memory/b.txt:2:hit b.txt\n", ok(t, w, "grep", obj{"pattern": "hit", "path": "/memory"}))
		assert.Equal(t, "/memory/b.txt\n/memory/a.txt\n/memory/c.txt\n", ok(t, w, "grep", obj{"pattern": "hit", "path": "/memory", "outputMode": "files_with_matches", "sortAscending": true}))
		assert.Equal(t, "/memory/c.txt\n/memory/b.txt\n/memory/a.txt\n", ok(t, w, "grep", obj{"pattern": "hit", "path": "/memory", "outputMode": "files_with_matches", "sort": "path"}))
		assert.Equal(t, "/memory/a.txt:1\n/memory/b.txt:1\n/memory/c.txt:1\n", ok(t, w, "grep", obj{"pattern": "hit", "path": "/memory", "outputMode": "count", "sort": "path", "sortAscending": true}))
		assert.Equal(t, "/memory/a.txt-1-x\n/memory/a.txt:2:hit a.txt\n", ok(t, w, "grep", obj{"pattern": "hit a", "path": "/memory", "contextBefore": 1}))
		// Claude Code's Grep lists files newest first too.
		assert.Equal(t, "Found 3 files\nc.txt\na.txt\nb.txt", call(t, w, "claude", "Grep", obj{"pattern": "hit", "path": "/memory"}).Text)
		assert.Equal(t, `grep: argument "sort" must be modified, path or none, got "accessed" (this workspace keeps no access or creation times to sort by)`,
			fail(t, w, "grep", obj{"pattern": "hit", "sort": "accessed"}))
		assert.Equal(t, `grep: unknown argument "-i"; grep takes caseInsensitive, context, contextAfter, contextBefore, glob, headLimit, lineNumbers, multiline, noIgnore, offset, outputMode, path, pattern, sort, sortAscending, type`,
			fail(t, w, "grep", obj{"pattern": "hit", "-i": true}), "another dialect's key is refused by name, not dropped")
	})
	t.Run("errors", func(t *testing.T) {
		assert.Equal(t, "grep: the pattern does not compile (RE2 syntax): missing closing ): `(?m)(foo`; escape literal ( [ { . * + ? | with a backslash",
			fail(t, w, "grep", obj{"pattern": "(foo"}))
		assert.Contains(t, fail(t, w, "grep", obj{"pattern": "x", "type": "cobol"}), `grep: unknown file type "cobol" (known: c, cpp`)
		assert.Equal(t, `grep: argument "outputMode" must be content, files_with_matches or count, got "lines"`, fail(t, w, "grep", obj{"pattern": "x", "outputMode": "lines"}))
	})
	t.Run("claude names", func(t *testing.T) {
		r := call(t, w, "claude", "Grep", obj{"pattern": "foo", "path": "/repo/sub", "-i": true, "output_mode": "files_with_matches"})
		assert.Equal(t, Result{Text: "Found 1 file\n/repo/sub/c.go"}, r)
		r = call(t, w, "claude", "Grep", obj{"pattern": "var y", "path": "/repo/sub", "-C": 1, "-n": true, "output_mode": "content"})
		assert.Equal(t, "/repo/sub/c.go-3-var x = 1\n/repo/sub/c.go:4:var y = 2\n/repo/sub/c.go-5-var z = 3", r.Text)
		r = call(t, w, "claude", "Grep", obj{"pattern": "var", "path": "/repo/sub", "context": 0, "output_mode": "content", "head_limit": 1, "offset": 1})
		assert.Equal(t, "/repo/sub/c.go:4:var y = 2\n[Showing results with pagination = limit: 1, offset: 1]", r.Text)
		r = call(t, w, "claude", "Grep", obj{"pattern": "Foo", "path": "/repo", "output_mode": "count", "glob": "*.go"})
		assert.Equal(t, "/repo/.hidden.go:1\n/repo/a.go:2\n/repo/sub/c.go:1\nFound 4 total occurrences across 3 files.", r.Text)
		r = call(t, w, "claude", "Grep", obj{"pattern": "nothing-matches", "path": "/repo"})
		assert.Equal(t, "No files found", r.Text)
		// -o prints each match on a line of its own (rg -o -n).
		r = call(t, w, "claude", "Grep", obj{"pattern": "F[oO]+", "path": "/repo/a.go", "-o": true, "output_mode": "content"})
		assert.Equal(t, Result{Text: "/repo/a.go:3:Foo\n/repo/a.go:4:Foo"}, r)
		// The aliases Claude Code coerces: file_path for path, -l and -c
		// for output modes, -r ignored.
		r = call(t, w, "claude", "Grep", obj{"pattern": "Foo", "file_path": "/repo/sub", "-c": true, "-r": true})
		assert.Equal(t, Result{Text: "/repo/sub/c.go:1\nFound 1 total occurrence across 1 file."}, r)
		r = call(t, w, "claude", "Grep", obj{"pattern": "Foo", "file_path": "/repo/sub", "-l": true})
		assert.Equal(t, Result{Text: "Found 1 file\n/repo/sub/c.go"}, r)
		// codex's grep_files has no offset: the hint says what it can do.
		r = call(t, w, "codex", "grep_files", obj{"pattern": "Foo", "path": "/repo", "include": "*.go", "limit": 2})
		assert.Equal(t, "/repo/.hidden.go\n/repo/a.go\n… 1 more lines; narrow the pattern, path or glob\n", r.Text)
	})
}

func TestRequiredLiteral(t *testing.T) {
	for pat, want := range map[string]string{
		"(?m)hello":         "hello",
		"(?m)\\bfoo\\w+bar": "foo",
		"(?m)(?i)foo":       "",
		"(?m)a|b":           "",
		"(?m)x+":            "",
	} {
		assert.Equal(t, want, string(requiredLiteral(pat)), pat)
	}
}

// TestGrepMatchesRipgrep builds a random tree twice, natively and in a
// memory mount, and checks grep's file lists against rg --hidden
// --no-ignore -l for a set of patterns.
func TestGrepMatchesRipgrep(t *testing.T) {
	rg := needRipgrep(t)
	ctx := context.Background()
	dir, files := ripgrepTree(t)
	mem := memfs.New(memfs.Options{})
	for rel, content := range files {
		require.NoError(t, mounts.MkdirAll(ctx, mem, filepath.Dir(rel), 0o755))
		require.NoError(t, mounts.WriteFile(ctx, mem, rel, []byte(content), 0o644))
	}
	w, err := New(&testUnion{m: map[string]mounts.FS{"t": mem}, table: memoryAt("/t")}, Options{})
	require.NoError(t, err)
	checkRipgrep(t, rg, dir, w, "/t")
}

func needRipgrep(t *testing.T) string {
	t.Helper()
	rg, err := exec.LookPath("rg")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ripgrep is required in CI")
		}
		t.Skip("ripgrep not installed")
	}
	return rg
}

// ripgrepTree writes a random tree to a directory and returns both.
func ripgrepTree(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	rnd := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "Gamma", "delta", "func", "return", "TODO", "fixme", "x := 1", "(paren)", "日本語", "tab\there", "  indent"}
	for i := range 400 {
		rel := fmt.Sprintf("d%d/s%d/f%d%s", rnd.IntN(6), rnd.IntN(4), i, []string{".go", ".py", ".txt", ".md", ""}[rnd.IntN(5)])
		if rnd.IntN(10) == 0 {
			rel = fmt.Sprintf("d%d/.hid%d", rnd.IntN(6), i)
		}
		var b strings.Builder
		for range rnd.IntN(30) {
			for range 1 + rnd.IntN(5) {
				b.WriteString(words[rnd.IntN(len(words))] + " ")
			}
			b.WriteString("\n")
		}
		if rnd.IntN(25) == 0 {
			b.WriteString("\x00binary alpha\n")
		}
		content := b.String()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644))
		files[rel] = content
	}
	return dir, files
}

// ripgrepPatterns are the patterns checkRipgrep compares.
var ripgrepPatterns = []string{"alpha", "^func", "return\\s+$", "TODO|fixme", "(?i)gamma", "\\(paren\\)", "日本", "x := \\d", "^$", "a.*b.*c", "\\bdel", "tab\\t", "(?i)ALPHA|BETA", "Gam+a", "."}

// checkRipgrep compares grep of the tree at prefix in w with rg -l in dir.
func checkRipgrep(t *testing.T, rg, dir string, w *Workspace, prefix string) {
	t.Helper()
	for _, pat := range ripgrepPatterns {
		t.Run(pat, func(t *testing.T) {
			cmd := exec.Command(rg, "--hidden", "--no-ignore", "-l", "--", pat, ".")
			cmd.Dir = dir
			out, err := cmd.Output()
			if ee, isExit := err.(*exec.ExitError); isExit && ee.ExitCode() == 1 {
				err = nil // no match
			}
			require.NoError(t, err)
			var want []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if l != "" {
					want = append(want, prefix+"/"+strings.TrimPrefix(l, "./"))
				}
			}
			sort.Strings(want)
			got := ok(t, w, "grep", obj{"pattern": pat, "path": prefix, "headLimit": 0, "outputMode": "files_with_matches"})
			var have []string
			if got != "No matches found" {
				have = strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			}
			sort.Strings(have)
			assert.Equal(t, want, have)
		})
	}
}

func TestRequiredFoldLiteral(t *testing.T) {
	for pat, want := range map[string]string{
		"(?i)IDENT4242":     "ident4242",
		"(?i)foo(bar)+Quux": "quux",
		"(?i)task":          "ta", // k and s fold past ASCII
		"(?i)a":             "",
		"(?i)日本語abc":        "abc",
		"(?i)x|y":           "",
	} {
		got := requiredFoldLiteral(pat)
		assert.Equal(t, want, string(got), pat)
		if want == "" {
			assert.Nil(t, got, pat)
		}
	}
	assert.True(t, containsFold([]byte("xx IdEnT4242 yy"), []byte("ident4242")))
	assert.True(t, containsFold([]byte("4242ident4242"), []byte("ident4242")))
	assert.False(t, containsFold([]byte("ident424 ident4243"), []byte("ident4242")))
	assert.True(t, containsFold([]byte("xHELLO"), []byte("hello")))
	assert.False(t, containsFold([]byte("hell"), []byte("hello")))
}

// TestAnyLineIsSearch: files mode's one-line check agrees with the full
// search on random texts, final newlines and empty lines included.
func TestAnyLineIsSearch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 9))
	pieces := []string{"a", "b", "\n", "\n\n", " ", "ab", "\r\n", "A", "AB"}
	for _, pat := range []string{"a", "^$", "a$", "^b", "\\s+", "a\\s*b", "\\n", "b\\na", "^", "$", "(?s)a.b", "ab", "ab$", "^ab", "b\\r", "a b"} {
		re, err := regexp.Compile("(?m)" + pat)
		require.NoError(t, err)
		for range 300 {
			var b strings.Builder
			for range rnd.IntN(8) {
				b.WriteString(pieces[rnd.IntN(len(pieces))])
			}
			data := []byte(b.String())
			full := (&grepQuery{re: re, mode: "count"}).search("f", data)
			files := (&grepQuery{re: re, mode: "files"}).search("f", data)
			assert.Equalf(t, full.count > 0, files.count > 0, "%q in %q", pat, data)
			lit := (&grepQuery{re: re, mode: "files", literal: requiredLiteral("(?m)" + pat)}).search("f", data)
			assert.Equalf(t, full.count > 0, lit.count > 0, "%q in %q, through the literal", pat, data)
			foldRe := regexp.MustCompile("(?m)(?i)" + pat)
			fullFold := (&grepQuery{re: foldRe, mode: "count"}).search("f", data)
			fold := (&grepQuery{re: foldRe, mode: "files", foldLit: requiredFoldLiteral("(?m)(?i)" + pat)}).search("f", data)
			assert.Equalf(t, fullFold.count > 0, fold.count > 0, "(?i)%q in %q, through the literal", pat, data)
		}
	}
}

func TestIndexFold(t *testing.T) {
	for _, c := range []struct {
		data, lit string
		want      int
	}{
		{"xx IdEnT4242 yy", "ident4242", 3},
		{"İİ HELLO", "hello", 5}, // offsets of data, not of a Unicode lower-casing
		{"hell", "hello", -1},
		{"4242ident4242", "ident4242", 4},
		{"ident424 ident4243", "ident4242", -1},
	} {
		assert.Equal(t, c.want, indexFold([]byte(c.data), []byte(c.lit)), "%q in %q", c.lit, c.data)
	}
}

// A large file is searched whole, unless its first sniffLen bytes say it
// is binary: then grep skips it, whatever the rest holds, and (readInto)
// reads no more than those bytes.
func TestGrepLargeFilesBinaryOrNot(t *testing.T) {
	pad := strings.Repeat("filler line\n", 3*sniffLen/12)
	w := fixtureWithMounts(t, map[string]string{
		"/repo/big.txt":      pad + "needle\n",
		"/repo/big.bin":      "\x00" + pad + "needle\n",
		"/repo/late-nul.txt": pad + "\x00needle\n",
	}, []mounts.MountInfo{{Prefix: "/repo", Description: mounts.Description{Type: "git", Source: "git@1a2b3c4"}}}, Options{})
	got := ok(t, w, "grep", obj{"pattern": "needle", "path": "/repo", "outputMode": "files_with_matches"})
	assert.ElementsMatch(t, []string{"/repo/big.txt", "/repo/late-nul.txt"}, strings.Fields(got))

	data, err := readInto(context.Background(), w.fsys, "repo/big.bin", mounts.OpenOptions{}, nil, true)
	require.NoError(t, err)
	assert.Len(t, data, sniffLen, "binary: its head only")
	data, err = readInto(context.Background(), w.fsys, "repo/big.bin", mounts.OpenOptions{}, nil, false)
	require.NoError(t, err)
	assert.Len(t, data, 1+len(pad)+len("needle\n"), "whole without sniff")
	data, err = readInto(context.Background(), w.fsys, "repo/big.txt", mounts.OpenOptions{}, nil, true)
	require.NoError(t, err)
	assert.Equal(t, pad+"needle\n", string(data))
}
