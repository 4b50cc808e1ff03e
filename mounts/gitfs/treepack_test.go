package gitfs

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

// writeTestPack writes a pack of contents (by id) for key under dir.
func writeTestPack(t *testing.T, dir string, key []byte, contents map[plumbing.Hash]string) string {
	t.Helper()
	path := filepath.Join(dir, "p.v1.pack")
	w, err := newTreePackWriter(path, key)
	require.NoError(t, err)
	for h, c := range contents {
		w.add(h, []byte(c))
		w.add(h, []byte(c)) // twice, as two files with one blob
	}
	require.NoError(t, w.finish())
	return path
}

func TestTreePackRoundTrip(t *testing.T) {
	key := []byte("a tree id, 20 bytes.")
	contents := map[plumbing.Hash]string{hashOf(1): "one", hashOf(2): "", hashOf(9): "nine, a little longer"}
	p, err := openTreePack(writeTestPack(t, t.TempDir(), key, contents), key)
	require.NoError(t, err)
	defer p.release()
	assert.Equal(t, 3, p.n, "one entry per blob")
	for h, want := range contents {
		size, ok := p.size(h)
		require.True(t, ok)
		assert.Equal(t, int64(len(want)), size)
		got, ok := p.content(h)
		require.True(t, ok)
		assert.Equal(t, want, string(got))
	}
	_, ok := p.size(hashOf(5))
	assert.False(t, ok)
	_, ok = p.content(hashOf(10))
	assert.False(t, ok)
}

// A pack that is not whole, not this tree's, or whose table is damaged is
// refused; content that fails its CRC is not served, and the rest is.
func TestTreePackCorrupt(t *testing.T) {
	key := []byte("a tree id, 20 bytes.")
	contents := map[plumbing.Hash]string{hashOf(1): "first content", hashOf(2): "second content"}
	good, err := os.ReadFile(writeTestPack(t, t.TempDir(), key, contents))
	require.NoError(t, err)
	tableOff := len(good) - treePackTrailer - len(key) - 2*packEntrySize
	for name, bad := range map[string]func([]byte) []byte{
		"cut short":         func(b []byte) []byte { return b[:len(b)-1] },
		"empty":             func(b []byte) []byte { return nil },
		"table byte":        func(b []byte) []byte { b[tableOff+25] ^= 1; return b },
		"trailer magic":     func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"header magic":      func(b []byte) []byte { b[0] ^= 1; return b },
		"table offset":      func(b []byte) []byte { b[len(b)-treePackTrailer+4]++; return b },
		"zeros, as a crash": func(b []byte) []byte { return make([]byte, len(b)) },
		"only the ends": func(b []byte) []byte {
			return append(b[:len(treePackMagic):len(treePackMagic)], b[len(b)-treePackTrailer:]...)
		},
	} {
		path := filepath.Join(t.TempDir(), "p")
		require.NoError(t, os.WriteFile(path, bad(append([]byte(nil), good...)), 0o644))
		_, err := openTreePack(path, key)
		assert.ErrorIs(t, err, errTreePackCorrupt, name)
	}
	path := filepath.Join(t.TempDir(), "p")
	require.NoError(t, os.WriteFile(path, good, 0o644))
	_, err = openTreePack(path, []byte("another tree's key.."))
	assert.ErrorIs(t, err, errTreePackCorrupt, "another tree's")

	// A content byte: that blob is not served; the other is.
	damaged := append([]byte(nil), good...)
	damaged[len(treePackMagic)+1] ^= 0x20
	require.NoError(t, os.WriteFile(path, damaged, 0o644))
	p, err := openTreePack(path, key)
	require.NoError(t, err)
	defer p.release()
	first, second := hashOf(1), hashOf(2)
	if string(good[len(treePackMagic):len(treePackMagic)+3]) != "fir" {
		first, second = second, first // written in map order
	}
	_, ok := p.content(first)
	assert.False(t, ok, "the damaged content")
	_, ok = p.content(first)
	assert.False(t, ok, "still, once known bad")
	got, ok := p.content(second)
	require.True(t, ok)
	assert.Equal(t, contents[second], string(got))
}

