package objstore

import (
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	require.NotEmpty(t, o.dirs[0].fast.packs.list, "the fixture's pack is mapped")
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
	assert.Equal(t, filepath.Join(dir, ".git", "objects", "pack"), o.dirs[0].fast.packs.dir)
	require.NotEmpty(t, o.dirs[0].fast.packs.list)
	_, ok, err := o.dirs[0].fast.packs.size(plumbing.NewHash(head))
	assert.True(t, ok)
	assert.NoError(t, err)
}

// TestConcurrentBytesOfAColdObjectDecodeOnce: readers of an object nobody
// has decoded yet, arriving while it decodes, wait for that one decode.
func TestConcurrentBytesOfAColdObjectDecodeOnce(t *testing.T) {
	fx := gittest.MainFixture(t)
	o, err := Open(fx.Dir)
	require.NoError(t, err)
	defer o.Close()
	tree := plumbing.NewHash(gittest.Git(t, fx.Dir, "rev-parse", "HEAD^{tree}"))
	size, err := strconv.Atoi(gittest.Git(t, fx.Dir, "cat-file", "-s", tree.String()))
	require.NoError(t, err)

	gate := make(chan struct{})
	var loads atomic.Int32
	o.onLoad = func(h plumbing.Hash) {
		assert.Equal(t, tree, h)
		loads.Add(1)
		<-gate
	}
	const readers = 8
	got := make([][]byte, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() { got[i], errs[i] = o.Bytes(plumbing.TreeObject, tree) })
	}
	// The decode waits at the gate until every other reader waits on it.
	require.Eventually(t, func() bool {
		return loads.Load() == 1 && gittest.Waiting("sync.WaitGroup.Wait", "golang.org/x/sync/singleflight.(*Group).Do") == readers-1
	}, 10*time.Second, time.Millisecond, "the readers wait on one decode")
	close(gate)
	wg.Wait()
	assert.Equal(t, int32(1), loads.Load(), "eight readers of a cold object, one decode")
	for i := range readers {
		require.NoError(t, errs[i])
		assert.Len(t, got[i], size, "reader %d", i)
		assert.Equal(t, got[0], got[i], "reader %d", i)
	}

	// A flight is not a cache: a later read decodes again, and a reader
	// asking for another type is told the object is not one.
	_, err = o.Bytes(plumbing.BlobObject, tree)
	assert.ErrorIs(t, err, plumbing.ErrObjectNotFound, "a tree is not a blob")
	assert.Equal(t, int32(2), loads.Load())
}
