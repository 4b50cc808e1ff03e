package agentbridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
)

func readWS(t testing.TB, w *Workspace, p string) string {
	t.Helper()
	data, err := mounts.ReadFile(context.Background(), w.fsys, mounts.NameOf(p))
	require.NoError(t, err)
	return string(data)
}

func existsWS(w *Workspace, p string) bool {
	_, err := w.fsys.Stat(context.Background(), mounts.NameOf(p))
	return err == nil
}

// TestPatchMoveOverwrites: "*** Move to:" onto an existing file overwrites
// it, as Codex does, and a later failure puts the overwritten file back.
func TestPatchMoveOverwrites(t *testing.T) {
	files := map[string]string{"/memory/old/name.txt": "from\n", "/memory/renamed/name.txt": "was here\n", "/memory/other.txt": "x\n"}
	w := fixture(t, files, Options{})
	got := ok(t, w, "edit", obj{"patchContent": "*** Begin Patch\n*** Update File: /memory/old/name.txt\n*** Move to: /memory/renamed/name.txt\n-from\n+to\n*** End Patch"})
	assert.Equal(t, "applied patch:\nR /memory/old/name.txt -> /memory/renamed/name.txt\n", got)
	assert.Equal(t, "to\n", readWS(t, w, "/memory/renamed/name.txt"))
	assert.False(t, existsWS(w, "/memory/old/name.txt"))

	w = fixture(t, files, Options{})
	ctx := context.Background()
	st, err := w.planPatch(ctx, ".", FilePatch{Op: PatchUpdate, Path: "/memory/old/name.txt", MoveTo: "/memory/renamed/name.txt",
		Chunks: []PatchChunk{{Old: []string{"from"}, New: []string{"to"}}}})
	require.NoError(t, err)
	assert.Equal(t, "was here\n", string(st.moveOld), "the overwritten content is kept for a rollback")
	require.NoError(t, w.doStep(ctx, st))
	w.undoStep(ctx, st)
	assert.Equal(t, "was here\n", readWS(t, w, "/memory/renamed/name.txt"), "rollback restores the overwritten target")
	assert.Equal(t, "from\n", readWS(t, w, "/memory/old/name.txt"))

	// All or nothing still: a failing second file leaves the target as it was.
	msg := fail(t, w, "edit", obj{"patchContent": "*** Begin Patch\n*** Update File: /memory/old/name.txt\n*** Move to: /memory/renamed/name.txt\n-from\n+to\n*** Update File: /memory/other.txt\n-nope\n+y\n*** End Patch"})
	assert.Contains(t, msg, "nothing was changed")
	assert.Equal(t, "was here\n", readWS(t, w, "/memory/renamed/name.txt"))
	assert.Equal(t, "from\n", readWS(t, w, "/memory/old/name.txt"))
}

// TestPatchNormalisedMatch: the fourth pass of codex-rs's seek_sequence
// matches a patch typed in ASCII against typographic dashes, quotes and
// odd spaces.
func TestPatchNormalisedMatch(t *testing.T) {
	content := "title — “quoted” and ‘single’\nnon\u00a0breaking\u2009space\nminus \u2212 1\n"
	for _, tc := range []struct{ old, want string }{
		{`title - "quoted" and 'single'`, "TITLE\nnon\u00a0breaking\u2009space\nminus \u2212 1\n"},
		{"non breaking space", "title — “quoted” and ‘single’\nTITLE\nminus \u2212 1\n"},
		{"  minus - 1  ", "title — “quoted” and ‘single’\nnon\u00a0breaking\u2009space\nTITLE\n"},
	} {
		got, err := applyChunks(content, []PatchChunk{{Old: []string{tc.old}, New: []string{"TITLE"}}})
		require.NoError(t, err, tc.old)
		assert.Equal(t, tc.want, got, tc.old)
	}
	// Exact matches still win over normalised ones.
	got, err := applyChunks("a – b\na - b\n", []PatchChunk{{Old: []string{"a - b"}, New: []string{"X"}}})
	require.NoError(t, err)
	assert.Equal(t, "a – b\nX\n", got)
	_, err = applyChunks("a — b\n", []PatchChunk{{Old: []string{"a = b"}, New: []string{"X"}}})
	assert.Error(t, err, "normalising is not fuzzy matching")
}