// The mount reads through a damaged pack what the commit holds: a
// damaged content is decoded instead, and a pack whose table is damaged
// is removed (and the next build writes it again).
func TestTreePackMountDamaged(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, searchFiles)
	ctx := context.Background()
	for _, where := range []string{"content", "table"} {
		cache := t.TempDir()
		f := openFS(t, Options{Src: dir, CacheDir: cache, Index: IndexEager})
		f.search.wait()
		path := treePackPath(cache, f.search.key)
		require.NoError(t, f.Close())
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		if where == "content" {
			tableOff := binary.LittleEndian.Uint64(data[len(data)-treePackTrailer+4:])
			for i := len(treePackMagic); i < int(tableOff); i++ {
				data[i] ^= 0x55 // every byte of content: files and trees
			}
		} else {
			data[len(data)-treePackTrailer-len(f.search.key)-1] ^= 1
		}
		require.NoError(t, os.WriteFile(path, data, 0o644))

		second := openFS(t, Options{Src: dir, CacheDir: cache})
		for name, want := range searchFiles {
			got, err := mounts.ReadFile(ctx, second, name)
			require.NoError(t, err, where)
			assert.Equal(t, want, string(got), "%s: %s", where, name)
		}
		names, err := readDirNames(ctx, second, "b")
		require.NoError(t, err)
		assert.Equal(t, []string{"c.txt", "d"}, names)
		if where == "content" {
			assert.NotNil(t, second.blobs.pack.Load(), "the pack's table is sound")
			assert.Equal(t, int64(len(searchFiles)), second.blobs.loads.Load(), "every file decoded")
		} else {
			assert.Nil(t, second.blobs.pack.Load())
			assert.NoFileExists(t, path, "removed")
		}
	}
}

// A file open when the mount closes reads on from the mapping, which
// goes when its last reader does.
func TestTreePackOutlivesClose(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, searchFiles)
	cache := t.TempDir()
	f := openFS(t, Options{Src: dir, CacheDir: cache, Index: IndexEager})
	f.search.wait()
	require.NoError(t, f.Close())
	second := openFS(t, Options{Src: dir, CacheDir: cache})
	p := second.blobs.pack.Load()
	require.NotNil(t, p)
	file, err := second.Open(context.Background(), "a.go")
	require.NoError(t, err)
	require.NoError(t, second.Close())
	assert.Equal(t, int64(1), p.refs.Load(), "the open file's")
	buf := make([]byte, 64)
	n, _ := file.ReadAt(buf, 0)
	assert.Equal(t, searchFiles["a.go"], string(buf[:n]))
	require.NoError(t, file.Close())
	assert.Zero(t, p.refs.Load(), "unmapped")
}

// A cache directory keeps the tree packs used last, treePackKeep of them:
// publishing one removes the oldest, and opening one counts as a use.
func TestTreePackPrune(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range treePackKeep + 2 {
		p := filepath.Join(dir, fmt.Sprintf("%040d.v1.pack", i))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		when := old.Add(time.Duration(i) * time.Minute) // 0 is the oldest
		require.NoError(t, os.Chtimes(p, when, when))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other"), nil, 0o644))
	usedTreePack(filepath.Join(dir, fmt.Sprintf("%040d.v1.pack", 0))) // used now
	key := []byte("a tree id, 20 bytes.")
	w, err := newTreePackWriter(filepath.Join(dir, "new.v1.pack"), key)
	require.NoError(t, err)
	w.add(hashOf(1), []byte("content"))
	require.NoError(t, w.finish())

	var left []string
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	assert.ElementsMatch(t, []string{
		"new.v1.pack", fmt.Sprintf("%040d.v1.pack", 0),
		fmt.Sprintf("%040d.v1.pack", treePackKeep+1), fmt.Sprintf("%040d.v1.pack", treePackKeep),
		"other",
	}, left)
}

// A mount of a later commit narrows its first searches with its parent's
// index, and reads the files it did not change from the parent's tree
// pack: only the changed one is decoded.
func TestTreePackOfTheAncestor(t *testing.T) {
	dir, cache, _, head := parentIndexed(t) // b/c.txt changed since
	g := openFS(t, Options{Src: dir, Rev: head, CacheDir: cache})
	require.Nil(t, g.blobs.pack.Load(), "this tree has no pack of its own")
	// Nor will it get one: the index build the search starts cannot
	// publish its pack over a directory (so what is read below comes
	// from the parent's, whenever the build ends).
	require.NoError(t, os.Mkdir(treePackPath(cache, g.search.key), 0o755))
	_, ok, err := g.Candidates(context.Background(), ".", parseRe(t, "hello"))
	require.NoError(t, err)
	require.True(t, ok, "narrowed with the parent's index")
	require.NotNil(t, g.blobs.ancPack.Load(), "the parent's pack")
	for name, want := range searchFiles {
		if name == "b/c.txt" {
			want = "Hello, changed\n"
		}
		got, err := mounts.ReadFile(context.Background(), g, name)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), name)
	}
	assert.Equal(t, int64(1), g.blobs.loads.Load(), "only the changed file decoded")
}
