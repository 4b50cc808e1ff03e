package hostpath

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReal(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.Symlink("real", filepath.Join(dir, "link")))
	assert.Equal(t, filepath.Join(dir, "real"), Real(filepath.Join(dir, "link")))
	assert.Equal(t, filepath.Join(dir, "real", "not", "yet"), Real(filepath.Join(dir, "link", "not", "yet")), "the longest existing parent is resolved")
	assert.Equal(t, filepath.Join(dir, "real"), Real(filepath.Join(dir, "link", "..", "real", ".")))
}
