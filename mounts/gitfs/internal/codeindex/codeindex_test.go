package codeindex

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// build indexes files (in shards shards) and reads the index back.
func build(t *testing.T, files [][]byte, shards int) *Index {
	t.Helper()
	names := make([]string, len(files))
	for i := range files {
		names[i] = "f" + string(rune('a'+i%26)) + "/" + strings.Repeat("x", i%5)
	}
	ix, err := parse(encode(t, names, files, shards, "tree"), []byte("tree"))
	require.NoError(t, err)
	require.Equal(t, names, ix.names)
	return ix
}

// encode builds the index of files (named names) in shards shards, each
// filled by a goroutine of its own as the git mount fills them, and
// returns it written with key.
func encode(tb testing.TB, names []string, files [][]byte, shards int, key string) []byte {
	tb.Helper()
	data, err := fill(names, files, shards).Encode([]byte(key))
	require.NoError(tb, err)
	return data
}

// fill returns a builder of files (named names) in shards shards, each
// filled by a goroutine of its own as the git mount fills them.
func fill(names []string, files [][]byte, shards int) *Builder {
	b := NewBuilder(names, shards)
	var wg sync.WaitGroup
	for k := range b.Shards() {
		wg.Go(func() {
			lo, hi := b.Range(k)
			for id := lo; id < hi; id++ {
				b.Add(k, id, files[id])
			}
		})
	}
	wg.Wait()
	return b
}

// alphabet of the random texts and patterns: ASCII letters both cases,
// runes with unusual folds (K, the Kelvin sign, ſ), a newline, and bytes
// that are not UTF-8.
var textPieces = []string{"a", "b", "c", "A", "B", "K", "k", "\u212a", "s", "S", "\u017f", "é", "É", "\n", " ", "\xff", "\xe2\x82", "ab", "abc", "Abc"}

var patPieces = []string{"a", "b", "c", "A", "B", "K", "k", "s", "é", "ab", "abc", "bca", "kk", "\\n", " ", ".", "[ab]", "[^a]", "\\x{FFFD}", "\\w", "\\s", "(?:ab|bc)", "x?", "c+", "a{2}", "^", "$", "\\b", "[a-c]{2,3}", "(?i:abc)", "\\pL"}

func randText(r *rand.Rand) []byte {
	var b []byte
	for range r.IntN(40) {
		b = append(b, textPieces[r.IntN(len(textPieces))]...)
	}
	return b
}

// randTree is n random texts, named f0, f1...
func randTree(r *rand.Rand, n int) (names []string, files [][]byte) {
	for i := range n {
		names = append(names, fmt.Sprint("f", i))
		files = append(files, randText(r))
	}
	return names, files
}

func randPattern(r *rand.Rand) string {
	var b strings.Builder
	flags := []string{"", "(?i)", "(?s)", "(?m)", "(?i)(?m)(?s)"}
	b.WriteString(flags[r.IntN(len(flags))])
	for range 1 + r.IntN(6) {
		p := patPieces[r.IntN(len(patPieces))]
		if r.IntN(8) == 0 {
			p = "(?:" + p + "|" + patPieces[r.IntN(len(patPieces))] + ")"
		}
		b.WriteString(p)
	}
	return b.String()
}

// TestNoMissedMatch is the property the search depends on: every file a
// regexp matches (as Go's regexp matches it) is a candidate.
func TestNoMissedMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 1))
	files := make([][]byte, 300)
	for i := range files {
		files[i] = randText(r)
	}
	files[7] = append([]byte("abc\x00"), files[7]...) // binary: always scanned
	files[8] = nil
	ix := build(t, files, 3)
	assert.Equal(t, 1, ix.Scanned())
	narrowed := 0
	for range 3000 {
		pat := randPattern(r)
		re, err := regexp.Compile(pat)
		require.NoError(t, err, pat)
		sre, err := syntax.Parse(pat, syntax.Perl)
		require.NoError(t, err)
		ids, all, err := ix.Candidates(Query(sre), Literals(sre))
		require.NoError(t, err)
		if all {
			continue
		}
		narrowed++
		for id, data := range files {
			if re.Match(data) {
				_, found := slices.BinarySearch(ids, uint32(id))
				require.Truef(t, found, "pattern %q matches file %d %q, which is not a candidate (query %v)", pat, id, data, Query(sre))
			}
		}
	}
	assert.Greater(t, narrowed, 1000, "most patterns narrow (a broken analysis would answer all)")
}

