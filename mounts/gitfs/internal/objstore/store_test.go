package objstore

import (
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

func TestObjectsReadPackedObjectsWithTheirType(t *testing.T) {
	fx := gittest.MainFixture(t)
	o, err := Open(fx.Dir)
	require.NoError(t, err)
	defer o.Close()
	require.NotEmpty(t, o.fast.packs.list, "the fixture's pack is mapped")
	blob := plumbing.NewHash(gittest.Git(t, fx.Dir, "rev-parse", "HEAD:README.md"))
	b, err := o.Bytes(plumbing.BlobObject, blob)
	require.NoError(t, err)
	assert.Equal(t, "# fixture\n", string(b))
	_, _, err = o.Reader(plumbing.TreeObject, blob)
	assert.ErrorIs(t, err, plumbing.ErrObjectNotFound, "a blob is not a tree")
}

func TestObjectsDirOfALinkedWorktree(t *testing.T) {
	dir, head := gittest.SmallRepo(t, map[string]string{"a.txt": "packed\n"})
	gittest.Git(t, dir, "gc", "-q")
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, dir, "worktree", "add", "-q", "--detach", wt, head)
	o, err := Open(wt)
	require.NoError(t, err)
	defer o.Close()
	assert.Equal(t, filepath.Join(dir, ".git", "objects", "pack"), o.fast.packs.dir)
	require.NotEmpty(t, o.fast.packs.list)
	_, ok, err := o.fast.packs.size(plumbing.NewHash(head))
	assert.True(t, ok)
	assert.NoError(t, err)
}
