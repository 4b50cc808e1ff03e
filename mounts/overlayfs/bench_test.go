package overlayfs_test

import (
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
)

// BenchmarkStat compares a lookup of an untouched deep name through the
// overlay with the same lookup on the git mount below it, and with a
// changed sibling directory on the way, and of a changed deep name (every
// directory on its way in the upper).
func BenchmarkStat(b *testing.B) {
	g := gitLower(b, gitRepo(b, map[string]string{"src/pkg/deep/deeper/leaf.go": "package deeper\n", "src/other.go": "x"}, nil))
	o, _ := newOverlay(b, g)
	run := func(name string, fsys mounts.FS) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := fsys.Stat(bg, "src/pkg/deep/deeper/leaf.go"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("git", g)
	run("overlay", o)
	if err := mounts.WriteFile(bg, o, "src/other.go", []byte("changed"), 0o644); err != nil {
		b.Fatal(err)
	}
	run("overlay-changed-parent", o)
	// Every directory on the way in the upper, as after a checkout.
	if err := mounts.WriteFile(bg, o, "src/pkg/deep/deeper/leaf.go", []byte("changed"), 0o644); err != nil {
		b.Fatal(err)
	}
	run("overlay-upper-deep", o)
}