// TestPatchCodexTexts: a codex caller gets codex-rs's success and error
// texts; the canonical dialect keeps the tool face's.
func TestPatchCodexTexts(t *testing.T) {
	files := map[string]string{"/memory/a.txt": "one\ntwo\n", "/memory/b.txt": "b\n", "/memory/c.txt": "c\n", "/repo/ro.txt": "r\n"}
	patch := func(w *Workspace, body string) Result {
		return call(t, w, "codex", "apply_patch", obj{"input": "*** Begin Patch\n" + body + "*** End Patch"})
	}
	w := fixture(t, files, Options{})
	r := patch(w, "*** Delete File: c.txt\n*** Update File: a.txt\n*** Move to: moved.txt\n-two\n+2\n*** Add File: new.txt\n+n\n*** Update File: b.txt\n-b\n+B\n")
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "Success. Updated the following files:\nA /memory/new.txt\nM /memory/moved.txt\nM /memory/b.txt\nD /memory/c.txt\n", r.Text,
		"added, then modified (a move under its new name), then deleted, as codex-rs prints them")

	for _, tc := range []struct{ name, body, want string }{
		{"lines not found", "*** Update File: b.txt\n-nope\n+x\n", "apply_patch verification failed: Failed to find expected lines in /memory/b.txt:\nnope"},
		{"context not found", "*** Update File: b.txt\n@@ fn missing\n-b\n+x\n", "apply_patch verification failed: Failed to find context 'fn missing' in /memory/b.txt"},
		{"update of a missing file", "*** Update File: gone.txt\n-a\n+b\n", "apply_patch verification failed: Failed to read file to update /memory/gone.txt: No such file or directory (os error 2)"},
		{"delete of a missing file", "*** Delete File: gone.txt\n", "apply_patch verification failed: Failed to read /memory/gone.txt: No such file or directory (os error 2)"},
		{"bad update line", "*** Update File: b.txt\n?b\n", "apply_patch verification failed: invalid hunk at line 3, Unexpected line found in update hunk: '?b'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"},
		{"bad header", "*** Frob File: b.txt\n", "apply_patch verification failed: invalid hunk at line 2, '*** Frob File: b.txt' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"},
		{"empty update", "*** Update File: b.txt\n", "apply_patch verification failed: invalid hunk at line 2, Update file hunk for path 'b.txt' is empty"},
		{"no files", "", "apply_patch verification failed: No files were modified."},
		{"read-only, in the tool face's words", "*** Delete File: /repo/ro.txt\n", "apply_patch: Delete File /repo/ro.txt: read-only mount /repo (git@1a2b3c4); writable: /memory; nothing was changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := fixture(t, files, Options{})
			r := patch(w, tc.body)
			assert.True(t, r.IsError)
			assert.Equal(t, tc.want, r.Text)
			assert.Equal(t, "b\n", readWS(t, w, "/memory/b.txt"), "nothing changed")
		})
	}
	t.Run("boundaries", func(t *testing.T) {
		w := fixture(t, files, Options{})
		assert.Equal(t, "apply_patch verification failed: invalid patch: The first line of the patch must be '*** Begin Patch'",
			call(t, w, "codex", "apply_patch", obj{"input": "*** Update File: b.txt\n"}).Text)
		assert.Equal(t, "apply_patch verification failed: invalid patch: The last line of the patch must be '*** End Patch'",
			call(t, w, "codex", "apply_patch", obj{"input": "*** Begin Patch\n*** Delete File: b.txt\n"}).Text)
	})
	t.Run("the canonical dialect keeps its texts", func(t *testing.T) {
		w := fixture(t, files, Options{})
		assert.Contains(t, fail(t, w, "edit", obj{"patchContent": "*** Begin Patch\n*** Update File: /memory/b.txt\n-nope\n+x\n*** End Patch"}),
			"apply_patch: Update File /memory/b.txt: chunk 1 (patch line 3): these lines were not found in the file")
	})
}

