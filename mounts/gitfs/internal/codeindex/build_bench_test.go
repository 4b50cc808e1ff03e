package codeindex

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchFiles is ~n bytes of source-like text (words and numbered
// identifiers, short lines) in files of 2 to 13 KB, as the grep table of
// make bench generates.
func benchFiles(n int) [][]byte {
	rng := rand.New(rand.NewPCG(18, 2))
	words := strings.Fields("return err nil if for range ctx func var string int bytes Buffer append len make map struct")
	var files [][]byte
	for total := 0; total < n; {
		b := make([]byte, 0, 13*1024)
		for size := 2*1024 + rng.IntN(11*1024); len(b) < size; {
			if rng.IntN(7) == 0 {
				b = fmt.Appendf(b, "ident%04d", rng.IntN(10000))
			} else {
				b = append(b, words[rng.IntN(len(words))]...)
			}
			b = append(b, " \t\n"[rng.IntN(3)])
		}
		files = append(files, b)
		total += len(b)
	}
	return files
}

// BenchmarkBuild: filling a builder and encoding the file.
func BenchmarkBuild(b *testing.B) {
	names, files, size := benchTree()
	b.SetBytes(size)
	for b.Loop() {
		encode(b, names, files, 2, "key")
	}
}

// BenchmarkIndex: filling a builder, to an index searches can use (the
// git mount's build time; its file is written after).
func BenchmarkIndex(b *testing.B) {
	names, files, size := benchTree()
	b.SetBytes(size)
	for b.Loop() {
		ix, err := fill(names, files, 2).Index([]byte("key"))
		if err != nil {
			b.Fatal(err)
		}
		ix.Close()
	}
}

func benchTree() (names []string, files [][]byte, size int64) {
	files = benchFiles(100 << 20)
	names = make([]string, len(files))
	for i := range files {
		names[i] = fmt.Sprintf("f%05d", i)
		size += int64(len(files[i]))
	}
	return names, files, size
}

// BenchmarkOpen: opening a published index of benchTree's 100 MB (a new
// daemon's first search), its checksum checked whole.
func BenchmarkOpen(b *testing.B) {
	names, files, _ := benchTree()
	dir := b.TempDir()
	data := encode(b, names, files, 2, "key")
	if err := Publish(dir, "idx", data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		ix, err := Open(dir+"/idx", []byte("key"))
		if err != nil {
			b.Fatal(err)
		}
		ix.Close()
	}
}
