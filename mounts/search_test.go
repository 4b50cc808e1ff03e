package mounts_test

import (
	"context"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// searchable is a memory mount that names fixed candidates.
type searchable struct {
	mounts.FS
	names []string
}

func (s searchable) Candidates(_ context.Context, dir string, _ *syntax.Regexp) ([]string, bool, error) {
	return s.names, true, nil
}

// TestInterceptFiltersCandidates: a candidate the interceptor would refuse
// to open, or one below a directory it would refuse to list, is left out;
// a rewritten name makes the search scan.
func TestInterceptFiltersCandidates(t *testing.T) {
	ctx := context.Background()
	fsys := searchable{memfs.New(memfs.Options{}), []string{"a", "d/x", "d/secret", "hidden/y", "hidden2"}}
	re := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune("abc")}
	deny := func(_ context.Context, c mounts.Call) (mounts.Call, error) {
		switch {
		case c.Op == mounts.OpOpen && strings.HasSuffix(c.Name, "secret"),
			c.Op == mounts.OpReadDir && c.Name == "hidden":
			return c, mounts.PathErr("open", c.Name, mounts.ErrDenied)
		}
		return c, nil
	}
	w := mounts.Intercept(fsys, mounts.Interceptor{Call: deny})
	assert.True(t, mounts.Capabilities(w).Has(mounts.CapSearch))
	names, complete, err := mounts.Candidates(ctx, w, ".", re)
	require.NoError(t, err)
	assert.True(t, complete)
	assert.Equal(t, []string{"a", "d/x", "hidden2"}, names)

	rewrite := func(_ context.Context, c mounts.Call) (mounts.Call, error) {
		if c.Name == "d/x" {
			c.Name = "elsewhere"
		}
		return c, nil
	}
	names, complete, err = mounts.Candidates(ctx, mounts.Intercept(fsys, mounts.Interceptor{Call: rewrite}), ".", re)
	require.NoError(t, err)
	assert.False(t, complete, "a rewritten name cannot be followed back")
	assert.Nil(t, names)

	_, complete, err = mounts.Candidates(ctx, memfs.New(memfs.Options{}), ".", re)
	require.NoError(t, err)
	assert.False(t, complete, "a mount without the capability cannot narrow")
}

func TestCompareWalk(t *testing.T) {
	names := []string{"a-c", "a/b", "a", "b", "a/b/c", "a/a", "ab"}
	slices.SortFunc(names, mounts.CompareWalk)
	assert.Equal(t, []string{"a", "a/a", "a/b", "a/b/c", "a-c", "ab", "b"}, names)
}
