package gitfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

func TestIsURL(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{"file:///srv/repo.git", true},
		{"https://example.com/org/repo.git", true},
		{"ssh://git@example.com/org/repo.git", true},
		{"git@example.com:org/repo.git", true},
		{"/srv/repo", false},
		{"./repo", false},
		{"repo", false},
		{"C:/not/scp", false},
		{"dir@name/with:colon", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, isURL(tt.src), tt.src)
	}
}

func TestRedact(t *testing.T) {
	assert.Equal(t, "https://user:xxxxx@example.com/r.git", redact("https://user:secret@example.com/r.git"))
	assert.Equal(t, "https://example.com/r.git", redact("https://example.com/r.git"))
	assert.Equal(t, "/srv/repo", redact("/srv/repo"))
	err := badSource("https://user:secret@example.com/r.git", os.ErrNotExist)
	assert.NotContains(t, err.Error(), "secret", "a password never reaches an error")
	assert.ErrorIs(t, err, ErrBadSource)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestDiscover(t *testing.T) {
	fx := gittest.MainFixture(t)
	got, err := Discover(filepath.Join(fx.Dir, "a", "b"))
	require.NoError(t, err)
	assert.Equal(t, fx.Dir, got, "from a subdirectory")
	got, err = Discover(fx.Dir)
	require.NoError(t, err)
	assert.Equal(t, fx.Dir, got)

	bare := filepath.Join(t.TempDir(), "bare.git")
	gittest.Git(t, fx.Dir, "clone", "-q", "--bare", "--no-local", fx.Dir, bare)
	got, err = Discover(filepath.Join(bare, "refs"))
	require.NoError(t, err)
	assert.Equal(t, bare, got, "inside a bare repository")

	_, err = Discover(t.TempDir())
	assert.ErrorIs(t, err, ErrBadSource, "outside any repository")
}