// TestNarrows checks the index does narrow: literal, regexp and
// case-insensitive patterns choose the files that hold them.
func TestNarrows(t *testing.T) {
	files := [][]byte{
		[]byte("package main\nfunc Hello() {}\n"),
		[]byte("nothing to see here\n"),
		[]byte("HELLO world\n"),
		[]byte("hel\nlo\n"),
		[]byte("caf\xe9 hello\xff"), // invalid UTF-8: indexed as read
		[]byte("bin\x00hello"),      // binary: always a candidate
	}
	ix := build(t, files, 2)
	for _, c := range []struct {
		pat  string
		want []uint32
	}{
		{"Hello", []uint32{0, 5}},
		{"(?i)hello", []uint32{0, 2, 4, 5}},
		{"H[Ee]LLO|see", []uint32{1, 2, 5}},
		{"(?s)hel.lo", []uint32{3, 4, 5}}, // hel AND llo
		{"\\x{FFFD}", nil},                // a single rune: fewer than three bytes? no: three
		{"zzz", []uint32{5}},
	} {
		sre, err := syntax.Parse(c.pat, syntax.Perl)
		require.NoError(t, err)
		ids, all, err := ix.Candidates(Query(sre), Literals(sre))
		require.NoError(t, err)
		if c.pat == "\\x{FFFD}" {
			// U+FFFD is three bytes: the invalid bytes of file 4 are it.
			assert.False(t, all)
			assert.Equal(t, []uint32{4, 5}, ids, c.pat)
			continue
		}
		assert.False(t, all, c.pat)
		assert.Equal(t, c.want, ids, c.pat)
	}
	for _, pat := range []string{".", "[a-z]", "a", "x*", "\\w+"} {
		sre, err := syntax.Parse(pat, syntax.Perl)
		require.NoError(t, err)
		_, all, err := ix.Candidates(Query(sre), Literals(sre))
		require.NoError(t, err)
		assert.True(t, all, "%q cannot narrow", pat)
	}
}

// TestShardsAgree: the shard count changes nothing in the file written.
func TestShardsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	files := make([][]byte, 100)
	for i := range files {
		files[i] = randText(r)
	}
	var outs [][]byte
	for _, shards := range []int{1, 2, 7, 100} {
		outs = append(outs, encode(t, make([]string, len(files)), files, shards, "k"))
	}
	for i := 1; i < len(outs); i++ {
		assert.Equal(t, outs[0], outs[i], "shards %d", i)
	}
}

func publish(t *testing.T, dir string) string {
	t.Helper()
	data := encode(t, []string{"a", "b/c"}, [][]byte{[]byte("hello world"), []byte("goodbye world")}, 1, "tree")
	require.NoError(t, Publish(dir, "idx", data))
	return filepath.Join(dir, "idx")
}

