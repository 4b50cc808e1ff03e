package union

import (
	"context"
	"io/fs"
	"regexp/syntax"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// searchable is a memory mount with fixed candidates, made real so that
// the union's mount points can sit on its directories.
type searchable struct {
	mounts.FS
	names []string
}

func (s searchable) Candidates(_ context.Context, dir string, _ *syntax.Regexp) ([]string, bool, error) {
	var out []string
	for _, n := range s.names {
		if dir == "." || below(n, dir) {
			out = append(out, n)
		}
	}
	return out, true, nil
}

func newSearchable(t *testing.T, names ...string) searchable {
	t.Helper()
	m := memfs.New(memfs.Options{})
	for _, n := range names {
		d, _ := mounts.Split(n)
		if d != "." {
			require.NoError(t, mounts.MkdirAll(context.Background(), m, d, 0o755))
		}
		require.NoError(t, mounts.WriteFile(context.Background(), m, n, []byte("x"), 0o644))
	}
	return searchable{m, names}
}

func TestCandidatesSplitByMount(t *testing.T) {
	ctx := context.Background()
	re := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune("abc")}
	root := newSearchable(t, "a", "repo/hidden", "z-last", "zz/y")
	repo := newSearchable(t, "b/c", "d")
	u, err := New(map[string]mounts.FS{"/": root, "/repo": repo, "/deep/er": newSearchable(t, "q")})
	require.NoError(t, err)
	require.True(t, mounts.Capabilities(u).Has(mounts.CapSearch))

	for _, c := range []struct {
		dir  string
		want []string
	}{
		{".", []string{"a", "deep/er/q", "repo/b/c", "repo/d", "z-last", "zz/y"}},
		{"repo", []string{"repo/b/c", "repo/d"}},
		{"repo/b", []string{"repo/b/c"}},
		{"deep", []string{"deep/er/q"}},
		{"zz", []string{"zz/y"}},
	} {
		names, complete, err := u.Candidates(ctx, c.dir, re)
		require.NoError(t, err, c.dir)
		assert.True(t, complete, c.dir)
		assert.Equal(t, c.want, names, c.dir)
	}
	_, _, err = u.Candidates(ctx, "deep/nope", re) // in a synthetic directory
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// A mount that cannot narrow makes the union scan where it is.
	u2, err := New(map[string]mounts.FS{"/": root, "/plain": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	_, complete, err := u2.Candidates(ctx, ".", re)
	require.NoError(t, err)
	assert.False(t, complete)
	names, complete, err := u2.Candidates(ctx, "zz", re)
	require.NoError(t, err)
	assert.True(t, complete, "no plain mount below zz")
	assert.Equal(t, []string{"zz/y"}, names)
}
