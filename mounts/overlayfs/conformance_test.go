package overlayfs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// allCaps is what an overlay over a memory or host upper offers; over a
// memory upper it can freeze too (memCaps), over a host one not.
const (
	allCaps = mounts.CapMutating | mounts.CapXattr | mounts.CapStatFS
	memCaps = allCaps | mounts.CapFreeze
)

// suiteFiles are the files and directories the suite seeds into a writable
// mount (mountstest's seedSteps), put in the lower instead, so that the
// suite's writes meet lower entries of the same names.
var suiteFiles = map[string]string{
	"hello.txt":           "hello, world\n",
	"empty":               "",
	"with space":          " ",
	"naïve café.txt":      "ünïcödé\n",
	"dir/b.txt":           "b\n",
	"dir/a.txt":           "a\n",
	"dir/nested/deep.txt": "deep\n",
	"f":                   "lower f",
	"a":                   "lower a",
	"d/x":                 "lower d/x",
}

var suiteLinks = map[string]string{"dir/link": "../hello.txt", "dirlink": "dir/nested"}

func TestConformance(t *testing.T) {
	t.Run("EmptyLower", func(t *testing.T) {
		mountstest.Run(t, func(t *testing.T) mounts.FS {
			lower, _ := memLower(t)
			o, _ := newOverlay(t, lower)
			return o
		}, mountstest.Caps(memCaps))
	})
	t.Run("HostUpper", func(t *testing.T) {
		mountstest.Run(t, func(t *testing.T) mounts.FS {
			lower, _ := memLower(t)
			upper, err := hostfs.Open(t.TempDir(), hostfs.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { upper.(*hostfs.FS).Close() })
			o, err := overlayfs.New(bg, lower, upper, overlayfs.Options{})
			require.NoError(t, err)
			return o
		}, mountstest.Caps(allCaps))
	})
	// Over a git commit holding the suite's own names, all removed
	// through the overlay before the suite starts: every name the suite
	// makes replaces a whiteout, every directory it makes is opaque, and
	// whatever it renames, links or changes meets bookkeeping.
	t.Run("GitLowerWhitedOut", func(t *testing.T) {
		repo := gitRepo(t, suiteFiles, suiteLinks)
		mountstest.Run(t, func(t *testing.T) mounts.FS {
			o, _ := newOverlay(t, gitLower(t, repo))
			ents, err := o.ReadDir(bg, ".")
			require.NoError(t, err)
			require.NotEmpty(t, ents)
			for _, e := range ents {
				require.NoError(t, mounts.RemoveAll(bg, o, e.Name))
			}
			return o
		}, mountstest.Caps(memCaps|mounts.CapSearch)) // a git lower narrows searches
	})
}

// readSide is what a read-only view of an overlay offers.
type readSide interface {
	mounts.FS
	mounts.XattrFS
	mounts.StatFSer
	mounts.StatDirFS
}

// view is an overlay with its write verbs out of reach, so that the suite
// checks a populated merged tree as it checks any pre-populated mount.
type view struct{ readSide }

// TestConformanceMerged runs the suite's read side over merged trees: a
// git commit seen through an untouched overlay, and the same commit after
// copy-ups, whiteouts, an opaque directory and renames of a file and of a
// directory, with Expect saying what the merged tree holds.
func TestConformanceMerged(t *testing.T) {
	files := map[string]string{
		"README.md":          "# readme\n",
		"empty":              "",
		"a/b/c/deep.txt":     "deep\n",
		"a/sibling.txt":      "sibling\n",
		"dir with space/ü":   "unicode\n",
		"bin/run.sh":         "#!/bin/sh\necho hi\n",
		"gone.txt":           "removed below\n",
		"old/x.txt":          "x\n",
		"old/sub/y.txt":      "y\n",
		"replaced/lower.txt": "hidden by the opaque directory\n",
	}
	links := map[string]string{"to-deep": "a/b/c/deep.txt", "a/up": "../README.md"}
	repo := gitRepo(t, files, links)
	caps := mountstest.Caps(mounts.CapXattr | mounts.CapStatFS)

	t.Run("Untouched", func(t *testing.T) {
		mountstest.Run(t, func(t *testing.T) mounts.FS {
			o, _ := newOverlay(t, gitLower(t, repo))
			return view{o}
		}, caps, mountstest.Expect(files), mountstest.ExpectSymlinks(links))
	})

	t.Run("Changed", func(t *testing.T) {
		want := map[string]string{
			"README.md":         "# changed\n",
			"empty":             "",
			"a/b/c/deep.txt":    "deep\n",
			"a/sibling.txt":     "sibling\n",
			"dir with space/ü":  "unicode\n",
			"bin/run.sh":        "#!/bin/sh\necho hi\n",
			"new/x.txt":         "x\n",
			"new/sub/y.txt":     "y\n",
			"new/sub/added.txt": "added\n",
			"replaced/new.txt":  "new\n",
			"moved.txt":         "sibling\n",
		}
		delete(want, "a/sibling.txt")
		mountstest.Run(t, func(t *testing.T) mounts.FS {
			o, _ := newOverlay(t, gitLower(t, repo))
			require.NoError(t, mounts.WriteFile(bg, o, "README.md", []byte("# changed\n"), 0o644))
			require.NoError(t, mounts.Unlink(bg, o, "gone.txt"))
			require.NoError(t, mounts.Rename(bg, o, "old", "new", 0))
			require.NoError(t, mounts.WriteFile(bg, o, "new/sub/added.txt", []byte("added\n"), 0o644))
			require.NoError(t, mounts.RemoveAll(bg, o, "replaced"))
			require.NoError(t, mounts.Mkdir(bg, o, "replaced", 0o755))
			require.NoError(t, mounts.WriteFile(bg, o, "replaced/new.txt", []byte("new\n"), 0o644))
			require.NoError(t, mounts.Rename(bg, o, "a/sibling.txt", "moved.txt", 0))
			require.NoError(t, mounts.Chmod(bg, o, "bin/run.sh", 0o700))
			return view{o}
		}, caps, mountstest.Expect(want), mountstest.ExpectSymlinks(links))
	})
}
