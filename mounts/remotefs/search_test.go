package remotefs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp/syntax"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

// A search run on the peer brings the small files that match along: the
// caller reading them for their lines asks the peer nothing more; a large
// one is still read across the link; and a file changed on the remote
// machine after the search is seen as changed.
func TestCandidatesBringTheirContent(t *testing.T) {
	dir := t.TempDir()
	want := map[string]string{}
	for d := range 4 {
		for i := range 20 {
			name := fmt.Sprintf("d%d/f%02d.txt", d, i)
			data := fmt.Sprintf("file %d of d%d\n", i, d)
			if i%5 == 0 {
				data += "a needle here\n"
				want[name] = data
			}
			require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
		}
	}
	big := append(bytes.Repeat([]byte("large file line\n"), 32<<10), "needle at the end\n"...) // over 256 KiB
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), big, 0o644))
	fsys, peerFS := countedLink(t, dir)
	ctx := context.Background()

	re, err := syntax.Parse("(?m)needle", syntax.Perl)
	require.NoError(t, err)
	names, complete, err := mounts.Candidates(ctx, fsys, ".", re)
	require.NoError(t, err)
	require.True(t, complete)
	require.Len(t, names, len(want)+1)
	assert.Equal(t, "big.txt", names[0], "in walk order")

	before := peerFS.n.Load()
	for _, name := range names[1:] {
		assert.Equal(t, want[name], readAll(t, fsys, name))
	}
	assert.Equal(t, before, peerFS.n.Load(), "the files found are read with no open on the peer")
	assert.Equal(t, string(big), readAll(t, fsys, "big.txt"))
	assert.Greater(t, peerFS.n.Load(), before, "a large file is not brought along")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "d2/f05.txt"), []byte("changed there\n"), 0o644))
	require.Eventually(t, func() bool { return readAll(t, fsys, "d2/f05.txt") == "changed there\n" },
		5*time.Second, 10*time.Millisecond, "a file the search brought, changed on the remote machine")
}
