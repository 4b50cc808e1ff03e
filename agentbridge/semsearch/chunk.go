package semsearch

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// Chunking bounds.
const (
	// MaxFileSize is the largest file that is chunked; a larger one is
	// left out of the search (generated code, data, vendored bundles).
	MaxFileSize = 1 << 20
	// maxDeclLines splits a Go declaration longer than this into pieces.
	maxDeclLines = 80
	// maxParaLines and maxParaBytes bound a chunk of merged paragraphs.
	maxParaLines = 60
	maxParaBytes = 2048
	// sniffLen is how much of a file is looked at for a NUL (binary).
	sniffLen = 8000
)

// Chunk is a piece of a file that is embedded and found as one: its lines
// Start..End (1-based, inclusive).
type Chunk struct {
	Start, End int
	Text       string
}

// Binary reports whether data looks binary: a NUL in its first 8000
// bytes, as git and ripgrep decide.
func Binary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0
}

// Split chunks the file called name (its extension chooses how): a Go
// file by its top-level declarations, each with its doc comment (one over
// 80 lines in pieces of 80), the package clause and imports as one; any
// other text by paragraphs (runs of lines between blank lines) merged up
// to 60 lines or 2 KiB. A binary file, one over MaxFileSize and an empty
// one have no chunks. A Go file that does not parse is chunked as text.
func Split(name string, data []byte) []Chunk {
	if len(data) == 0 || len(data) > MaxFileSize || Binary(data) {
		return nil
	}
	lines := splitLines(string(data))
	if strings.HasSuffix(name, ".go") {
		if cs, ok := splitGo(data, lines); ok {
			return cs
		}
	}
	return splitParagraphs(lines)
}

// splitLines splits s into lines without their ends; a final line without
// a newline is a line.
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

func text(lines []string, start, end int) string {
	return strings.Join(lines[start-1:end], "\n")
}

// splitGo chunks Go source by its top-level declarations.
func splitGo(data []byte, lines []string) ([]Chunk, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", data, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	var spans [][2]int
	// The package clause (with the package doc) and the imports.
	head := [2]int{line(f.Package), line(f.Name.End())}
	if f.Doc != nil {
		head[0] = line(f.Doc.Pos())
	}
	var rest []ast.Decl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			head[1] = line(g.End())
			continue
		}
		rest = append(rest, d)
	}
	spans = append(spans, head)
	for _, d := range rest {
		start, end := line(d.Pos()), line(d.End())
		var doc *ast.CommentGroup
		switch d := d.(type) {
		case *ast.FuncDecl:
			doc = d.Doc
		case *ast.GenDecl:
			doc = d.Doc
		}
		if doc != nil {
			start = line(doc.Pos())
		}
		spans = append(spans, [2]int{start, end})
	}
	var out []Chunk
	for _, s := range spans {
		s[1] = min(s[1], len(lines))
		for from := s[0]; from <= s[1]; from += maxDeclLines {
			to := min(s[1], from+maxDeclLines-1)
			t := text(lines, from, to)
			if strings.TrimSpace(t) == "" {
				continue
			}
			out = append(out, Chunk{Start: from, End: to, Text: t})
		}
	}
	return out, true
}

// splitParagraphs chunks text by blank-line paragraphs, merged while the
// chunk stays within maxParaLines and maxParaBytes; a paragraph over
// those is cut.
func splitParagraphs(lines []string) []Chunk {
	var out []Chunk
	start, size := 0, 0 // the chunk being built: first line (1-based, 0: none), bytes
	end := 0
	flush := func() {
		if start > 0 {
			out = append(out, Chunk{Start: start, End: end, Text: text(lines, start, end)})
		}
		start, end, size = 0, 0, 0
	}
	i := 0
	for i < len(lines) {
		if strings.TrimSpace(lines[i]) == "" {
			i++
			continue
		}
		// The paragraph at lines[i:j].
		j := i
		psize := 0
		for j < len(lines) && strings.TrimSpace(lines[j]) != "" {
			psize += len(lines[j]) + 1
			j++
		}
		if start > 0 && (j-start+1 > maxParaLines || size+psize > maxParaBytes) {
			flush()
		}
		for k := i; k < j; k++ {
			if start > 0 && (k+1-start >= maxParaLines || size+len(lines[k])+1 > maxParaBytes) {
				flush()
			}
			if start == 0 {
				start = k + 1
			}
			end = k + 1
			size += len(lines[k]) + 1
		}
		i = j
	}
	flush()
	return out
}
