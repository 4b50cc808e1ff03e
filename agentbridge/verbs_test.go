package agentbridge

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 2500)
	w := fixture(t, map[string]string{
		"/repo/a.txt":       "alpha\nbeta\ngamma",
		"/repo/many.txt":    numbered(1, 2100),
		"/repo/long.txt":    long + "\n",
		"/repo/bin.dat":     "\x89PNG\r\n\x1a\n\x00\x00\x00",
		"/repo/src/main.go": "package main\n",
		"/memory/empty":     "",
	}, Options{})
	tests := []struct {
		name string
		args obj
		want string
	}{
		{"whole file", obj{"path": "/repo/a.txt"}, "     1\talpha\n     2\tbeta\n     3\tgamma\n"},
		{"offset and limit", obj{"path": "/repo/a.txt", "offset": 2, "limit": 1}, "     2\tbeta\n… 1 more lines; call read with offset=3\n"},
		{"offset 0 is the first line", obj{"path": "/repo/a.txt", "offset": 0, "limit": 1}, "     1\talpha\n… 2 more lines; call read with offset=2\n"},
		{"numeric string", obj{"path": "/repo/a.txt", "offset": "3"}, "     3\tgamma\n"},
		{"empty file", obj{"path": "/memory/empty"}, "(/memory/empty is empty)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ok(t, w, "read", tc.args))
		})
	}
	t.Run("an unknown key is refused by name, not dropped", func(t *testing.T) {
		assert.Equal(t, `read: unknown argument "shiny"; read takes limit, offset, path`, fail(t, w, "read", obj{"path": "/repo/a.txt", "limit": 1, "shiny": true}))
		assert.Equal(t, `Read: unknown argument "shiny"; Read takes allow_large, file_path, limit, offset, pages`,
			call(t, w, "claude", "Read", obj{"file_path": "/repo/a.txt", "shiny": true}).Text)
	})
	t.Run("Claude Code's Read and Write take path for file_path", func(t *testing.T) {
		assert.Equal(t, Result{Text: "1\talpha\n2\tbeta\n3\tgamma\n"}, call(t, w, "claude", "Read", obj{"path": "/repo/a.txt"}))
		r := call(t, w, "claude", "Write", obj{"path": "/memory/w.txt", "content": "hi"})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, Result{Text: "1\thi\n"}, call(t, w, "claude", "Read", obj{"path": "/memory/w.txt"}))
	})
	t.Run("Claude Code's Read has no 2000-line cut", func(t *testing.T) {
		long := strings.Repeat("x\n", 2500)
		require.False(t, call(t, w, "claude", "Write", obj{"file_path": "/memory/long.txt", "content": long}).IsError)
		r := call(t, w, "claude", "Read", obj{"file_path": "/memory/long.txt"})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, 2500, strings.Count(r.Text, "\n"))
		assert.True(t, strings.HasSuffix(r.Text, "2500\tx\n"), r.Text[len(r.Text)-40:])
	})

	t.Run("default limit pages at 2000 lines", func(t *testing.T) {
		got := ok(t, w, "read", obj{"path": "/repo/many.txt"})
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		require.Len(t, lines, 2001)
		assert.Equal(t, "  2000\tline 2000", lines[1999])
		assert.Equal(t, "… 100 more lines; call read with offset=2001", lines[2000])
		assert.True(t, strings.HasPrefix(ok(t, w, "read", obj{"path": "/repo/many.txt", "offset": 2001}), "  2001\tline 2001\n"))
	})
	t.Run("long lines are truncated with a marker", func(t *testing.T) {
		got := ok(t, w, "read", obj{"path": "/repo/long.txt"})
		assert.Equal(t, "     1\t"+long[:2000]+"… [line truncated: 2000 of 2500 chars shown]\n", got)
	})

	errs := []struct {
		name string
		args obj
		want string
	}{
		{"binary", obj{"path": "/repo/bin.dat"}, "read /repo/bin.dat: binary file (11 bytes, image/png); read shows text only, use the shell to inspect it"},
		{"directory", obj{"path": "/repo/src"}, "read /repo/src: is a directory; use ls to list it"},
		{"missing path", obj{}, `read: missing required argument "path"`},
		{"mistyped path", obj{"path": 3}, `read: argument "path" must be a string, got 3`},
		{"mistyped limit", obj{"path": "/repo/a.txt", "limit": "lots"}, `read: argument "limit" must be an integer, got "lots"`},
		{"limit out of range", obj{"path": "/repo/a.txt", "limit": 0}, `read: argument "limit" must be between 1 and`},
		{"offset past end", obj{"path": "/repo/a.txt", "offset": 9}, "read /repo/a.txt: offset 9 is past the end of the file (3 lines)"},
		{"relative path suggests", obj{"path": "src/main.go"}, "read /memory/src/main.go: no such file or directory; did you mean /repo/src/main.go?"},
		{"outside every mount", obj{"path": "/nowhere/x"}, "read /nowhere/x: no such file or directory; it is outside every mount (mounts: /memory, /repo)"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			assert.Contains(t, fail(t, w, "read", tc.args), tc.want)
		})
	}
}