// TestParseApplyPatch: the forms of an apply_patch typed into the shell
// that are recognised, and those that are not.
func TestParseApplyPatch(t *testing.T) {
	const p = "*** Begin Patch\n*** Add File: x\n+y\n*** End Patch"
	for _, tc := range []struct {
		name, cmd  string
		patch, dir string
		ok         bool
	}{
		{"heredoc", "apply_patch <<'EOF'\n" + p + "\nEOF\n", p, "", true},
		{"heredoc, unquoted delimiter", "apply_patch <<PATCH\n" + p + "\nPATCH", p, "", true},
		{"heredoc, double-quoted delimiter", "applypatch <<\"EOF\"\n" + p + "\nEOF", p, "", true},
		{"argv form, quoted", shellQuote("apply_patch") + " " + shellQuote(p), p, "", true},
		{"cd first", "cd sub/dir && apply_patch <<'EOF'\n" + p + "\nEOF", p, "sub/dir", true},
		{"cd a quoted dir", "cd 'a b' && apply_patch <<'EOF'\n" + p + "\nEOF", p, "a b", true},
		{"a second command", "apply_patch <<'EOF'\n" + p + "\nEOF\necho done", "", "", false},
		{"a pipe", "cat x | apply_patch", "", "", false},
		{"an expansion in the argument", `apply_patch "$(cat p)"`, "", "", false},
		{"cd with ||", "cd d || apply_patch <<'EOF'\n" + p + "\nEOF", "", "", false},
		{"cd with a flag", "cd -P d && apply_patch <<'EOF'\n" + p + "\nEOF", "", "", false},
		{"another program", "git apply <<'EOF'\n" + p + "\nEOF", "", "", false},
		{"not shell", "apply_patch <<'EOF'\n" + p, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch, dir, ok := parseApplyPatch(tc.cmd)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.patch, patch)
			assert.Equal(t, tc.dir, dir)
		})
	}
}

var errRefused = errors.New("not approved: refused by the test")

// recorder is a BeforeCall and an AfterCall that remember what they saw.
type recorder struct {
	before, after []CallInfo
	refuse        string // refuse calls of this verb
}

func (r *recorder) opts(o *Options) {
	o.BeforeCall = func(_ context.Context, c *CallInfo) error {
		r.before = append(r.before, *c)
		if c.Verb == r.refuse {
			return errRefused
		}
		return nil
	}
	o.AfterCall = func(_ context.Context, c *CallInfo, _ Result, _ time.Duration) { r.after = append(r.after, *c) }
}

