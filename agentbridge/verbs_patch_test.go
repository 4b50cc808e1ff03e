package agentbridge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
)

func TestParsePatch(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []FilePatch
		wantErr string
	}{
		{
			name: "every section",
			in:   "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Update File: /memory/b.go\n*** Move to: c.go\n@@ func b\n ctx\n-old\n+new\n*** End of File\n*** Delete File: gone\n*** End Patch\n",
			want: []FilePatch{
				{Op: PatchAdd, Path: "a.txt", Lines: []string{"one", "two"}, Line: 2},
				{Op: PatchUpdate, Path: "/memory/b.go", MoveTo: "c.go", Line: 5, Chunks: []PatchChunk{{Context: "func b", Old: []string{"ctx", "old"}, New: []string{"ctx", "new"}, EOF: true, Line: 7}}},
				{Op: PatchDelete, Path: "gone", Line: 12},
			},
		},
		{
			name: "heredoc, whitespace around markers, first chunk without @@",
			in:   "apply_patch <<'EOF'\n  *** Begin Patch  \n*** Update File: x\n-a\n+b\n *** End Patch\nEOF\n",
			want: []FilePatch{{Op: PatchUpdate, Path: "x", Line: 3, Chunks: []PatchChunk{{Old: []string{"a"}, New: []string{"b"}, Line: 4}}}},
		},
		{name: "no begin", in: "*** Update File: x\n", wantErr: `line 1: a patch must start with "*** Begin Patch"`},
		{name: "no end", in: "*** Begin Patch\n*** Delete File: x\n", wantErr: `line 2: a patch must end with "*** End Patch"`},
		{name: "bad line in update", in: "*** Begin Patch\n*** Update File: x\n@@\n-a\nzzz\n*** End Patch", wantErr: `line 5: in Update File x, expected a line starting with ' ', '-', '+' or "@@", got "zzz"`},
		{name: "bad add line", in: "*** Begin Patch\n*** Add File: x\nhello\n*** End Patch", wantErr: `line 3: every line of an added file must start with "+", got "hello"`},
		{name: "unknown section", in: "*** Begin Patch\n*** Frob File: x\n*** End Patch", wantErr: `line 2: expected "*** Add File:", "*** Update File:" or "*** Delete File:", got "*** Frob File: x"`},
		{name: "empty update", in: "*** Begin Patch\n*** Update File: x\n*** End Patch", wantErr: "line 2: Update File x has no changes"},
		{name: "empty patch", in: "*** Begin Patch\n*** End Patch", wantErr: "line 2: the patch names no file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePatch(tc.in)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestApplyChunksFuzzyLevels(t *testing.T) {
	content := "a\n  b  \nc\n"
	for _, old := range []string{"  b  ", "  b", "b"} {
		got, err := applyChunks(content, []PatchChunk{{Old: []string{old}, New: []string{"B"}}})
		require.NoError(t, err, old)
		assert.Equal(t, "a\nB\nc\n", got, old)
	}
	got, err := applyChunks("x\ny\n", []PatchChunk{{Context: "y", New: []string{"z"}}})
	require.NoError(t, err)
	assert.Equal(t, "x\ny\nz\n", got, "a pure addition goes after its context line")
}

func TestApplyPatch(t *testing.T) {
	newW := func(t *testing.T) *Workspace {
		return fixture(t, map[string]string{
			"/memory/one.txt": "1\n2\n3\n",
			"/memory/two.txt": "a\nb\nc\n",
			"/repo/ro.txt":    "r\n",
		}, Options{})
	}
	read := func(t *testing.T, w *Workspace, p string) string {
		data, err := mounts.ReadFile(context.Background(), w.fsys, mounts.NameOf(p))
		require.NoError(t, err)
		return string(data)
	}
	exists := func(w *Workspace, p string) bool {
		_, err := w.fsys.Stat(context.Background(), mounts.NameOf(p))
		return err == nil
	}

	t.Run("applies add, update, move and delete", func(t *testing.T) {
		w := newW(t)
		patch := "*** Begin Patch\n*** Add File: /memory/new/n.txt\n+fresh\n*** Update File: one.txt\n@@\n 1\n-2\n+two\n*** Update File: /memory/two.txt\n*** Move to: /memory/moved.txt\n-b\n+B\n*** End Patch"
		got := ok(t, w, "edit", obj{"patchContent": patch})
		assert.Equal(t, "applied patch:\nA /memory/new/n.txt\nM /memory/one.txt\nR /memory/two.txt -> /memory/moved.txt\n", got)
		assert.Equal(t, "fresh\n", read(t, w, "/memory/new/n.txt"))
		assert.Equal(t, "1\ntwo\n3\n", read(t, w, "/memory/one.txt"))
		assert.Equal(t, "a\nB\nc\n", read(t, w, "/memory/moved.txt"))
		assert.False(t, exists(w, "/memory/two.txt"))
		r := call(t, w, "codex", "apply_patch", obj{"input": "*** Begin Patch\n*** Delete File: /memory/moved.txt\n*** End Patch"})
		require.False(t, r.IsError, r.Text)
		assert.False(t, exists(w, "/memory/moved.txt"))
	})
	t.Run("a failing hunk in the last file leaves the first untouched", func(t *testing.T) {
		w := newW(t)
		patch := "*** Begin Patch\n*** Add File: /memory/added.txt\n+x\n*** Update File: /memory/one.txt\n-1\n+ONE\n*** Update File: /memory/two.txt\n-nope\n+NOPE\n*** End Patch"
		msg := fail(t, w, "edit", obj{"patchContent": patch})
		assert.Contains(t, msg, "apply_patch: Update File /memory/two.txt: chunk 1 (patch line 8): these lines were not found in the file")
		assert.Contains(t, msg, "nothing was changed")
		assert.Equal(t, "1\n2\n3\n", read(t, w, "/memory/one.txt"))
		assert.False(t, exists(w, "/memory/added.txt"))
	})
	t.Run("read-only target is refused before anything is written", func(t *testing.T) {
		w := newW(t)
		patch := "*** Begin Patch\n*** Update File: /memory/one.txt\n-1\n+ONE\n*** Delete File: /repo/ro.txt\n*** End Patch"
		msg := fail(t, w, "edit", obj{"patchContent": patch})
		assert.Equal(t, "apply_patch: Delete File /repo/ro.txt: read-only mount /repo (git@1a2b3c4); writable: /memory; nothing was changed", msg)
		assert.Equal(t, "1\n2\n3\n", read(t, w, "/memory/one.txt"))
	})
	t.Run("parse errors name the line", func(t *testing.T) {
		w := newW(t)
		msg := fail(t, w, "edit", obj{"patchContent": "*** Begin Patch\n*** Update File: /memory/one.txt\n?1\n*** End Patch"})
		assert.Contains(t, msg, "apply_patch: the patch does not parse: line 3:")
	})
	t.Run("rollback after a failed write restores the tree", func(t *testing.T) {
		w := newW(t)
		ctx := context.Background()
		steps := []patchStep{
			{op: PatchUpdate, name: "memory/one.txt", content: "changed\n", old: "1\n2\n3\n", existed: true},
			{op: PatchAdd, name: "memory/brand.txt", content: "new\n"},
		}
		for _, st := range steps {
			require.NoError(t, w.doStep(ctx, st))
		}
		for i := len(steps) - 1; i >= 0; i-- {
			w.undoStep(ctx, steps[i])
		}
		assert.Equal(t, "1\n2\n3\n", read(t, w, "/memory/one.txt"))
		assert.False(t, exists(w, "/memory/brand.txt"))
	})
}

func FuzzParsePatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch")
	f.Add("*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@ ctx\n a\n-b\n+c\n*** End of File\n*** End Patch")
	f.Add("<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF")
	f.Add("*** Begin Patch\n*** Update File: a\n\n-\n+\n*** End Patch")
	f.Fuzz(func(t *testing.T, in string) {
		fps, err := ParsePatch(in)
		if err != nil {
			return
		}
		if len(fps) == 0 {
			t.Fatal("a parsed patch names at least one file")
		}
		for _, fp := range fps {
			if fp.Path == "" || fp.Line < 1 {
				t.Fatalf("bad file patch %+v", fp)
			}
			for _, c := range fp.Chunks {
				// Applying to anything must not panic.
				_, _ = applyChunks(in, []PatchChunk{c})
			}
		}
	})
}
