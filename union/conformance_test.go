package union

import (
	"context"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// The union speaks the contract as every mount does (its errors name the
// names the caller passed), so the conformance suite runs on it directly:
// at its root for a root mount, and with mountstest.At at a mount point
// for the others, where every name the suite passes goes through the
// union's resolution.

func TestConformanceRootMount(t *testing.T) {
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return mustNew(t, map[string]mounts.FS{"/": newMem()})
	})
}

func TestConformanceNestedMount(t *testing.T) {
	// The mount under test sits at /agent/notes, below another memory
	// mount, next to a third: the workspace the integration tests use.
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return mustNew(t, map[string]mounts.FS{"/memory": newMem(), "/agent": newMem(), "/agent/notes": newMem()})
	}, mountstest.At("agent/notes"))
}

func TestConformanceReadOnlyMount(t *testing.T) {
	src := newMem()
	files := map[string]string{"README.md": "# hi\n", "src/a.go": "package a\n", "src/deep/b.txt": "b"}
	ctx := context.Background()
	for name, data := range files {
		d, _ := mounts.Split(name)
		if err := mounts.MkdirAll(ctx, src, d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := mounts.WriteFile(ctx, src, name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Symlink(ctx, "src/a.go", "link"); err != nil {
		t.Fatal(err)
	}
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return mustNew(t, map[string]mounts.FS{"/repo": readOnly{src}})
	}, mountstest.At("repo"), mountstest.Expect(files), mountstest.ExpectSymlinks(map[string]string{"link": "src/a.go"}), mountstest.Caps(0))
}