// TestCorrupt flips every byte and cuts the file at every length: each
// is refused with ErrCorrupt, none is read as an index.
func TestCorrupt(t *testing.T) {
	dir := t.TempDir()
	name := publish(t, dir)
	good, err := os.ReadFile(name)
	require.NoError(t, err)
	ix, err := Open(name, []byte("tree"))
	require.NoError(t, err)
	require.NoError(t, ix.Close())
	_, err = Open(name, []byte("other"))
	assert.ErrorIs(t, err, ErrCorrupt, "another tree's index")
	badName := filepath.Join(dir, "bad")
	for i := range good {
		bad := slices.Clone(good)
		bad[i] ^= 0x5a
		_, err := parse(bad, []byte("tree"))
		require.ErrorIsf(t, err, ErrCorrupt, "byte %d flipped", i)
		require.NoError(t, os.WriteFile(badName, bad, 0o600))
		_, err = Open(badName, []byte("tree"))
		require.ErrorIsf(t, err, ErrCorrupt, "byte %d flipped, from a file", i)
	}
	for n := range len(good) {
		_, err := parse(good[:n], []byte("tree"))
		require.ErrorIsf(t, err, ErrCorrupt, "cut at %d", n)
		require.NoError(t, os.WriteFile(badName, good[:n], 0o600))
		_, err = Open(badName, []byte("tree"))
		require.ErrorIsf(t, err, ErrCorrupt, "cut at %d, from a file", n)
	}
	_, err = Open(filepath.Join(dir, "missing"), []byte("tree"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestPublishFailure: a write that fails (a full disk) publishes nothing
// and leaves no temporary file; the old index stays.
func TestPublishFailure(t *testing.T) {
	dir := t.TempDir()
	name := publish(t, dir)
	before, err := os.ReadFile(name)
	require.NoError(t, err)
	full := func(w io.Writer) error {
		w.Write([]byte("VFSC"))
		return syscall.ENOSPC
	}
	err = PublishTo(dir, "idx", full)
	assert.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
	after, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "the temporary file is removed")
}

// TestLiteralsNarrowPastTrigrams: a file with every trigram of a literal,
// but not adjacent, is left out by the follow masks.
func TestLiteralsNarrowPastTrigrams(t *testing.T) {
	// A filler whose follow bit is neither d's nor D's.
	filler := byte('e')
	for ; followBit(filler)&(followBit('d')|followBit('D')) != 0; filler++ {
	}
	ix := build(t, [][]byte{[]byte("abc" + string(filler) + "bcd"), []byte("xabcdx"), []byte("ABCD")}, 1)
	for _, c := range []struct {
		pat  string
		want []uint32
	}{
		{"abcd", []uint32{1}},
		{"(?i)abcd", []uint32{1, 2}},
		{"a[b]c[d-d]", []uint32{1}},
		{"(abcd)+", []uint32{0, 1}}, // a repeat: trigrams only
	} {
		sre, err := syntax.Parse(c.pat, syntax.Perl)
		require.NoError(t, err)
		ids, all, err := ix.Candidates(Query(sre), Literals(sre))
		require.NoError(t, err)
		assert.False(t, all, c.pat)
		assert.Equal(t, c.want, ids, c.pat)
	}
	sre, err := syntax.Parse("(?i)kiss", syntax.Perl)
	require.NoError(t, err)
	assert.Empty(t, Literals(sre), "k and s fold to non-ASCII runes: no bytes to spell them")
	sre, err = syntax.Parse("(?i)IDENT4242", syntax.Perl)
	require.NoError(t, err)
	require.Len(t, Literals(sre), 1)
	assert.Len(t, Literals(sre)[0], 9)
}

// TestOpenReadsPostingsFromTheFile: an index opened from a file answers
// as the same index in memory, reading its posting lists from the file;
// once the file is cut short under it (truncated in place), a query that
// needs what is gone is an error wrapping ErrCorrupt, never an answer.
func TestOpenReadsPostingsFromTheFile(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	names, files := randTree(r, 200)
	data := encode(t, names, files, 2, "tree")
	mem, err := parse(data, []byte("tree"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, Publish(dir, "idx", data))
	name := filepath.Join(dir, "idx")
	ix, err := Open(name, []byte("tree"))
	require.NoError(t, err)
	defer ix.Close()
	require.Nil(t, ix.post, "postings are not read into memory")
	require.NotZero(t, ix.postLen)

	var pats []string
	for range 300 {
		pats = append(pats, randPattern(r))
	}
	query := func(ix *Index, pat string) ([]uint32, bool, error) {
		sre, err := syntax.Parse(pat, syntax.Perl)
		require.NoError(t, err)
		return ix.Candidates(Query(sre), Literals(sre))
	}
	narrowed := 0
	for _, pat := range pats {
		want, wantAll, err := query(mem, pat)
		require.NoError(t, err)
		got, all, err := query(ix, pat)
		require.NoError(t, err)
		require.Equal(t, wantAll, all, pat)
		require.Equal(t, want, got, pat)
		if !all {
			narrowed++
		}
	}
	require.Greater(t, narrowed, 100)

	// Cut the posting lists in half, in place.
	require.NoError(t, os.Truncate(name, ix.postAt+int64(ix.postLen/2)))
	failed := 0
	for _, pat := range pats {
		want, wantAll, err := query(mem, pat)
		require.NoError(t, err)
		got, all, err := query(ix, pat)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			failed++
			continue
		}
		require.Equal(t, wantAll, all, pat)
		require.Equal(t, want, got, pat)
	}
	assert.Greater(t, failed, 10, "queries that need the postings cut off fail")
}

// TestLongPostingLists: posting lists that run over many arena chunks,
// with entries of one, two and more bytes (deltas of 1, 3 and 700 files),
// read back exactly, whatever the shards.
func TestLongPostingLists(t *testing.T) {
	files := make([][]byte, 30000)
	for i := range files {
		text := "every"
		if i%3 == 0 {
			text += " third"
		}
		if i%700 == 0 {
			text += " seventh hundred"
		}
		files[i] = []byte(text)
	}
	for _, shards := range []int{1, 3} {
		ix := build(t, files, shards)
		for _, c := range []struct {
			pat   string
			every int
		}{{"every", 1}, {"third", 3}, {"hundred", 700}} {
			sre, err := syntax.Parse(c.pat, syntax.Perl)
			require.NoError(t, err)
			ids, all, err := ix.Candidates(Query(sre), Literals(sre))
			require.NoError(t, err)
			require.False(t, all)
			var want []uint32
			for id := 0; id < len(files); id += c.every {
				want = append(want, uint32(id))
			}
			require.Equal(t, want, ids, "%q, %d shards", c.pat, shards)
		}
	}
}

// TestFullArenaFailsTheBuild: posting lists that outgrow their arena make
// Encode fail (the mount then scans) rather than write an index missing
// entries; either way the builder's memory is given back.
func TestFullArenaFailsTheBuild(t *testing.T) {
	defer func(max uint64) { arenaMax = max }(arenaMax)
	arenaMax = 64 << 10
	files := benchFiles(1 << 20)
	names := make([]string, len(files))
	for _, end := range []string{"Encode", "Index"} {
		b := fill(names, files, 2)
		var err error
		if end == "Encode" {
			_, err = b.Encode([]byte("k"))
		} else {
			_, err = b.Index([]byte("k"))
		}
		require.ErrorIs(t, err, errNoRoom, end)
		for _, s := range b.shards {
			assert.Nil(t, s.tab, "table released")
			assert.Nil(t, s.tabMem.b)
			assert.Nil(t, s.posts.mem.b, "arena released")
		}
	}

	arenaMax = 4 << 20 // room enough: the same files index
	assert.Equal(t, len(files), build(t, files, 2).Len())
}

// TestCloseReleasesAnAbortedBuild: a build ended without Encode gives its
// memory back, and Close may be called twice.
func TestCloseReleasesAnAbortedBuild(t *testing.T) {
	files := benchFiles(64 << 10)
	b := NewBuilder(make([]string, len(files)), 1)
	for id := range files {
		b.Add(0, id, files[id])
	}
	s := b.shards[0]
	require.NotNil(t, s.tab)
	require.NotNil(t, s.posts.mem.b)
	b.Close()
	assert.Nil(t, s.tab)
	assert.Nil(t, s.posts.mem.b)
	assert.Nil(t, s.lists)
	b.Close()
}

// TestIndexBeforeItsFile: an index just built answers from the builder's
// posting lists as its file would, also while File writes that file's
// bytes (concurrent searches), which are those Encode returns; it then
// answers from them, and the builder's memory is given back.
func TestIndexBeforeItsFile(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	names, files := randTree(r, 300)
	key := []byte("tree")
	data := encode(t, names, files, 3, "tree")
	want, err := parse(data, key)
	require.NoError(t, err)

	b := fill(names, files, 3)
	shards := b.shards
	ix, err := b.Index(key)
	require.NoError(t, err)
	b.Close() // the index has the builder's memory, not b
	require.NotNil(t, ix.built)
	require.NotNil(t, shards[0].tab)

	var pats []*syntax.Regexp
	for range 300 {
		re, err := syntax.Parse(randPattern(r), syntax.Perl)
		require.NoError(t, err)
		pats = append(pats, re)
	}
	same := func(t *testing.T) int {
		narrowed := 0
		for _, re := range pats {
			wids, wall, err := want.Candidates(Query(re), Literals(re))
			require.NoError(t, err)
			ids, all, err := ix.Candidates(Query(re), Literals(re))
			require.NoError(t, err)
			require.Equal(t, wall, all, re.String())
			require.Equal(t, wids, ids, re.String())
			if !all {
				narrowed++
			}
		}
		return narrowed
	}
	require.Greater(t, same(t), 100, "patterns that read posting lists")

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { same(t) })
	}
	got, err := ix.File()
	require.NoError(t, err)
	wg.Wait()
	assert.Equal(t, data, got, "the bytes Encode returns")
	again, err := ix.File()
	require.NoError(t, err)
	assert.Same(t, &got[0], &again[0])
	assert.Nil(t, ix.built)
	for _, s := range shards {
		assert.Nil(t, s.tab, "the builder's memory is given back")
		assert.Nil(t, s.posts.mem.b)
	}
	same(t)
	require.NoError(t, ix.Close())
	same(t) // served from the file's bytes, on the heap
}

