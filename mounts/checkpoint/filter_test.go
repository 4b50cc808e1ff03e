package checkpoint_test

import (
	"context"
	"os/exec"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
)

// refuseBase refuses every workspace path whose last element is base, as
// a rule "**/base" does.
func refuseBase(base string, err error) checkpoint.Filter {
	return func(p string, isDir bool) error {
		if path.Base(p) == base {
			return mounts.PathErr("read", p, err)
		}
		return nil
	}
}

// withoutErrs checks that each refusal carries the filter's error, and
// returns them without it, to compare.
func withoutErrs(t *testing.T, refused []checkpoint.Refused) []checkpoint.Refused {
	t.Helper()
	out := make([]checkpoint.Refused, len(refused))
	for i, r := range refused {
		assert.ErrorIs(t, r.Err, mounts.ErrDenied, "%s: the filter's error", r.Path)
		out[i] = checkpoint.Refused{Path: r.Path, Reason: r.Reason}
	}
	return out
}

// TestDiffFilteredWithholds: a filtered diff never shows the content of a
// name the filter refuses, in any format, and names it as withheld; the
// unfiltered diff (the operator's) shows it.
func TestDiffFilteredWithholds(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "secret.txt", []byte("API_KEY=s3cr3t\n"), 0o600))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes.md", []byte("one\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "dir/secret.txt", []byte("REPO_KEY=hunter2\n"), 0o600))
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.Remove(ctx, e.mem, "secret.txt"))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes.md", []byte("two\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "dir/secret.txt", []byte("REPO_KEY=changed\n"), 0o600))

	full, err := e.ws.Diff(ctx, c1.ID, "", gitfs.Patch)
	require.NoError(t, err)
	require.Contains(t, full, "API_KEY=s3cr3t", "the operator's diff shows every name")
	require.Contains(t, full, "REPO_KEY=hunter2")

	deny := refuseBase("secret.txt", mounts.ErrDenied)
	for _, format := range []gitfs.DiffFormat{gitfs.Patch, gitfs.Stat, gitfs.NameStatus} {
		text, withheld, err := e.ws.DiffFiltered(ctx, c1.ID, "", format, deny)
		require.NoError(t, err)
		assert.NotContains(t, text, "secret", "format %d", format)
		assert.NotContains(t, text, "KEY")
		assert.Contains(t, text, "notes.md", "the rest of the diff is there")
		assert.Equal(t, []checkpoint.Withheld{
			{Path: "/memory/secret.txt", Reason: "denied by policy"},
			{Path: "/repo/dir/secret.txt", Reason: "denied by policy"},
		}, withheld)
	}
	// Limited to a withheld name alone, the text is empty and the name
	// still reported.
	text, withheld, err := e.ws.DiffFiltered(ctx, c1.ID, "", gitfs.Patch, deny, "/memory/secret.txt")
	require.NoError(t, err)
	assert.Empty(t, text)
	assert.Len(t, withheld, 1)
	// Nothing refused: the filtered diff is the diff.
	text, withheld, err = e.ws.DiffFiltered(ctx, c1.ID, "", gitfs.Patch, refuseBase("other", mounts.ErrDenied))
	require.NoError(t, err)
	assert.Equal(t, full, text)
	assert.Empty(t, withheld)
}

// TestRestoreFilteredRefuses: a filtered restore leaves the names the
// filter refuses as they are and restores the rest at once; a directory
// whose restore would change a refused name below it is refused whole.
func TestRestoreFilteredRefuses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "secret.txt", []byte("old secret"), 0o600))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes.md", []byte("old notes"), 0o644))
	require.NoError(t, mounts.Mkdir(ctx, e.mem, "d", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "d/secret.txt", []byte("inner"), 0o600))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "d/plain", []byte("plain"), 0o644))
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "secret.txt", []byte("new secret"), 0o600))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes.md", []byte("new notes"), 0o644))
	require.NoError(t, mounts.Rename(ctx, e.mem, "d", "e", 0))
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "lower.txt", []byte("changed"), 0o644))

	r, err := e.ws.RestoreFiltered(ctx, c1.ID, nil, refuseBase("secret.txt", mounts.ErrDenied))
	require.NoError(t, err)
	assert.Equal(t, "new secret", read(t, e.mem, "secret.txt"), "a refused name is left as it is")
	assert.Equal(t, "old notes", read(t, e.mem, "notes.md"))
	assert.Equal(t, "lower", read(t, e.ov, "lower.txt"), "the other mount is restored too")
	assert.Equal(t, "<none>", read(t, e.mem, "d/plain"), "d holds a refused name: refused whole")
	assert.Equal(t, "inner", read(t, e.mem, "e/secret.txt"))
	assert.ElementsMatch(t, []checkpoint.Refused{
		{Path: "/memory/d", Reason: "it holds /memory/d/secret.txt: denied by policy"},
		{Path: "/memory/e", Reason: "it holds /memory/e/secret.txt: denied by policy"},
		{Path: "/memory/secret.txt", Reason: "denied by policy"},
	}, withoutErrs(t, r.Refused))
	assert.Contains(t, r.Changed, "/memory/notes.md")
	assert.Contains(t, r.Changed, "/repo/lower.txt")
	assert.NotContains(t, r.Changed, "/memory/secret.txt")

	// Limited to paths: only those, and the refused one among them.
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes.md", []byte("newer"), 0o644))
	r, err = e.ws.RestoreFiltered(ctx, c1.ID, []string{"/memory/secret.txt"}, refuseBase("secret.txt", mounts.ErrDenied))
	require.NoError(t, err)
	assert.Equal(t, []checkpoint.Refused{{Path: "/memory/secret.txt", Reason: "denied by policy"}}, withoutErrs(t, r.Refused))
	assert.Empty(t, r.Changed)
	assert.Equal(t, "newer", read(t, e.mem, "notes.md"), "a name outside the paths is left alone")

	// Nothing refused: the whole restore, as unfiltered.
	r, err = e.ws.RestoreFiltered(ctx, c1.ID, nil, refuseBase("other", mounts.ErrDenied))
	require.NoError(t, err)
	assert.Empty(t, r.Refused)
	assert.Equal(t, "old secret", read(t, e.mem, "secret.txt"))
	assert.Equal(t, "plain", read(t, e.mem, "d/plain"))
	assert.Equal(t, "<none>", read(t, e.mem, "e/secret.txt"))
}
