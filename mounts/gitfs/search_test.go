package gitfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/codeindex"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

var searchFiles = map[string]string{
	"a.go":         "package a\nfunc Hello() {}\n",
	"b/c.txt":      "HELLO there\n",
	"b/d/e.md":     "nothing here\n",
	"b-c/f.txt":    "hello again\n",
	"bin.dat":      "\x00binary hello",
	"latin1.txt":   "caf\xe9 Hello",
	"z/zz/zzz.txt": "zzz\n",
}

func parseRe(t *testing.T, pat string) *syntax.Regexp {
	t.Helper()
	re, err := syntax.Parse(pat, syntax.Perl)
	require.NoError(t, err)
	return re
}

// scanMatches is what a scan finds: the regular files below dir whose
// content re matches, in walk order.
func scanMatches(t *testing.T, f *FS, dir, pat string) []string {
	t.Helper()
	re := regexp.MustCompile(pat)
	var out []string
	walk(t, f, dir, func(name string, e mounts.DirEntry) {
		if !e.Type.IsRegular() {
			return
		}
		data, err := mounts.ReadFile(context.Background(), f, name)
		require.NoError(t, err)
		if re.Match(data) {
			out = append(out, name)
		}
	})
	return out
}

// candidates returns the candidates that match, as a search keeps them.
func candidates(t *testing.T, f *FS, dir, pat string) ([]string, bool) {
	t.Helper()
	names, complete, err := f.Candidates(context.Background(), dir, parseRe(t, pat))
	require.NoError(t, err)
	if !complete {
		return nil, false
	}
	re := regexp.MustCompile(pat)
	var out []string
	for _, n := range names {
		data, err := mounts.ReadFile(context.Background(), f, n)
		require.NoError(t, err)
		if re.Match(data) {
			out = append(out, n)
		}
	}
	return out, true
}

func TestSearchThroughTheIndex(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, searchFiles)
	cache := t.TempDir()
	f := openFS(t, Options{Src: dir, CacheDir: cache})
	ctx := context.Background()
	assert.True(t, mounts.Capabilities(f).Has(mounts.CapSearch))

	_, complete, err := f.Candidates(ctx, ".", parseRe(t, "Hello"))
	require.NoError(t, err)
	assert.False(t, complete, "the first search scans while the index builds")
	f.search.wait()

	for _, pat := range []string{"Hello", "(?i)hello", "H[Ee]LLO|nothing", "(?m)^zzz$", "café|caf\\x{FFFD}", "(?s)hello.again"} {
		for _, d := range []string{".", "b", "b/d", "z"} {
			got, ok := candidates(t, f, d, pat)
			require.Truef(t, ok, "%q narrows once the index is built", pat)
			assert.Equalf(t, scanMatches(t, f, d, pat), got, "%q in %s", pat, d)
		}
	}
	names, complete, err := f.Candidates(ctx, ".", parseRe(t, "Hello"))
	require.NoError(t, err)
	require.True(t, complete)
	assert.Equal(t, []string{"a.go", "bin.dat", "latin1.txt"}, names, "narrowed, binary always a candidate, in walk order")
	for _, pat := range []string{".", "[a-z]", "x*"} {
		_, complete, err := f.Candidates(ctx, ".", parseRe(t, pat))
		require.NoError(t, err)
		assert.False(t, complete, "%q cannot narrow", pat)
	}
	_, _, err = f.Candidates(ctx, "a.go", parseRe(t, "x"))
	requirePathErr(t, err, mounts.ErrNotDir, "a.go")
	_, _, err = f.Candidates(ctx, "nope", parseRe(t, "x"))
	requirePathErr(t, err, os.ErrNotExist, "nope")

	// The next mount of the commit starts warm, from the cache directory.
	idx, err := filepath.Glob(filepath.Join(cache, "index", "*.idx"))
	require.NoError(t, err)
	require.Len(t, idx, 1)
	g := openFS(t, Options{Src: dir, CacheDir: cache})
	got, ok := candidates(t, g, ".", "Hello")
	assert.True(t, ok, "warm from the first search")
	assert.Equal(t, []string{"a.go", "latin1.txt"}, got)
}