// TestShellApplyPatch: an apply_patch typed into the shell goes through
// the edit verb (policy, approvals, audit, dry run) all or nothing, in
// every form codex types it, instead of failing with exit 127.
func TestShellApplyPatch(t *testing.T) {
	rec := &recorder{}
	w := kernelWorkspaceOpts(t, nil, rec.opts)
	s := w.NewSession()
	defer s.Close()
	add := func(name, line string) string {
		return "*** Begin Patch\n*** Add File: " + name + "\n+" + line + "\n*** End Patch"
	}
	heredoc := func(patch string) string { return "apply_patch <<'EOF'\n" + patch + "\nEOF\n" }

	r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": heredoc(add("h.txt", "heredoc"))})
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "Wall time: 0.0000 seconds\nOutput:\nSuccess. Updated the following files:\nA /memory/h.txt\n", r.Text)
	assert.Equal(t, "heredoc\n", readWS(t, w, "/memory/h.txt"))
	last := rec.before[len(rec.before)-1]
	assert.Equal(t, VerbEdit, last.Verb, "approvals see an edit")
	assert.Equal(t, "exec_command", last.Tool)
	assert.Equal(t, []string{"h.txt"}, last.Paths)
	assert.Equal(t, VerbEdit, rec.after[len(rec.after)-1].Verb, "the audit sees an edit")

	r = sessionCall(t, w, s, "codex", "shell", obj{"command": []string{"apply_patch", add("argv.txt", "argv")}})
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "Success. Updated the following files:\nA /memory/argv.txt\n", r.Text)

	require.False(t, sessionCall(t, w, s, "", "shell", obj{"command": "mkdir -p /memory/sub"}).IsError)
	r = sessionCall(t, w, s, "codex", "shell", obj{"command": []string{"bash", "-lc", "cd sub && " + heredoc(add("cd.txt", "in sub"))}})
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "Success. Updated the following files:\nA /memory/sub/cd.txt\n", r.Text)
	assert.Equal(t, "/memory", s.Dir(), "the cd of an apply_patch does not move the session")

	r = sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": heredoc(add("wd.txt", "workdir")), "workdir": "sub"})
	require.False(t, r.IsError, r.Text)
	assert.True(t, existsWS(w, "/memory/sub/wd.txt"), "relative to workdir")

	r = sessionCall(t, w, s, "", "shell", obj{"command": heredoc(add("canon.txt", "c"))})
	assert.Equal(t, "applied patch:\nA /memory/canon.txt\n", r.Text, "the canonical shell answers as edit does")

	t.Run("a patch that does not parse is the patch's error", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": heredoc("*** Begin Patch\n*** Update File: h.txt\n?x\n*** End Patch")})
		assert.True(t, r.IsError)
		assert.Equal(t, "apply_patch verification failed: invalid hunk at line 3, Unexpected line found in update hunk: '?x'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", r.Text)
	})
	t.Run("all or nothing", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": heredoc("*** Begin Patch\n*** Add File: partial.txt\n+p\n*** Update File: h.txt\n-nope\n+x\n*** End Patch")})
		assert.True(t, r.IsError)
		assert.Contains(t, r.Text, "Failed to find expected lines in /memory/h.txt")
		assert.False(t, existsWS(w, "/memory/partial.txt"))
	})
	t.Run("a bare patch as the command", func(t *testing.T) {
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": add("bare.txt", "b")})
		assert.Equal(t, `exec_command: patch detected without explicit call to apply_patch. Rerun as ["apply_patch", "<patch>"]`, r.Text)
		assert.False(t, existsWS(w, "/memory/bare.txt"))
	})
	t.Run("anything else runs as a command", func(t *testing.T) {
		r := sessionCall(t, w, s, "", "shell", obj{"command": heredoc(add("no.txt", "n")) + "echo after"})
		assert.Contains(t, r.Text, "apply_patch: command not found")
		assert.False(t, existsWS(w, "/memory/no.txt"))
	})
	t.Run("an approval that refuses edits refuses it", func(t *testing.T) {
		rec.refuse = VerbEdit
		defer func() { rec.refuse = "" }()
		r := sessionCall(t, w, s, "codex", "exec_command", obj{"cmd": heredoc(add("refused.txt", "r"))})
		assert.Equal(t, "exec_command: "+errRefused.Error()+"; nothing was changed", r.Text)
		assert.False(t, existsWS(w, "/memory/refused.txt"))
	})
	t.Run("dry run shows the diff", func(t *testing.T) {
		dry := kernelWorkspaceOpts(t, nil, func(o *Options) { o.DryRun = true })
		r := call(t, dry, "codex", "exec_command", obj{"cmd": heredoc(add("dry.txt", "d"))})
		require.False(t, r.IsError, r.Text)
		assert.True(t, strings.Contains(r.Text, "would apply patch (1 file) (dry run: nothing was changed)"), r.Text)
		assert.Contains(t, r.Text, "+d")
		assert.False(t, existsWS(dry, "/memory/dry.txt"))
	})
	t.Run("without the edit tool it is refused", func(t *testing.T) {
		narrow := kernelWorkspaceOpts(t, nil, func(o *Options) { o.Tools = []string{VerbShell, VerbRead} })
		r := call(t, narrow, "codex", "exec_command", obj{"cmd": heredoc(add("x.txt", "x"))})
		assert.Equal(t, "exec_command: apply_patch edits files, and this workspace cannot: edit is not among this workspace's tools; nothing was changed", r.Text)
	})
}
