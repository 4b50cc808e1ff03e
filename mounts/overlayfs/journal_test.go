package overlayfs_test

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// since asserts what the journal reports after token and returns the next
// token.
func since(t *testing.T, j *overlayfs.Journal, token string, want ...string) string {
	t.Helper()
	next, names, all := j.Since(token)
	require.False(t, all, "token %q is answerable", token)
	assert.Equal(t, want, names)
	return next
}

func TestJournal(t *testing.T) {
	lower, _ := memLower(t, "a=A", "d/b=B", "d/c=C", "e/f=F")
	o, _ := newOverlay(t, lower)
	j := o.Journal()

	tok := j.Token()
	tok = since(t, j, tok) // nothing yet: reads note nothing
	_, err := mounts.ReadFile(bg, o, "a")
	require.NoError(t, err)
	_, err = o.ReadDir(bg, "d")
	require.NoError(t, err)
	tok = since(t, j, tok)

	require.NoError(t, mounts.WriteFile(bg, o, "a", []byte("changed"), 0o644))
	require.NoError(t, mounts.Rename(bg, o, "e", "moved", 0))
	require.NoError(t, mounts.Unlink(bg, o, "d/b"))
	require.NoError(t, mounts.Mkdir(bg, o, "n", 0o755))
	require.NoError(t, mounts.Chmod(bg, o, "d/c", 0o755))
	tok = since(t, j, tok, "a", "d/b", "d/c", "e", "e/", "moved", "moved/", "n", "n/")

	// A write through a handle opened before the token shows after it.
	fl, err := mounts.OpenFile(bg, o, "d/c", os.O_WRONLY, 0)
	require.NoError(t, err)
	defer fl.Close()
	tok = since(t, j, tok, "d/c")
	_, err = fl.(mounts.WritableFile).WriteAt([]byte("more"), 0)
	require.NoError(t, err)
	tok = since(t, j, tok, "d/c")
	require.NoError(t, fl.(mounts.WritableFile).Truncate(1))
	tok = since(t, j, tok, "d/c")

	require.NoError(t, o.Reset(bg, "a"))
	tok = since(t, j, tok, "a", "a/")

	// What it cannot tell, it says: another run's token, a malformed
	// one, one from the future, and any after a reset of everything.
	for _, bad := range []string{"", "vfsmount:other:1", "garbage", tok + "0"} {
		_, names, all := j.Since(bad)
		assert.True(t, all, "token %q", bad)
		assert.Empty(t, names)
	}
	require.NoError(t, o.Reset(bg, "."))
	_, _, all := j.Since(tok)
	assert.True(t, all, "a reset of everything forgets the names")
	since(t, j, j.Token())
}

func TestJournalConcurrent(t *testing.T) {
	lower, _ := memLower(t, "a=A")
	o, _ := newOverlay(t, lower)
	j := o.Journal()
	tok := j.Token()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20 {
				name := string(rune('p'+i)) + string(rune('a'+k))
				assert.NoError(t, mounts.WriteFile(bg, o, name, []byte("x"), 0o644))
				j.Since(tok)
			}
		}()
	}
	wg.Wait()
	_, names, all := j.Since(tok)
	require.False(t, all)
	assert.Len(t, names, 80)
}

func TestPrivateNames(t *testing.T) {
	lower, _ := memLower(t, "a=A")
	upper := memfs.New(memfs.Options{})
	o, err := overlayfs.New(bg, lower, upper, overlayfs.Options{Private: []string{".git"}})
	require.NoError(t, err)
	require.NoError(t, mounts.MkdirAll(bg, o, ".git/refs", 0o755))
	require.NoError(t, mounts.WriteFile(bg, o, ".git/HEAD", []byte("x"), 0o644))
	require.NoError(t, mounts.WriteFile(bg, o, "a", []byte("B"), 0o644))
	changes, err := o.Changes(bg)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	assert.Equal(t, "a", changes[0].Path)
	require.NoError(t, o.Reset(bg, "."))
	changes, err = o.Changes(bg)
	require.NoError(t, err)
	assert.Empty(t, changes)
	head, err := mounts.ReadFile(bg, o, ".git/HEAD")
	require.NoError(t, err, "a reset of everything keeps the private names")
	assert.Equal(t, "x", string(head))
}