func TestBadInput(t *testing.T) {
	w := fixture(t, map[string]string{"/repo/a.txt": "a\n"}, Options{})
	ctx := context.Background()
	r := w.Call(ctx, "", "read", []byte(`{"path": `))
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text, "read: arguments must be a JSON object")
	r = w.Call(ctx, "", "read", []byte(`["a"]`))
	assert.True(t, r.IsError)
	r = w.Call(ctx, "", "frobnicate", nil)
	assert.True(t, r.IsError)
	assert.Equal(t, `unknown tool "frobnicate"; available tools: read, ls, glob, grep, write, edit, delete`, r.Text)
	r = w.Call(ctx, "klingon", "read", nil)
	assert.Equal(t, `unknown dialect "klingon" (known: cursor, claude, codex)`, r.Text)
	r = w.Call(ctx, "claude", "read", nil)
	assert.Contains(t, r.Text, "available tools: Read, Write, Edit, NotebookEdit, Glob, Grep")
}

func TestLs(t *testing.T) {
	w := fixture(t, map[string]string{
		"/repo/b.txt":        "b",
		"/repo/a/x.go":       "x",
		"/repo/.hidden":      "h",
		"/memory/notes.md":   "n",
		"/memory/tmp/x.log":  "l",
		"/memory/tmp/y.log":  "l",
		"/memory/keep/z.txt": "z",
	}, Options{})
	ctx := context.Background()
	require.NoError(t, mounts.Symlink(ctx, w.fsys, "/repo/b.txt", "memory/link"))

	assert.Equal(t, "memory/  [memory, writable]\nrepo/  [git@1a2b3c4, read-only]\n", ok(t, w, "ls", obj{"depth": 1, "path": "/"}))
	assert.Equal(t, ".hidden\na/\nb.txt\n", ok(t, w, "ls", obj{"depth": 1, "path": "/repo"}))
	assert.Equal(t, "keep/\nlink -> /repo/b.txt\nnotes.md\n", ok(t, w, "ls", obj{"depth": 1, "path": "/memory", "ignore": []string{"tmp"}}))
	assert.Equal(t, "keep/\nkeep/z.txt\nlink -> /repo/b.txt\nnotes.md\ntmp/\n", ok(t, w, "ls", obj{"path": "/memory", "depth": 2, "ignore": []string{"*.log"}}))
	assert.Equal(t, "b.txt\n", ok(t, w, "ls", obj{"depth": 1, "path": "/repo/b.txt"}))
	assert.Contains(t, fail(t, w, "ls", obj{"depth": 1, "path": "/repo/nope"}), "ls /repo/nope: no such file or directory")
	// Codex's list_dir pages.
	r := call(t, w, "codex", "list_dir", obj{"dir_path": "/repo", "offset": 2, "limit": 1})
	assert.Equal(t, "a/\n… 1 more entries; call list_dir with offset=3\n", r.Text)
}

func TestGlob(t *testing.T) {
	w := fixture(t, nil, Options{})
	for _, p := range []string{"/memory/b.go", "/memory/a.go", "/memory/sub/c.go", "/memory/sub/d.txt", "/memory/.git/config.go"} {
		ok(t, w, "write", obj{"path": p, "fileText": "x"})
	}
	assert.Equal(t, "/memory/sub/c.go\n/memory/a.go\n/memory/b.go\n", ok(t, w, "glob", obj{"pattern": "**/*.go", "path": "/memory"}))
	assert.Equal(t, "/memory/a.go\n/memory/b.go\n", ok(t, w, "glob", obj{"pattern": "*.go", "path": "/memory"}))
	assert.Equal(t, "/memory/sub/d.txt\n", ok(t, w, "glob", obj{"pattern": "/memory/**/*.txt"}))
	assert.Equal(t, "/memory/sub/c.go\n/memory/a.go\n… 1 more matches; narrow the pattern or the path\n", ok(t, w, "glob", obj{"pattern": "**/*.go", "limit": 2}))
	assert.Equal(t, "No files match **/*.rs under /", ok(t, w, "glob", obj{"pattern": "**/*.rs"}))
	assert.Contains(t, fail(t, w, "glob", obj{"pattern": "[", "path": "/memory"}), `glob: argument "pattern": invalid glob pattern "["`)
}

