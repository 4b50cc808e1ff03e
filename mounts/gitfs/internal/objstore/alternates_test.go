package objstore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

func TestParseAlternate(t *testing.T) {
	tests := []struct {
		name, line, want string
		ok               bool
	}{
		{"absolute", "/src/.git/objects", "/src/.git/objects", true},
		{"relative", "../../ref/objects", "../../ref/objects", true},
		{"empty", "", "", false},
		{"comment", "# /not/this", "", false},
		{"not a comment past the start", " # x", " # x", true},
		{"blanks kept, as git keeps them", "/a b/objects ", "/a b/objects ", true},
		{"quoted", `"/with\ttab/and \"quote\"/objects"`, "/with\ttab/and \"quote\"/objects", true},
		{"quoted octal", `"/caf\303\251/objects"`, "/café/objects", true},
		{"broken quoting is the line as written", `"/unterminated`, `"/unterminated`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseAlternate([]byte(tt.line))
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// writeAlternates writes the alternates file of the object directory dir.
func writeAlternates(t *testing.T, dir string, lines ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "info"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "info", "alternates"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

func TestAlternatesAsGitReadsThem(t *testing.T) {
	root := t.TempDir()
	dir := func(name string) string {
		d := filepath.Join(root, name, "objects")
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	own, a, b, c := dir("own"), dir("a"), dir("b"), dir("c")
	require.NoError(t, os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "a-link")))
	writeAlternates(t, own,
		"# a comment",
		"../../a/objects", // relative to own
		"",
		`"`+b+`"`,
		filepath.Join(root, "a-link", "objects"), // a again, by another name
		own,                                      // itself
		filepath.Join(root, "missing", "objects"),
	)
	writeAlternates(t, a, "../../c/objects") // relative to a, not to own
	writeAlternates(t, c, own)               // a cycle back

	dirs, problems := alternates(own)
	assert.Equal(t, []string{a, c, b}, dirs, "depth first, in git's order, each once")
	require.Len(t, problems, 1)
	var ae *AlternateError
	require.ErrorAs(t, problems[0], &ae)
	assert.Equal(t, "objects/info/alternates", ae.File)
	assert.Equal(t, 7, ae.Line)
	assert.Equal(t, filepath.Join(root, "missing", "objects"), ae.Dir)
	assert.ErrorIs(t, ae, errAltNotFound)
	assert.ErrorContains(t, ae, "objects/info/alternates line 7")
	assert.ErrorContains(t, ae, filepath.Join(root, "missing", "objects"))
}

func TestAlternatesNestTooDeep(t *testing.T) {
	root := t.TempDir()
	var chain []string
	for i := range maxAlternateDepth + 3 {
		d := filepath.Join(root, string(rune('a'+i)), "objects")
		require.NoError(t, os.MkdirAll(d, 0o755))
		chain = append(chain, d)
	}
	for i := range len(chain) - 1 {
		writeAlternates(t, chain[i], chain[i+1])
	}
	dirs, problems := alternates(chain[0])
	// The repository's own file is read at depth 0 and the last one read
	// at maxAlternateDepth: as in git, maxAlternateDepth+1 alternates.
	assert.Equal(t, chain[1:maxAlternateDepth+2], dirs)
	require.Len(t, problems, 1)
	assert.ErrorIs(t, problems[0], errAltTooDeep)
	assert.ErrorContains(t, problems[0], chain[maxAlternateDepth+1])
}

func TestAlternatesThatAreNotDirectories(t *testing.T) {
	root := t.TempDir()
	own := filepath.Join(root, "objects")
	require.NoError(t, os.MkdirAll(own, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	writeAlternates(t, own, "../file", "not a path at all", "garbage\x00\x01")
	dirs, problems := alternates(own)
	assert.Empty(t, dirs)
	require.Len(t, problems, 3)
	assert.ErrorIs(t, problems[0], errAltNotDir)
	assert.ErrorIs(t, problems[1], errAltNotFound)
	assert.ErrorContains(t, problems[1], `line 2: object directory "`+filepath.Join(own, "not a path at all")+`"`)
	assert.ErrorContains(t, problems[2], "line 3", "a path the system refuses is named too")
}

// sharedClone makes a repository with packed objects, loose ones and a
// large loose blob (over maxLooseFile, which go-git serves), and a clone
// of it made with --shared, holding none of them. It returns both.
func sharedClone(t *testing.T) (src, clone string) {
	t.Helper()
	src, _ = gittest.SmallRepo(t, map[string]string{"a.txt": "packed\n", "d/b.go": "package b\n"})
	gittest.Git(t, src, "gc", "-q")
	rng := rand.New(rand.NewPCG(3, 4))
	big := make([]byte, maxLooseFile+4096) // random: does not compress
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	gittest.WriteFile(t, src, "big.bin", string(big), 0o644)
	gittest.WriteFile(t, src, "a.txt", "loose\n", 0o644)
	gittest.CommitAll(t, src, 1, "loose")
	clone = filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, src, "clone", "-q", "--shared", src, clone)
	return src, clone
}

func TestStoreReadsEveryObjectOfItsAlternates(t *testing.T) {
	src, clone := sharedClone(t)
	o, err := Open(clone)
	require.NoError(t, err)
	defer o.Close()
	require.NoError(t, o.Alternates())
	assert.Equal(t, []string{filepath.Join(clone, ".git", "objects"), filepath.Join(src, ".git", "objects")}, o.ObjectDirs())

	objs := catAll(t, src)
	require.NotEmpty(t, objs)
	for _, obj := range objs {
		n, err := o.Size(obj.hash)
		require.NoError(t, err, obj.hash.String())
		assert.Equal(t, int64(len(obj.content)), n)
		b, err := o.Bytes(plumbing.AnyObject, obj.hash)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(obj.content, b), obj.hash.String())
	}

	head := gittest.Git(t, clone, "rev-parse", "HEAD")
	h, err := o.Repository().ResolveRevision("HEAD")
	require.NoError(t, err, "go-git resolves through the alternates")
	assert.Equal(t, head, h.String())
	hh := plumbing.NewHash(head)
	hashes, err := o.HashesWithPrefix(hh[:2])
	require.NoError(t, err)
	assert.Contains(t, hashes, plumbing.NewHash(head), "a short SHA expands through the alternates")
}

func TestMissingAlternateIsNamedByAMiss(t *testing.T) {
	src, clone := sharedClone(t)
	blob := plumbing.NewHash(gittest.Git(t, src, "rev-parse", "HEAD:a.txt"))
	gone := filepath.Join(src, ".git", "objects")
	moved := filepath.Join(src, ".git", "objects-moved")
	require.NoError(t, os.Rename(gone, moved))
	o, err := Open(clone)
	require.NoError(t, err, "git too goes on without an alternate")
	defer o.Close()
	require.Error(t, o.Alternates())
	assert.ErrorContains(t, o.Alternates(), gone)
	assert.ErrorContains(t, o.Alternates(), "does not exist")

	_, err = o.Bytes(plumbing.BlobObject, blob)
	require.Error(t, err)
	assert.ErrorIs(t, err, plumbing.ErrObjectNotFound, "still a missing object")
	var ae *AlternateError
	assert.True(t, errors.As(err, &ae), "with the alternate skipped")
	assert.ErrorContains(t, err, blob.String())
	assert.ErrorContains(t, err, gone)
}

func TestObjectDirsAreAbsolute(t *testing.T) {
	_, clone := sharedClone(t)
	t.Chdir(filepath.Dir(clone))
	o, err := Open(filepath.Base(clone))
	require.NoError(t, err)
	defer o.Close()
	dirs := o.ObjectDirs()
	require.Len(t, dirs, 2)
	for _, d := range dirs {
		assert.True(t, filepath.IsAbs(d), d)
	}
}
