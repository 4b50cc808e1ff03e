package union

import (
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
)

// BenchmarkStat measures what the union adds to a Stat: resolution by
// longest prefix and the inode rewrite, against the same Stat made on the
// mount directly.
func BenchmarkStat(b *testing.B) {
	notes := newMem()
	if err := mounts.MkdirAll(ctx, notes, "a/b/c", 0o755); err != nil {
		b.Fatal(err)
	}
	if err := mounts.WriteFile(ctx, notes, "a/b/c/d.txt", []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	u, err := New(map[string]mounts.FS{"/": newMem(), "/memory": newMem(), "/agent": newMem(), "/agent/notes": notes})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := notes.Stat(ctx, "a/b/c/d.txt"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("union", func(b *testing.B) {
		for b.Loop() {
			if _, err := u.Stat(ctx, "agent/notes/a/b/c/d.txt"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("resolve", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, ok := resolve(u, "agent/notes/a/b/c/d.txt"); !ok {
				b.Fatal("not resolved")
			}
		}
	})
}
