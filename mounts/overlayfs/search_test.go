package overlayfs_test

import (
	"regexp"
	"regexp/syntax"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

// matching lists the regular files below dir whose content re matches, by
// a scan of the tree, in walk order.
func matching(t *testing.T, fsys mounts.FS, dir string, re *regexp.Regexp) []string {
	t.Helper()
	var out []string
	var walk func(d string)
	walk = func(d string) {
		ents, err := fsys.ReadDir(bg, d)
		require.NoError(t, err)
		for _, e := range ents {
			n := mounts.Join(d, e.Name)
			switch {
			case e.Type.IsDir():
				walk(n)
			case e.Type.IsRegular():
				data, err := mounts.ReadFile(bg, fsys, n)
				require.NoError(t, err)
				if re.Match(data) {
					out = append(out, n)
				}
			}
		}
	}
	walk(dir)
	return out
}

// TestCandidatesOverTheLowersIndex: untouched files come from the git
// lower's index, changed ones are scanned; with the real regexp applied
// to the candidates, the result is the scan's.
func TestCandidatesOverTheLowersIndex(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		"a.go": "needle\n", "b.go": "hay\n", "d/c.go": "needle here\n", "d/e.go": "hay\n",
		"gone/x.go": "needle\n", "keep/y.go": "needle\n", "f2d": "needle\n",
	}, nil)
	g := gitLower(t, repo)
	ready, err := g.WaitIndex(bg)
	require.NoError(t, err)
	require.True(t, ready)
	o, _ := newOverlay(t, g)
	require.True(t, mounts.Capabilities(o).Has(mounts.CapSearch))

	require.NoError(t, mounts.WriteFile(bg, o, "a.go", []byte("no longer\n"), 0o644))    // modified, no match
	require.NoError(t, mounts.WriteFile(bg, o, "b.go", []byte("now a needle\n"), 0o644)) // modified, a match
	require.NoError(t, mounts.WriteFile(bg, o, "d/new.go", []byte("needle\n"), 0o644))   // added
	require.NoError(t, mounts.Unlink(bg, o, "gone/x.go"))
	require.NoError(t, mounts.Rmdir(bg, o, "gone"))
	require.NoError(t, mounts.Unlink(bg, o, "f2d"))
	require.NoError(t, mounts.Mkdir(bg, o, "f2d", 0o755))
	require.NoError(t, mounts.WriteFile(bg, o, "f2d/in.go", []byte("needle\n"), 0o644))

	pat := "needle"
	sre, err := syntax.Parse(pat, syntax.Perl)
	require.NoError(t, err)
	re := regexp.MustCompile(pat)
	for _, dir := range []string{".", "d", "f2d", "keep"} {
		names, complete, err := mounts.Candidates(bg, o, dir, sre)
		require.NoError(t, err)
		require.True(t, complete, dir)
		var got []string
		for _, n := range names {
			data, err := mounts.ReadFile(bg, o, n)
			require.NoError(t, err, n)
			if re.Match(data) {
				got = append(got, n)
			}
		}
		assert.Equal(t, matching(t, o, dir, re), got, dir)
	}

	// A rename moves lower names wholesale: the overlay does not narrow.
	require.NoError(t, mounts.Rename(bg, o, "keep", "kept", 0))
	_, complete, err := mounts.Candidates(bg, o, ".", sre)
	require.NoError(t, err)
	assert.False(t, complete)
}