// TestCorruptIndexIsRebuilt damages the published index in several ways:
// each is ignored, logged once, rebuilt, and no search result is wrong.
func TestCorruptIndexIsRebuilt(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, searchFiles)
	cache := t.TempDir()
	f := openFS(t, Options{Src: dir, CacheDir: cache, Index: IndexEager})
	f.search.wait()
	idx, err := filepath.Glob(filepath.Join(cache, "index", "*.idx"))
	require.NoError(t, err)
	require.Len(t, idx, 1)
	good, err := os.ReadFile(idx[0])
	require.NoError(t, err)

	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"empty", func([]byte) []byte { return nil }},
		{"flipped in the postings", func(b []byte) []byte { b[len(b)-20] ^= 0xff; return b }},
		{"flipped in the names", func(b []byte) []byte { b[100] ^= 0x01; return b }},
		{"another tree's", func(b []byte) []byte { b[13] ^= 0x01; return b }},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(idx[0], c.damage(append([]byte(nil), good...)), 0o644))
			var logs logBuffer
			g := openFS(t, Options{Src: dir, CacheDir: cache, Logger: newLogger(&logs)})
			_, complete, err := g.Candidates(context.Background(), ".", parseRe(t, "Hello"))
			require.NoError(t, err)
			assert.False(t, complete, "a bad index is not used")
			g.search.wait()
			_, _, _ = g.Candidates(context.Background(), ".", parseRe(t, "Hello"))
			assert.Equal(t, 1, strings.Count(logs.String(), "search index ignored"), logs.String())
			got, ok := candidates(t, g, ".", "(?i)hello")
			assert.True(t, ok, "rebuilt")
			assert.Equal(t, scanMatches(t, g, ".", "(?i)hello"), got)
			again, err := os.ReadFile(idx[0])
			require.NoError(t, err)
			assert.Equal(t, good, again, "the rebuilt index is published over the bad one")
		})
	}
}

// TestIndexCannotBeSaved: a cache directory the index cannot be written
// to (as a full disk) leaves the index in memory, logged; searches work.
func TestIndexCannotBeSaved(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, searchFiles)
	cache := t.TempDir()
	// "index" is a file: nothing can be created below it.
	require.NoError(t, os.WriteFile(filepath.Join(cache, "index"), nil, 0o644))
	var logs logBuffer
	f := openFS(t, Options{Src: dir, CacheDir: cache, Logger: newLogger(&logs), Index: IndexEager})
	f.search.wait()
	got, ok := candidates(t, f, ".", "Hello")
	assert.True(t, ok, "served from memory")
	assert.Equal(t, []string{"a.go", "latin1.txt"}, got)
	assert.Contains(t, logs.String(), "cannot save the search index")

	off := openFS(t, Options{Src: dir, CacheDir: t.TempDir(), Index: IndexOff})
	_, ok = candidates(t, off, ".", "Hello")
	assert.False(t, ok, "index=off never narrows")
}

// TestIndexFromTheBlobCache: a build after the mount's files were read
// takes them from the blob cache — from memory, and from disk for one
// that spilled — and writes the very index a build from git objects does.
func TestIndexFromTheBlobCache(t *testing.T) {
	files := map[string]string{"big.txt": strings.Repeat("big text, ", 4<<10) + "Hello\n"}
	for name, content := range searchFiles {
		files[name] = content
	}
	dir, _ := gittest.SmallRepo(t, files)
	cold := t.TempDir()
	f := openFS(t, Options{Src: dir, CacheDir: cold, Index: IndexEager})
	f.search.wait()

	// 256 KiB of cache spills blobs from 32 KiB: big.txt, 40 KiB.
	var logs logBuffer
	warm := t.TempDir()
	g := openFS(t, Options{Src: dir, CacheDir: warm, CacheSize: 256 << 10, Logger: newLogger(&logs)})
	for name := range files {
		_, err := mounts.ReadFile(context.Background(), g, name)
		require.NoError(t, err)
	}
	ready, err := g.WaitIndex(context.Background())
	require.NoError(t, err)
	require.True(t, ready)
	assert.Contains(t, logs.String(), fmt.Sprintf(" cached=%d ", len(files)), "every file from the blob cache")
	n, err := g.resolve(context.Background(), "test", "big.txt")
	require.NoError(t, err)
	bl, err := g.blobs.pin(n.hash)
	require.NoError(t, err)
	require.NotNil(t, bl)
	assert.NotNil(t, bl.file, "big.txt spilled to disk")
	g.blobs.release(bl)

	want, err := filepath.Glob(filepath.Join(cold, "index", "*.idx"))
	require.NoError(t, err)
	got, err := filepath.Glob(filepath.Join(warm, "index", "*.idx"))
	require.NoError(t, err)
	require.Len(t, want, 1)
	require.Len(t, got, 1)
	wantData, err := os.ReadFile(want[0])
	require.NoError(t, err)
	gotData, err := os.ReadFile(got[0])
	require.NoError(t, err)
	assert.Equal(t, wantData, gotData)
}

