package sftpfs_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp/syntax"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
)

// A search runs grep on the remote machine: the files that hold the
// literal every match needs, in walk order, symlinks not followed, .git
// left out, a FIFO not read; a pattern with no such literal is not
// narrowed (the caller scans).
func TestCandidates(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	dir := t.TempDir()
	outside := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"a.txt":         "hello world\n",
		"b/c.go":        "func Hello() {}\n",
		"b/d.txt":       "nothing here\n",
		"b-e.txt":       "say hello\n",
		".git/config":   "hello from git\n",
		"sub dir/f.txt": "goodbye\n",
	})
	testutil.WriteFiles(t, outside, map[string]string{"x.txt": "hello outside\n"})
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	fsys := open(t, sshd, dir, true)
	ctx := context.Background()
	cands := func(dir, pattern string) ([]string, bool) {
		t.Helper()
		re, err := syntax.Parse(pattern, syntax.Perl)
		require.NoError(t, err)
		names, complete, err := mounts.Candidates(ctx, fsys, dir, re)
		require.NoError(t, err)
		return names, complete
	}
	names, complete := cands(".", "hello")
	assert.True(t, complete)
	assert.Equal(t, []string{"a.txt", "b-e.txt"}, names, "walk order: a.txt, then b-e.txt")
	names, complete = cands(".", "(?i)hello")
	assert.True(t, complete)
	assert.Equal(t, []string{"a.txt", "b/c.go", "b-e.txt"}, names, "b/ before b-e.txt in a walk")
	names, complete = cands("b", "(?i)HEL+O|nothing")
	assert.True(t, complete)
	assert.Equal(t, []string{"b/c.go", "b/d.txt"}, names)
	names, complete = cands(".", `good(bye|night)\b`)
	assert.True(t, complete)
	assert.Equal(t, []string{"sub dir/f.txt"}, names)
	names, complete = cands(".", "absent-literal")
	assert.True(t, complete)
	assert.Empty(t, names)
	_, complete = cands(".", "h.llo")
	assert.True(t, complete, "the longest literal, llo")
	_, complete = cands(".", "[a-z]+")
	assert.False(t, complete, "no literal every match holds: not narrowed")
	_, complete = cands(".", "(?i)ks")
	assert.False(t, complete, "Go folds k to the Kelvin sign; grep -i in C does not")
}
