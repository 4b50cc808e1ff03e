package agentbridge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCursorLsTree(t *testing.T) {
	files := map[string]string{"/memory/a.txt": "", "/memory/d/b.go": "", "/memory/d/e/c.md": ""}
	w := fixture(t, files, Options{})
	assert.Equal(t, "a.txt\nd/\nd/b.go\nd/e/\nd/e/c.md\n", ok(t, w, "ls", obj{"path": "/memory"}), "the whole tree when it fits")
	assert.Equal(t, "a.txt\nd/\n", ok(t, w, "ls", obj{"path": "/memory", "depth": 1}))

	big := map[string]string{}
	for i := range 400 {
		big[fmt.Sprintf("/memory/many/f%03d.go", i)] = ""
	}
	for i := range 5 {
		big[fmt.Sprintf("/memory/many/n%d.md", i)] = ""
	}
	big["/memory/z.txt"] = ""
	w = fixture(t, big, Options{})
	out := ok(t, w, "ls", obj{"path": "/memory"})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Greater(t, len(lines), 3)
	require.True(t, strings.HasPrefix(lines[0], "many/  ("), out)
	names := 0
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "many/f") {
			names += len(strings.TrimPrefix(l, "many/"))
		}
	}
	assert.LessOrEqual(t, names+len("/memory"), cursorLsBudget, "file names listed within the budget")
	assert.Regexp(t, `^many/  \(\d+ more files not listed: \d+ \.go, 5 \.md\)$`, lines[0])
	assert.Equal(t, "(the listing stops at 2500 characters of names; list a subdirectory to see the rest)", lines[len(lines)-2])
	assert.Equal(t, "(1 more file not listed: 1 .txt directly in /memory)", lines[len(lines)-1])
}

func TestCursorNames(t *testing.T) {
	w := fixture(t, map[string]string{"/memory/f.txt": "x\n"}, Options{})
	r := call(t, w, "cursor", "write", obj{"path": "/memory/g.txt", "fileText": "new\n", "returnFileContentAfterWrite": true})
	assert.Equal(t, Result{Text: "created /memory/g.txt (4 bytes)\nnew\n"}, r)
	assert.Equal(t, Result{Text: `glob: missing required argument "globPattern"`, IsError: true}, call(t, w, "cursor", "glob", obj{}))
	assert.Equal(t, Result{Text: `glob: argument "globPattern" must be a string, got 3`, IsError: true}, call(t, w, "cursor", "glob", obj{"globPattern": 3}))
	assert.Equal(t, Result{Text: `grep: argument "contextBefore" must be an integer, got "many"`, IsError: true}, call(t, w, "cursor", "grep", obj{"pattern": "x", "contextBefore": "many"}))
	assert.Equal(t, Result{Text: `grep: argument "sortAscending" must be true or false, got 1`, IsError: true}, call(t, w, "cursor", "grep", obj{"pattern": "x", "sortAscending": 1}))
}

func TestBriefFollowsDialectAndTools(t *testing.T) {
	w := fixture(t, nil, Options{})
	assert.Contains(t, w.BriefFor("claude"), "Tools: Read, Write, Edit, NotebookEdit, Glob, Grep.\n")
	assert.Contains(t, w.BriefFor("codex"), "Tools: read_file, list_dir, grep_files, apply_patch, view_image.\n")
	assert.Contains(t, w.BriefFor("cursor"), "Tools: read, ls, glob, grep, write, edit, delete.\n")
	assert.Contains(t, w.BriefFor(""), "  /memory  memory, writable\n  /repo    git, git@1a2b3c4, read-only\n")
	narrow := fixture(t, nil, Options{Tools: []string{"read", "write"}})
	assert.Contains(t, narrow.BriefFor("claude"), "Tools: Read, Write.\n")
	assert.Contains(t, narrow.BriefFor("codex"), "Tools: read_file, view_image.\n", "codex has no write tool")
	assert.NotContains(t, narrow.BriefFor(""), "shell")
	for _, d := range Dialects {
		defs, err := w.Tools(d)
		require.NoError(t, err)
		for _, def := range defs {
			for _, canon := range []string{"oldText", "replaceAll", "newText", "fileText"} {
				if d == DialectCursor {
					continue
				}
				assert.NotContains(t, def.Description, canon, "%s %s's description names a canonical key", d, def.Name)
			}
		}
	}
}