func TestWrite(t *testing.T) {
	w := fixture(t, map[string]string{"/repo/a.go": "package a\n"}, Options{})
	assert.Equal(t, "created /memory/deep/new/f.txt (5 bytes)", ok(t, w, "write", obj{"path": "/memory/deep/new/f.txt", "fileText": "hello"}))
	assert.Equal(t, "     1\thello\n", ok(t, w, "read", obj{"path": "/memory/deep/new/f.txt"}))
	assert.Equal(t, "overwrote /memory/deep/new/f.txt (3 bytes)", ok(t, w, "write", obj{"path": "/memory/deep/new/f.txt", "fileText": "bye"}))
	assert.Equal(t, "write /repo/a.go: read-only mount /repo (git@1a2b3c4); writable: /memory", fail(t, w, "write", obj{"path": "/repo/a.go", "fileText": "x"}))
	assert.Equal(t, `write: missing required argument "fileText"`, fail(t, w, "write", obj{"path": "/memory/x"}))
	assert.Equal(t, "write /memory/deep: is a directory; give a file path", fail(t, w, "write", obj{"path": "/memory/deep", "fileText": "x"}))
	// Through a symlink: the link's target is written.
	require.NoError(t, mounts.Symlink(context.Background(), w.fsys, "deep/new/f.txt", "memory/ln"))
	ok(t, w, "write", obj{"path": "/memory/ln", "fileText": "via link"})
	assert.Equal(t, "     1\tvia link\n", ok(t, w, "read", obj{"path": "/memory/deep/new/f.txt"}))
}

func TestEdit(t *testing.T) {
	src := "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	newW := func(t *testing.T) *Workspace {
		w := fixture(t, nil, Options{})
		ok(t, w, "write", obj{"path": "/memory/f.go", "fileText": src})
		return w
	}
	read := func(t *testing.T, w *Workspace) string {
		data, err := mounts.ReadFile(context.Background(), w.fsys, "memory/f.go")
		require.NoError(t, err)
		return string(data)
	}

	t.Run("unique replace with snippet", func(t *testing.T) {
		w := newW(t)
		got := ok(t, w, "edit", obj{"path": "/memory/f.go", "oldText": "func a() {\n\treturn 1", "newText": "func a() {\n\treturn 2"})
		assert.Equal(t, "edited /memory/f.go (1 change)\n     1\tfunc a() {\n     2\t\treturn 2\n     3\t}\n     4\t\n     5\tfunc b() {\n", got)
		assert.Equal(t, strings.Replace(src, "return 1", "return 2", 1), read(t, w))
	})
	t.Run("ambiguous lists line numbers", func(t *testing.T) {
		w := newW(t)
		assert.Equal(t, "edit /memory/f.go: oldText occurs 2 times (lines 2, 6); include more surrounding lines to make it unique, or pass replaceAll: true",
			fail(t, w, "edit", obj{"path": "/memory/f.go", "oldText": "return 1", "newText": "return 3"}))
		assert.Equal(t, src, read(t, w))
	})
	t.Run("replaceAll", func(t *testing.T) {
		w := newW(t)
		assert.Contains(t, ok(t, w, "edit", obj{"path": "/memory/f.go", "oldText": "return 1", "newText": "return 3", "replaceAll": true}), "(2 changes)")
		assert.Equal(t, strings.ReplaceAll(src, "return 1", "return 3"), read(t, w))
	})
	t.Run("not found quotes the nearest line", func(t *testing.T) {
		w := newW(t)
		assert.Equal(t, `edit /memory/f.go: oldText not found; the most similar line is 5: "func b() {"`,
			fail(t, w, "edit", obj{"path": "/memory/f.go", "oldText": "func bb() {", "newText": "x"}))
	})
	t.Run("whitespace hint", func(t *testing.T) {
		w := newW(t)
		assert.Contains(t, fail(t, w, "edit", obj{"path": "/memory/f.go", "oldText": "func a() {\n  return 1", "newText": "x"}), "matches if whitespace is ignored")
	})
	t.Run("multi-edit all or nothing", func(t *testing.T) {
		w := newW(t)
		msg := fail(t, w, "edit", obj{"path": "/memory/f.go", "edits": []obj{
			{"oldText": "func a()", "newText": "func A()"},
			{"oldText": "func zzz()", "newText": "func Z()"},
		}})
		assert.Contains(t, msg, "edit /memory/f.go: edits[1]: oldText not found")
		assert.Contains(t, msg, "no edit was applied")
		assert.Equal(t, src, read(t, w))
		ok(t, w, "edit", obj{"path": "/memory/f.go", "edits": []obj{
			{"oldText": "func a()", "newText": "func A()"},
			{"oldText": "func b()", "newText": "func B()"},
		}})
		assert.Equal(t, strings.NewReplacer("func a()", "func A()", "func b()", "func B()").Replace(src), read(t, w))
	})
	t.Run("errors", func(t *testing.T) {
		w := newW(t)
		assert.Equal(t, "edit /memory/f.go: oldText and newText are identical; nothing would change", fail(t, w, "edit", obj{"path": "/memory/f.go", "oldText": "a", "newText": "a"}))
		assert.Equal(t, `edit: missing required argument "newText"`, fail(t, w, "edit", obj{"path": "/memory/f.go", "oldText": "a"}))
		assert.Equal(t, `edit: edits[0]: missing required argument "oldText"`, fail(t, w, "edit", obj{"path": "/memory/f.go", "edits": []obj{{"newText": "x"}}}))
		assert.Contains(t, fail(t, w, "edit", obj{"path": "/memory/nope.go", "oldText": "a", "newText": "b"}), "edit /memory/nope.go: no such file or directory")
	})
	t.Run("empty oldText creates a missing file", func(t *testing.T) {
		w := newW(t)
		ok(t, w, "edit", obj{"path": "/memory/new.txt", "oldText": "", "newText": "fresh\n"})
		assert.Equal(t, "     1\tfresh\n", ok(t, w, "read", obj{"path": "/memory/new.txt"}))
	})
}

