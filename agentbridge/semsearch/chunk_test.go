package semsearch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type span struct{ Start, End int }

func spans(cs []Chunk) []span {
	out := make([]span, len(cs))
	for i, c := range cs {
		out[i] = span{c.Start, c.End}
	}
	return out
}

// TestSplitGoByDeclarations: a Go file is its package clause with the
// imports, then each top-level declaration with its doc comment; the
// text of a chunk is its lines.
func TestSplitGoByDeclarations(t *testing.T) {
	src := `// Package p parses.
package p

import (
	"os"
)

// Config is the settings.
type Config struct {
	Name string
}

// parseConfig reads the config file.
func parseConfig(path string) (*Config, error) {
	_, err := os.ReadFile(path)
	return &Config{}, err
}

var x = 1

func (c *Config) String() string { return c.Name }
`
	cs := Split("p.go", []byte(src))
	assert.Equal(t, []span{{1, 6}, {8, 11}, {13, 17}, {19, 19}, {21, 21}}, spans(cs))
	assert.Equal(t, "// parseConfig reads the config file.\nfunc parseConfig(path string) (*Config, error) {\n\t_, err := os.ReadFile(path)\n\treturn &Config{}, err\n}", cs[2].Text)
}

// TestSplitGoLongDeclaration: a declaration over 80 lines is cut into
// pieces of 80.
func TestSplitGoLongDeclaration(t *testing.T) {
	var b strings.Builder
	b.WriteString("package p\n\nfunc long() {\n")
	for i := range 170 {
		fmt.Fprintf(&b, "\t_ = %d\n", i)
	}
	b.WriteString("}\n")
	cs := Split("p.go", []byte(b.String()))
	// func at line 3, closing brace at 3+170+1 = 174.
	assert.Equal(t, []span{{1, 1}, {3, 82}, {83, 162}, {163, 174}}, spans(cs))
}

// TestSplitGoThatDoesNotParse is chunked as text.
func TestSplitGoThatDoesNotParse(t *testing.T) {
	cs := Split("bad.go", []byte("package p\n\nfunc {\n\nmore\n"))
	assert.Equal(t, []span{{1, 5}}, spans(cs))
}

// TestSplitParagraphs: text is cut at blank lines, paragraphs merged up
// to 60 lines or 2 KiB; a paragraph too long is cut.
func TestSplitParagraphs(t *testing.T) {
	para := func(n, width int) string {
		var ls []string
		for i := range n {
			ls = append(ls, strings.Repeat(string(rune('a'+i%26)), width))
		}
		return strings.Join(ls, "\n")
	}
	t.Run("merged while small", func(t *testing.T) {
		doc := "# Title\n\nfirst para\nstill first\n\n\nsecond\n"
		assert.Equal(t, []span{{1, 7}}, spans(Split("README.md", []byte(doc))))
	})
	t.Run("by lines", func(t *testing.T) {
		doc := para(40, 5) + "\n\n" + para(30, 5) + "\n"
		// 40 lines, a blank, 30 more: the second would make 71.
		assert.Equal(t, []span{{1, 40}, {42, 71}}, spans(Split("a.txt", []byte(doc))))
	})
	t.Run("by bytes", func(t *testing.T) {
		doc := para(10, 150) + "\n\n" + para(10, 150) + "\n"
		assert.Equal(t, []span{{1, 10}, {12, 21}}, spans(Split("a.txt", []byte(doc))))
	})
	t.Run("a long paragraph is cut", func(t *testing.T) {
		cs := Split("a.txt", []byte(para(130, 3)+"\n"))
		assert.Equal(t, []span{{1, 60}, {61, 120}, {121, 130}}, spans(cs))
		for _, c := range cs {
			assert.Equal(t, c.End-c.Start+1, len(strings.Split(c.Text, "\n")))
		}
	})
	t.Run("CRLF", func(t *testing.T) {
		cs := Split("a.txt", []byte("one\r\ntwo\r\n\r\nthree\r\n"))
		require.Len(t, cs, 1)
		assert.Equal(t, "one\ntwo\n\nthree", cs[0].Text)
	})
}

// TestSplitSkips binary, empty and huge files.
func TestSplitSkips(t *testing.T) {
	assert.Empty(t, Split("a.bin", []byte("text\x00more")))
	assert.Empty(t, Split("a.txt", nil))
	assert.Empty(t, Split("a.txt", []byte("\n\n  \n")))
	assert.Empty(t, Split("a.txt", []byte(strings.Repeat("x\n", MaxFileSize/2+1))))
}
