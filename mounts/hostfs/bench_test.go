package hostfs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkStat measures Stat of a file one directory down, the shape of
// most lookups, against os.Lstat of the same file.
func BenchmarkStat(b *testing.B) {
	dir := b.TempDir()
	require.NoError(b, os.MkdirAll(filepath.Join(dir, "d042"), 0o755))
	require.NoError(b, os.WriteFile(filepath.Join(dir, "d042", "f.txt"), []byte("x"), 0o644))
	fsys, err := Open(dir, Options{})
	require.NoError(b, err)
	defer fsys.(*FS).Close()
	ctx := context.Background()
	b.Run("hostfs", func(b *testing.B) {
		for b.Loop() {
			if _, err := fsys.Stat(ctx, "d042/f.txt"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.Lstat", func(b *testing.B) {
		p := filepath.Join(dir, "d042", "f.txt")
		for b.Loop() {
			if _, err := os.Lstat(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
