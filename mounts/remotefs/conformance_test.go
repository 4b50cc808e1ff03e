package remotefs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// The remote mount passes the suite every mount passes, over a real peer
// of a host directory.
func TestConformance(t *testing.T) {
	var opts []mountstest.Option
	if os.Geteuid() != 0 {
		opts = append(opts, mountstest.UnprivilegedChown())
	}
	opts = append(opts, mountstest.Caps(mounts.CapMutating|mounts.CapXattr|mounts.CapStatFS|mounts.CapSearch))
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return newLink(t, t.TempDir()).open(t, false)
	}, opts...)
}

func TestConformanceReadOnly(t *testing.T) {
	files := map[string]string{
		"a.txt":            "alpha",
		"dir/b.txt":        "beta",
		"dir/sub/c.txt":    "gamma",
		"with space/ü.txt": "unicode",
		"empty":            "",
	}
	src := t.TempDir()
	for name, content := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(src, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dir/b.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return newLink(t, src).open(t, true)
	}, mountstest.Caps(mounts.CapXattr|mounts.CapStatFS|mounts.CapSearch), mountstest.Expect(files),
		mountstest.ExpectSymlinks(map[string]string{"link": "dir/b.txt"}), mountstest.ExpectDirs("emptydir"))
}

// The differential: random operation sequences give the same errno and
// the same tree as a real directory. The peer serves a memory mount, which
// passes the same differential on its own: what is checked is that the
// link changes nothing (errors, numbers, links, caches). A host
// directory's peer refuses what would leave its root where Linux follows
// the link, by design, so it is not the reference here.
func TestDifferential(t *testing.T) {
	mountstest.Differential(t, mountstest.DifferentialOptions{
		New: func(t *testing.T, _ mounts.FS) mounts.FS {
			return serveLink(t, "", memfs.New(memfs.Options{})).open(t, false)
		},
		Seeds: 4, Stream: 28,
	})
}