// TestConcurrentBuildersShareTheIndex: mounts of one tree building its
// index at once into one cache directory (two daemons) publish whole
// files; a later mount reads one, warm, and answers right.
func TestConcurrentBuildersShareTheIndex(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, searchFiles)
	cache := t.TempDir()
	var fss []*FS
	for range 4 {
		fss = append(fss, openFS(t, Options{Src: dir, CacheDir: cache, Index: IndexEager}))
	}
	for _, f := range fss {
		ready, err := f.WaitIndex(context.Background())
		require.NoError(t, err)
		require.True(t, ready)
	}
	ents, err := os.ReadDir(filepath.Join(cache, "index"))
	require.NoError(t, err)
	require.Len(t, ents, 1, "one index, no temporary file left")
	var logs logBuffer
	g := openFS(t, Options{Src: dir, CacheDir: cache, Logger: newLogger(&logs)})
	got, ok := candidates(t, g, ".", "(?i)hello")
	assert.True(t, ok, "warm")
	assert.Equal(t, scanMatches(t, g, ".", "(?i)hello"), got)
	assert.NotContains(t, logs.String(), "ignored")
}

// TestIndexCutShortAfterOpenFallsBackToTheScan: the mount reads posting
// lists from the index file as searches need them; a file truncated in
// place under it makes the search scan (and the index be rebuilt), never
// answer wrong.
func TestIndexCutShortAfterOpenFallsBackToTheScan(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, searchFiles)
	cache := t.TempDir()
	f := openFS(t, Options{Src: dir, CacheDir: cache, Index: IndexEager})
	f.search.wait()
	idx, err := filepath.Glob(filepath.Join(cache, "index", "*.idx"))
	require.NoError(t, err)
	require.Len(t, idx, 1)

	g := openFS(t, Options{Src: dir, CacheDir: cache})
	got, ok := candidates(t, g, ".", "Hello")
	require.True(t, ok, "warm from the file")
	assert.Equal(t, []string{"a.go", "latin1.txt"}, got)
	fi, err := os.Stat(idx[0])
	require.NoError(t, err)
	require.NoError(t, os.Truncate(idx[0], fi.Size()/2))

	scanned := 0
	for _, pat := range []string{"nothing", "zzz", "again", "Hello"} {
		names, complete, err := g.Candidates(context.Background(), ".", parseRe(t, pat))
		require.NoError(t, err)
		if !complete {
			scanned++
			continue // scans: right by construction
		}
		re := regexp.MustCompile(pat)
		var got []string
		for _, n := range names {
			data, err := mounts.ReadFile(context.Background(), g, n)
			require.NoError(t, err)
			if re.Match(data) {
				got = append(got, n)
			}
		}
		assert.Equalf(t, scanMatches(t, g, ".", pat), got, "%q", pat)
	}
	assert.Positive(t, scanned, "a search that needed what was cut off scanned")
	g.search.wait()
	got, ok = candidates(t, g, ".", "nothing")
	require.True(t, ok, "rebuilt")
	assert.Equal(t, []string{"b/d/e.md"}, got)
}

