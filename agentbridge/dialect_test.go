package agentbridge

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDialectToolLists(t *testing.T) {
	w := fixture(t, nil, Options{})
	want := map[string][]string{
		"":       {"read", "ls", "glob", "grep", "write", "edit", "delete"},
		"cursor": {"read", "ls", "glob", "grep", "write", "edit", "delete"},
		"claude": {"Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep"},
		"codex":  {"read_file", "list_dir", "grep_files", "apply_patch", "view_image"},
	}
	for d, names := range want {
		defs, err := w.Tools(d)
		require.NoError(t, err)
		var got []string
		for _, def := range defs {
			got = append(got, def.Name)
			var s struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			require.NoError(t, json.Unmarshal(def.InputSchema, &s), def.Name)
			assert.Equal(t, "object", s.Type, def.Name)
			for _, r := range s.Required {
				assert.Contains(t, s.Properties, r, "%s: required key %s has no property", def.Name, r)
			}
			assert.NotEmpty(t, def.Description, def.Name)
		}
		assert.Equal(t, names, got, "dialect %q", d)
	}
	_, err := w.Tools("vim")
	assert.EqualError(t, err, `unknown dialect "vim" (known: cursor, claude, codex)`)
}

// TestEveryVerbInEveryDialect runs each dialect tool against the same tree
// and checks it behaves as the canonical verb.
func TestEveryVerbInEveryDialect(t *testing.T) {
	files := map[string]string{"/memory/f.txt": "one\ntwo\n", "/repo/r.go": "package r\n"}
	tests := []struct {
		dialect, tool string
		args          obj
		want          string
	}{
		{"cursor", "read", obj{"path": "/memory/f.txt", "limit": 1}, "     1\tone\n… 1 more lines; call read with offset=2\n"},
		{"claude", "Read", obj{"file_path": "/memory/f.txt", "limit": 1}, "1\tone\n… 1 more lines; call Read with offset=2\n"},
		{"codex", "read_file", obj{"file_path": "/memory/f.txt", "limit": 1}, "     1\tone\n… 1 more lines; call read_file with offset=2\n"},
		{"cursor", "ls", obj{"path": "/memory"}, "f.txt\n"},
		{"claude", "LS", obj{"path": "/memory"}, "f.txt\n"},
		{"codex", "list_dir", obj{"dir_path": "/memory"}, "f.txt\n"},
		{"cursor", "glob", obj{"globPattern": "**/*.go"}, "/repo/r.go\n"},
		{"cursor", "glob", obj{"globPattern": "*.go", "targetDirectory": "/repo"}, "/repo/r.go\n"},
		{"cursor", "glob", obj{"pattern": "*.go", "path": "/repo"}, "/repo/r.go\n"},
		{"claude", "Glob", obj{"pattern": "**/*.go", "path": "/"}, "/repo/r.go"},
		{"claude", "Glob", obj{"pattern": "*.txt"}, "f.txt"},
		{"cursor", "grep", obj{"pattern": "two"}, "/memory/f.txt:2:two\n"},
		{"cursor", "grep", obj{"pattern": "two", "outputMode": "files_with_matches"}, "/memory/f.txt\n"},
		{"claude", "Grep", obj{"pattern": "two"}, "Found 1 file\nf.txt"},
		{"codex", "grep_files", obj{"pattern": "two"}, "/memory/f.txt\n"},
		{"cursor", "write", obj{"path": "/memory/w.txt", "fileText": "w"}, "created /memory/w.txt (1 bytes)"},
		{"claude", "Write", obj{"file_path": "/memory/w.txt", "content": "w"}, "created /memory/w.txt (1 bytes)"},
		{"cursor", "edit", obj{"path": "/memory/f.txt", "oldText": "two", "newText": "2"}, "edited /memory/f.txt (1 change)\n     1\tone\n     2\t2\n"},
		{"claude", "Edit", obj{"file_path": "/memory/f.txt", "old_string": "two", "new_string": "2"}, "edited /memory/f.txt (1 change)\n     1\tone\n     2\t2\n"},
		{"claude", "MultiEdit", obj{"file_path": "/memory/f.txt", "edits": []obj{{"old_string": "one", "new_string": "1"}, {"old_string": "two", "new_string": "2", "replace_all": true}}}, "edited /memory/f.txt (2 changes)\n     1\t1\n     2\t2\n"},
		{"codex", "apply_patch", obj{"input": "*** Begin Patch\n*** Update File: /memory/f.txt\n-two\n+2\n*** End Patch"}, "Success. Updated the following files:\nM /memory/f.txt\n"},
		{"cursor", "delete", obj{"path": "/memory/f.txt"}, "deleted /memory/f.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.dialect+"/"+tc.tool, func(t *testing.T) {
			w := fixture(t, files, Options{})
			r := call(t, w, tc.dialect, tc.tool, tc.args)
			assert.Equal(t, Result{Text: tc.want}, r)
		})
	}
	t.Run("errors name the dialect's keys", func(t *testing.T) {
		w := fixture(t, files, Options{})
		assert.Equal(t, `Read: missing required argument "file_path"`, call(t, w, "claude", "Read", obj{}).Text)
		assert.Equal(t, `Edit: argument "replace_all" must be true or false, got 7`, call(t, w, "claude", "Edit", obj{"file_path": "/memory/f.txt", "old_string": "one", "new_string": "1", "replace_all": 7}).Text)
		assert.Equal(t, `MultiEdit: edits[0]: missing required argument "new_string"`, call(t, w, "claude", "MultiEdit", obj{"file_path": "/memory/f.txt", "edits": []obj{{"old_string": "one"}}}).Text)
		assert.Equal(t, `apply_patch: missing required argument "input"`, call(t, w, "codex", "apply_patch", obj{}).Text)
	})
}

func TestCodexCommand(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{[]string{"bash", "-lc", "ls -la | wc -l"}, "ls -la | wc -l"},
		{[]string{"ls", "-la", "a b", "it's"}, `ls -la 'a b' 'it'\''s'`},
		{"echo hi", "echo hi"},
	} {
		a := &args{tool: "shell", m: map[string]json.RawMessage{}}
		a.set("command", tc.in)
		require.NoError(t, codexCommand(a))
		s, err := a.str("command", true)
		require.NoError(t, err)
		assert.Equal(t, tc.want, s)
	}
}

// TestVerbTable: AllVerbs names the rows of verbTable in their order, and
// every tool of every dialect runs a verb of the table, so a new verb or
// dialect cannot be half added.
func TestVerbTable(t *testing.T) {
	var names []string
	for _, v := range verbTable() {
		names = append(names, v.name)
		assert.NotNil(t, v.run, v.name)
		assert.Equal(t, v.needs == 0, v.lacking == "", "%s: a needed capability says why it may be missing", v.name)
	}
	assert.Equal(t, AllVerbs, names)
	require.Len(t, dialects, len(Dialects))
	for _, name := range Dialects {
		d, err := lookupDialect(name)
		require.NoError(t, err)
		for _, tool := range d.tools {
			assert.Contains(t, AllVerbs, tool.verb, "%s/%s", name, tool.name)
		}
	}
}
