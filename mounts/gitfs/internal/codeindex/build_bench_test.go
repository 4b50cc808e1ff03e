package codeindex

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// benchFiles is ~n bytes of Go-like text in files of about 7 KB.
func benchFiles(n int) [][]byte {
	rng := rand.New(rand.NewPCG(18, 2))
	words := []string{"return", "err", "nil", "if", "for", "range", "ctx", "func", "var", "string", "int", "bytes", "Buffer", "strings", "Builder", "append", "len", "make", "map", "struct"}
	var files [][]byte
	for total := 0; total < n; {
		var b strings.Builder
		size := 2*1024 + rng.IntN(11*1024)
		for b.Len() < size {
			b.WriteByte('\t')
			for i := range 4 + rng.IntN(8) {
				if i > 0 {
					b.WriteByte(' ')
				}
				if rng.IntN(7) == 0 {
					fmt.Fprintf(&b, "ident%04d", rng.IntN(10000))
				} else {
					b.WriteString(words[rng.IntN(len(words))])
				}
			}
			b.WriteByte('\n')
		}
		files = append(files, []byte(b.String()))
		total += b.Len()
	}
	return files
}

func BenchmarkBuild(b *testing.B) {
	files := benchFiles(100 << 20)
	names := make([]string, len(files))
	var size int64
	for i := range files {
		names[i] = fmt.Sprintf("f%05d", i)
		size += int64(len(files[i]))
	}
	b.SetBytes(size)
	for b.Loop() {
		bl := NewBuilder(names, 2)
		var wg sync.WaitGroup
		for k := range bl.Shards() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lo, hi := bl.Range(k)
				for id := lo; id < hi; id++ {
					bl.Add(k, id, files[id])
				}
			}()
		}
		wg.Wait()
		if err := bl.WriteTo(io.Discard, []byte("key")); err != nil {
			b.Fatal(err)
		}
	}
}