// TestSearchFromAnAncestorsIndex: a mount of a commit whose own index is
// not built yet narrows with the index of an ancestor's tree, found in the
// cache directory, and reads what changed since (added, modified) whatever
// the pattern, never what was deleted; the answers are the scan's, in walk
// order, from the first search on, for the whole tree and a subdir mount.
// Its own index is built all the same, and used once there.
func TestSearchFromAnAncestorsIndex(t *testing.T) {
	dir, first := gittest.SmallRepo(t, searchFiles)
	cache := t.TempDir()
	f := openFS(t, Options{Src: dir, Rev: first, CacheDir: cache})
	ready, err := f.WaitIndex(context.Background())
	require.NoError(t, err)
	require.True(t, ready)

	gittest.WriteFile(t, dir, "b/c.txt", "now it says hello\n", 0o644) // modified
	gittest.WriteFile(t, dir, "b/a new.txt", "Hello, new\n", 0o644)    // added
	gittest.WriteFile(t, dir, "b/d/e.md", "nothing here\n", 0o755)     // mode only
	gittest.WriteFile(t, dir, "b-c/g/h.txt", "HELLO below\n", 0o644)   // added directory
	require.NoError(t, os.Remove(filepath.Join(dir, "b-c", "f.txt")))  // deleted
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "z")))
	gittest.WriteFile(t, dir, "z", "hello, z is a file now\n", 0o644) // directory to file
	gittest.CommitAll(t, dir, 1, "one")
	gittest.WriteFile(t, dir, "a.go", "package a\nfunc Hello() { _ = 1 }\n", 0o644)
	head := gittest.CommitAll(t, dir, 2, "two") // its parent is not indexed: the grandparent is

	// b first, from the grandparent's root index; the whole tree, from
	// it too; b-c, from the whole tree's, just built, of its own commit.
	pats := []string{"Hello", "(?i)hello", "H[Ee]LLO|nothing", "(?m)^zzz$", "new|below", "xyzzy"}
	for _, sub := range []string{"b", "", "b-c"} {
		t.Run("subdir="+sub, func(t *testing.T) {
			var logs logBuffer
			g := openFS(t, Options{Src: dir, Rev: head, Subdir: sub, CacheDir: cache, Logger: newLogger(&logs)})
			for _, pat := range pats {
				for _, d := range []string{".", "b", "b/d", "b-c"} {
					if _, err := g.resolve(context.Background(), "test", d); err != nil {
						continue
					}
					got, ok := candidates(t, g, d, pat)
					require.Truef(t, ok, "%q in %s narrows with the ancestor's index", pat, d)
					assert.Equalf(t, scanMatches(t, g, d, pat), got, "%q in %s", pat, d)
				}
			}
			names, ok, err := g.Candidates(context.Background(), ".", parseRe(t, "xyzzy"))
			require.NoError(t, err)
			require.True(t, ok)
			want := map[string][]string{
				"":    {"a.go", "b/a new.txt", "b/c.txt", "b-c/g/h.txt", "bin.dat", "z"},
				"b":   {"a new.txt", "c.txt"},
				"b-c": {},
			}[sub]
			assert.Equal(t, want, names, "what changed, and the binary file, in walk order")
			assert.NotContains(t, logs.String(), "ignored")

			ready, err := g.WaitIndex(context.Background())
			require.NoError(t, err)
			require.True(t, ready, "its own index is built")
			names, ok, err = g.Candidates(context.Background(), ".", parseRe(t, "xyzzy"))
			require.NoError(t, err)
			require.True(t, ok)
			if sub == "" {
				assert.Equal(t, []string{"bin.dat"}, names, "its own index, once built")
			} else {
				assert.Empty(t, names)
			}
		})
	}
}

