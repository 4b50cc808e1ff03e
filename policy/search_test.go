package policy

import (
	"context"
	"regexp/syntax"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// indexed is a memory mount that names every file as a candidate, as an
// index that cannot tell would.
type indexed struct {
	mounts.FS
	names []string
}

func (s indexed) Candidates(context.Context, string, *syntax.Regexp) ([]string, bool, error) {
	return s.names, true, nil
}

// TestGuardFiltersCandidates: a file deny_read covers, or one below a
// directory it covers, is never a search candidate.
func TestGuardFiltersCandidates(t *testing.T) {
	rs, err := Compile(Rules{DenyRead: []string{"*.pem", "/secrets/"}})
	require.NoError(t, err)
	fsys := indexed{memfs.New(memfs.Options{}), []string{"a.go", "key.pem", "d/cert.pem", "secrets/x", "secretsnot/y", "d/e/f"}}
	g := Guard(fsys, rs)
	require.True(t, mounts.Capabilities(g).Has(mounts.CapSearch))
	re := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune("abc")}
	names, complete, err := mounts.Candidates(context.Background(), g, ".", re)
	require.NoError(t, err)
	assert.True(t, complete)
	assert.Equal(t, []string{"a.go", "secretsnot/y", "d/e/f"}, names)
	_, _, err = mounts.Candidates(context.Background(), g, "secrets", re)
	assert.ErrorIs(t, err, mounts.ErrDenied, "a denied directory is refused, as its listing is")
}