// TestCloseBeforeItsFile: an index closed before File gives the builder's
// memory back; its posting lists and its file are then an error.
func TestCloseBeforeItsFile(t *testing.T) {
	files := benchFiles(64 << 10)
	b := fill(make([]string, len(files)), files, 2)
	shards := b.shards
	ix, err := b.Index([]byte("k"))
	require.NoError(t, err)
	require.NoError(t, ix.Close())
	for _, s := range shards {
		assert.Nil(t, s.tab)
		assert.Nil(t, s.posts.mem.b)
	}
	re, err := syntax.Parse("return err", syntax.Perl)
	require.NoError(t, err)
	_, _, err = ix.Candidates(Query(re), Literals(re))
	assert.ErrorIs(t, err, errClosed)
	data, err := ix.File()
	assert.ErrorIs(t, err, errClosed)
	assert.Nil(t, data)
}

// TestQueryAfterClose: an index opened from a file and closed answers a
// query with an error, not a read of the unmapped file.
func TestQueryAfterClose(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	names, files := randTree(r, 50)
	dir := t.TempDir()
	require.NoError(t, Publish(dir, "idx", encode(t, names, files, 2, "tree")))
	ix, err := Open(filepath.Join(dir, "idx"), []byte("tree"))
	require.NoError(t, err)
	sre, err := syntax.Parse("abcd", syntax.Perl)
	require.NoError(t, err)
	_, _, err = ix.Candidates(Query(sre), Literals(sre))
	require.NoError(t, err)
	require.NoError(t, ix.Close())
	_, _, err = ix.Candidates(Query(sre), Literals(sre))
	require.ErrorIs(t, err, errClosed)
}