func TestDelete(t *testing.T) {
	w := fixture(t, map[string]string{"/repo/a": "a", "/memory/f": "f", "/memory/d/x": "x", "/memory/d/y/z": "z", "/memory/e/.keep": ""}, Options{})
	assert.Equal(t, "deleted /memory/f", ok(t, w, "delete", obj{"path": "/memory/f"}))
	assert.Contains(t, fail(t, w, "delete", obj{"path": "/memory/f"}), "delete /memory/f: no such file or directory")
	assert.Equal(t, "delete /memory/d: directory not empty; pass recursive: true to delete it with its contents", fail(t, w, "delete", obj{"path": "/memory/d"}))
	assert.Equal(t, "deleted /memory/d and 3 entries below it", ok(t, w, "delete", obj{"path": "/memory/d", "recursive": true}))
	assert.Equal(t, "delete /repo: it is the mount point of /repo (git@1a2b3c4) and cannot be deleted; delete entries inside it instead", fail(t, w, "delete", obj{"path": "/repo"}))
	assert.Equal(t, "delete /repo/a: read-only mount /repo (git@1a2b3c4); writable: /memory", fail(t, w, "delete", obj{"path": "/repo/a"}))
	ok(t, w, "delete", obj{"path": "/memory/e/.keep"})
	assert.Equal(t, "deleted empty directory /memory/e", ok(t, w, "delete", obj{"path": "/memory/e"}))
}

func TestCapabilitiesAndAllowlist(t *testing.T) {
	ro := &testUnion{m: map[string]mounts.FS{"repo": readOnly{fixture(t, nil, Options{}).fsys}}}
	w, err := New(ro, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"read", "ls", "glob", "grep"}, w.Verbs(), "a read-only tree offers no write verbs")
	_, err = New(ro, Options{Tools: []string{"read", "write"}})
	assert.EqualError(t, err, `tools: "write" cannot be served: no mount can create files`)
	_, err = New(ro, Options{Tools: []string{"fly"}})
	assert.EqualError(t, err, `tools: unknown tool "fly" (known: read, ls, glob, grep, write, edit, delete, shell, readLints, semSearch)`)
	_, err = New(ro, Options{Tools: []string{"shell"}})
	assert.EqualError(t, err, `tools: "shell" cannot be served: the kernel face is not up`)
	w, err = New(ro, Options{Tools: []string{"grep", "read"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"read", "grep"}, w.Verbs())
	defs, err := w.Tools("claude")
	require.NoError(t, err)
	require.Len(t, defs, 2)
	assert.Equal(t, "Read", defs[0].Name)
	assert.True(t, defs[0].Annotations.ReadOnly)

	full := fixture(t, nil, Options{})
	assert.Equal(t, []string{"read", "ls", "glob", "grep", "write", "edit", "delete"}, full.Verbs())
	assert.Contains(t, full.Brief(), "  /memory  memory, writable\n  /repo    git, git@1a2b3c4, read-only\n")
	assert.Contains(t, full.Brief(), "Writes under /repo fail; write under /memory instead.")
}
