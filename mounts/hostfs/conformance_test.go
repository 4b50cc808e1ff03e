package hostfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

func TestConformance(t *testing.T) {
	var opts []mountstest.Option
	if os.Geteuid() != 0 {
		opts = append(opts, mountstest.UnprivilegedChown())
	}
	opts = append(opts, mountstest.Caps(mounts.CapMutating|mounts.CapXattr|mounts.CapStatFS))
	for _, r := range resolvers {
		t.Run(r.name, func(t *testing.T) {
			mountstest.Run(t, func(t *testing.T) mounts.FS {
				fsys, err := Open(t.TempDir(), Options{})
				require.NoError(t, err)
				t.Cleanup(func() { fsys.(*FS).Close() })
				fsys.(*FS).noOpenat2.Store(r.noOpenat2)
				return fsys
			}, opts...)
		})
	}
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
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(src, "emptydir"), 0o755))
	require.NoError(t, os.Symlink("dir/b.txt", filepath.Join(src, "link")))
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		fsys, err := Open(src, Options{ReadOnly: true})
		require.NoError(t, err)
		t.Cleanup(func() { fsys.(*ReadOnlyFS).Close() })
		return fsys
	}, mountstest.Caps(mounts.CapXattr|mounts.CapStatFS), mountstest.Expect(files),
		mountstest.ExpectSymlinks(map[string]string{"link": "dir/b.txt"}), mountstest.ExpectDirs("emptydir"))
}