// TestAncestorTooFarIsNotUsed: an ancestor's index whose tree differs in
// more files than a search should read is not used: the first search
// scans, as without one.
func TestAncestorTooFarIsNotUsed(t *testing.T) {
	files := map[string]string{}
	for i := range minChanged + 1 {
		files[fmt.Sprintf("d/f%03d.txt", i)] = fmt.Sprintf("file %d\n", i)
	}
	dir, first := gittest.SmallRepo(t, files)
	cache := t.TempDir()
	ready, err := openFS(t, Options{Src: dir, Rev: first, CacheDir: cache}).WaitIndex(context.Background())
	require.NoError(t, err)
	require.True(t, ready)
	for name := range files {
		gittest.WriteFile(t, dir, name, "changed, all of them\n", 0o644)
	}
	head := gittest.CommitAll(t, dir, 1, "all changed")
	g := openFS(t, Options{Src: dir, Rev: head, CacheDir: cache})
	_, ok, err := g.Candidates(context.Background(), ".", parseRe(t, "file 7"))
	require.NoError(t, err)
	assert.False(t, ok, "too far: the search scans")
	assert.Nil(t, g.search.anc)
}

// parentIndexed makes a repository of searchFiles whose first commit's
// index is in cache, and a second commit that changes one file; it
// returns the repository, the cache, the index's path and the second
// commit.
func parentIndexed(t *testing.T) (dir, cache, idx, head string) {
	t.Helper()
	dir, first := gittest.SmallRepo(t, searchFiles)
	cache = t.TempDir()
	ready, err := openFS(t, Options{Src: dir, Rev: first, CacheDir: cache}).WaitIndex(context.Background())
	require.NoError(t, err)
	require.True(t, ready)
	files, err := filepath.Glob(filepath.Join(cache, "index", "*.idx"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	gittest.WriteFile(t, dir, "b/c.txt", "Hello, changed\n", 0o644)
	return dir, cache, files[0], gittest.CommitAll(t, dir, 1, "next")
}

// TestBadAncestorIndex: an ancestor's index that fails its check is
// ignored, logged once, and the search scans; one cut short after it was
// opened makes the search that meets it scan, is logged once and removed,
// and later searches do not use it; one whose mount closed under a search
// is not removed (the error was the close's).
func TestBadAncestorIndex(t *testing.T) {
	t.Run("corrupt", func(t *testing.T) {
		dir, cache, idx, head := parentIndexed(t)
		require.NoError(t, os.Truncate(idx, 100))
		var logs logBuffer
		g := openFS(t, Options{Src: dir, Rev: head, CacheDir: cache, Logger: newLogger(&logs)})
		for range 2 {
			_, ok, err := g.Candidates(context.Background(), ".", parseRe(t, "Hello"))
			require.NoError(t, err)
			assert.False(t, ok, "scans")
		}
		assert.Equal(t, 1, strings.Count(logs.String(), "search index ignored"), logs.String())
		assert.Nil(t, g.search.anc)
	})
	t.Run("cut short", func(t *testing.T) {
		dir, cache, idx, head := parentIndexed(t)
		var logs logBuffer
		g := openFS(t, Options{Src: dir, Rev: head, CacheDir: cache, Logger: newLogger(&logs)})
		got, ok := candidates(t, g, ".", "Hello")
		require.True(t, ok, "from the parent's index")
		assert.Equal(t, scanMatches(t, g, ".", "Hello"), got)
		require.NoError(t, os.Truncate(idx, 64)) // inside the header: every list is gone
		_, ok, err := g.Candidates(context.Background(), ".", parseRe(t, "Hello"))
		require.NoError(t, err)
		assert.False(t, ok, "the search that met it scans")
		assert.Nil(t, g.search.anc)
		assert.NoFileExists(t, idx)
		assert.Equal(t, 1, strings.Count(logs.String(), "search index ignored"), logs.String())
	})
	t.Run("closed", func(t *testing.T) {
		dir, cache, idx, head := parentIndexed(t)
		g := openFS(t, Options{Src: dir, Rev: head, CacheDir: cache})
		_, ok := candidates(t, g, ".", "Hello")
		require.True(t, ok)
		ix := g.search.anc.ix
		require.NoError(t, g.Close())
		_, _, err := ix.Candidates(codeindex.Query(parseRe(t, "Hello")), nil)
		require.Error(t, err, "its file is closed")
		g.search.drop(ix, err) // what the search that met the close does
		assert.FileExists(t, idx)
	})
}
