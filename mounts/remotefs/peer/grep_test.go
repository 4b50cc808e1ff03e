package peer_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp/syntax"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// needRipgrep returns ripgrep's path; without it the test is skipped, or
// fails where the environment promises every real part.
func needRipgrep(t *testing.T) string {
	t.Helper()
	rg, err := exec.LookPath("rg")
	if err != nil {
		if os.Getenv("VFSMOUNT_REQUIRE_FUSE") == "1" {
			t.Fatal("ripgrep (rg) is not on PATH, and VFSMOUNT_REQUIRE_FUSE=1")
		}
		t.Skip("ripgrep (rg) is not on PATH")
	}
	return rg
}

// grepTree writes a tree with everything a search may treat differently:
// ignore files and what they name, hidden files, binary files (a NUL at
// the start, and one past ripgrep's first buffer), symlinks (out of the
// directory, and in it), .git directories and a .git file, invalid UTF-8,
// a UTF-16 byte order mark, CRLF lines, a FIFO, odd names.
func grepTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	files := map[string]string{
		"a.txt":                 "needle in a haystack\nfoo\nbar\n",
		".gitignore":            "ignored.txt\nbuild/\n*.log\n",
		"ignored.txt":           "needle, ignored by git\n",
		"build/out.txt":         "needle built\n",
		"x.log":                 "needle logged\n",
		".hidden":               "needle hidden\n",
		".dir/inner.txt":        "needle in a hidden dir\n",
		"bin/start.bin":         "\x00\x01needle binary\n",
		"bin/late.bin":          strings.Repeat("text line\n", 20000) + "\x00needle after a late NUL\n",
		".git/config":           "needle in git\n",
		".git/objects/ab/cd":    "needle object\n",
		"sub/.git/HEAD":         "needle nested git\n",
		"wt/.git":               "gitdir: ../needle\n",
		"latin1.txt":            "caf\xe9 au lait\nna\xefve\n",
		"utf16.txt":             "\xfe\xff\x4e\x2d\x65\x87",
		"crlf.txt":              "line one\r\nline two\r\n",
		"unicode.txt":           "stra\u00dfe\n\u212a kelvin\n\u00e9word here\n",
		"multi.txt":             "foo\nbar\n",
		"noeol.txt":             "needle at the end",
		"empty.txt":             "",
		"repeat.txt":            "aaab xyxz 12345\n",
		"deep/a/b/c/d.txt":      "needle deep\n",
		"new\nline.txt":         "needle in an odd name\n",
		"odd\ndir/f.txt":        "needle below an odd name\n",
		"\xffname.txt":          "needle in a name that is not UTF-8\n",
		"dot.d/-dash.txt":       "needle dash\n",
		"spaces in name/x y.go": "func needle() {}\n",
	}
	for name, data := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("needle SECRET outside\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "outfile")))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(root, "inlink.txt")))
	require.NoError(t, os.Symlink("deep", filepath.Join(root, "deeplink")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "needle.fifo"), 0o644))
	return root
}

// The peer's search gives the same answer with ripgrep as with the Go
// scan alone, for every pattern, in both modes, on a tree where they could
// differ; and ripgrep did answer (no silent fall back), except where
// it cannot.
func TestGrepRipgrepAgreesWithScan(t *testing.T) {
	rg := needRipgrep(t)
	root := grepTree(t)
	c := startPeer(t, root)
	type query struct {
		pat      string
		fold     bool
		dir      string
		fallBack bool // ripgrep cannot answer it: the scan does
	}
	queries := []query{
		{pat: "needle"}, {pat: "NEEDLE", fold: true}, {pat: "needle", dir: "deep"}, {pat: "needle", dir: "bin"},
		{pat: "needle", dir: "sub"}, {pat: "needle", dir: "a.txt"},
		{pat: `caf.`}, {pat: `caf[^a-z]`}, {pat: `\x{FFFD}`}, {pat: `na.ve`}, {pat: `N-`}, {pat: `^N`}, {pat: `\x{4e2d}`},
		{pat: `k`, fold: true}, {pat: `K KELVIN`, fold: true}, {pat: `STRASSE`, fold: true}, {pat: `straße`}, {pat: `\pL+ße`},
		{pat: `\bword\b`}, {pat: `\Bword`}, {pat: `\Aneedle`}, {pat: `end\z`}, {pat: `(?-m)^line two$`},
		{pat: `foo\nbar`}, {pat: `foo\sbar`}, {pat: `foo[^x]bar`}, {pat: `o$`}, {pat: `^bar`}, {pat: `one$`}, {pat: `one\r$`},
		{pat: `a{2,3}b`}, {pat: `(x|y)+z`}, {pat: `[[:digit:]]{5}`}, {pat: `(?s)foo.bar`}, {pat: `(?U)a+?b`},
		{pat: `.`}, {pat: `^$`, fallBack: true}, {pat: `x*`, fallBack: true}, {pat: ``, fallBack: true}, {pat: `\B`, fallBack: true},
		{pat: `\b`}, {pat: `\Qa.b\E`}, {pat: `\x00`}, {pat: `[\x00-\x{10FFFF}]`},
		{pat: `(?i)ΣΊΣΥΦΟΣ|σίσυφος`}, {pat: `SECRET`}, {pat: `gitdir`}, {pat: `[^\x00-\x{10FFFF}]`, fallBack: true},
	}
	search := func(q query, filesOnly bool) *wire.Response {
		dir := q.dir
		if dir == "" {
			dir = "."
		}
		resp := c.call(wire.Request{Op: wire.OpGrep, Name: dir, Grep: &wire.Grep{Dir: dir, Pattern: q.pat,
			IgnoreCase: q.fold, FilesOnly: filesOnly, Content: 1 << 20}})
		require.Nil(t, resp.Err, "%q", q.pat)
		return resp
	}
	show := func(resp *wire.Response) string {
		var b strings.Builder
		for _, m := range resp.Matches {
			fmt.Fprintf(&b, "%q:%d:%q\n", m.Name, m.Line, m.Text)
		}
		for _, f := range resp.Files {
			fmt.Fprintf(&b, "file %q %d %v\n", f.Name, len(f.Data), f.Attr.Mode)
		}
		return b.String()
	}
	answers := map[string][]string{} // files only: the names
	for _, q := range queries {
		for _, filesOnly := range []bool{true, false} {
			restore := peer.SetRipgrep("")
			want := show(search(q, filesOnly))
			restore()
			restore = peer.SetRipgrep(rg)
			ok0, fell0 := peer.RipgrepRuns()
			got := show(search(q, filesOnly))
			ok1, fell1 := peer.RipgrepRuns()
			restore()
			assert.Equal(t, want, got, "pattern %q (fold %v, files only %v): ripgrep and the scan disagree", q.pat, q.fold, filesOnly)
			if q.fallBack || q.dir == "a.txt" {
				assert.Equal(t, ok0, ok1, "%q: ripgrep is not run", q.pat)
			} else {
				assert.Equal(t, []int{ok0 + 1, fell0}, []int{ok1, fell1}, "%q: ripgrep answered", q.pat)
			}
			if filesOnly && q.dir == "" {
				resp := search(q, true)
				var names []string
				for _, m := range resp.Matches {
					names = append(names, m.Name)
				}
				answers[fmt.Sprint(q.pat, q.fold)] = names
			}
		}
	}

	// And the answer is the tool face's file set: what no two wrong
	// answers could agree on.
	needle := answers["needlefalse"]
	for _, name := range []string{"a.txt", "ignored.txt", "build/out.txt", "x.log", ".hidden", ".dir/inner.txt",
		"bin/start.bin", "bin/late.bin", "wt/.git", "noeol.txt", "deep/a/b/c/d.txt",
		"dot.d/-dash.txt", "spaces in name/x y.go"} {
		assert.Contains(t, needle, name, "searched")
	}
	for _, name := range needle {
		assert.False(t, strings.HasPrefix(name, ".git/") || strings.HasPrefix(name, "sub/.git/") ||
			strings.HasPrefix(name, "out") || name == "inlink.txt" || strings.HasPrefix(name, "deeplink") || name == "needle.fifo" ||
			strings.Contains(name, "\n") || name == "\xffname.txt",
			"not searched: %q", name)
	}
	assert.Equal(t, answers["needlefalse"], answers["NEEDLEtrue"])
	assert.Contains(t, answers["caf.false"], "latin1.txt", "Go's . matches a byte that is not UTF-8")
	assert.Contains(t, answers[`\x{FFFD}false`], "latin1.txt")
	assert.Contains(t, answers["N-false"], "utf16.txt", "no encoding guessed from a byte order mark")
	assert.Contains(t, answers["ktrue"], "unicode.txt", "(?i)k matches the Kelvin sign")
	assert.Contains(t, answers[`\bword\bfalse`], "unicode.txt", "Go's \\b is ASCII's: é is not a word character")
	assert.NotContains(t, answers[`\Bwordfalse`], "unicode.txt")
	assert.Contains(t, answers[`foo\nbarfalse`], "multi.txt", "the file as a whole")
	assert.Contains(t, answers[`end\zfalse`], "noeol.txt")
	assert.NotContains(t, answers[`\Aneedlefalse`], "bin/start.bin", `\A is the file's start`)
	assert.Contains(t, answers[`\Aneedlefalse`], "a.txt")
	assert.NotContains(t, answers["one$false"], "crlf.txt", "$ is before \\n, not \\r")
	assert.Contains(t, answers[`one\r$false`], "crlf.txt")
	assert.Empty(t, answers["SECRETfalse"], "nothing outside the directory")
	assert.Equal(t, []string{"wt/.git"}, answers["gitdirfalse"], "a .git file is searched, .git directories are not")
	assert.Contains(t, answers["false"], "empty.txt", "the empty expression matches an empty file (the scan answers it)")
	assert.Contains(t, answers[".false"], "bin/start.bin")
}

// A search from a symlink, or one leading out, is refused with ripgrep
// as without it: ripgrep runs only in a directory the walk would list.
func TestGrepRipgrepConfined(t *testing.T) {
	rg := needRipgrep(t)
	root := grepTree(t)
	c := startPeer(t, root)
	for _, dir := range []string{"out", "deeplink", "out/..", "../root"} {
		var errs []string
		for _, path := range []string{"", rg} {
			restore := peer.SetRipgrep(path)
			resp := c.call(wire.Request{Op: wire.OpGrep, Name: dir, Grep: &wire.Grep{Dir: dir, Pattern: "needle"}})
			restore()
			require.NotNil(t, resp.Err, "%s is refused", dir)
			assert.Empty(t, resp.Matches)
			errs = append(errs, fmt.Sprint(*resp.Err))
		}
		assert.Equal(t, errs[0], errs[1], dir)
	}
}

// rgSyntax writes nothing ripgrep would read differently: each pattern
// here is checked against the scan by the test above; this one checks the
// text of a few.
func TestRipgrepSyntax(t *testing.T) {
	for pat, want := range map[string]string{
		`ab`:        `(?:ab)`,
		`(?i)k`:     `(?:[Kk\x{212A}])`,
		`a.b`:       `(?:(?:a)(?:[\x{0}-\x{9}\x{B}-\x{10FFFF}]|(?-u:[\x80-\xFF]))(?:b))`,
		`(?m)^a|b$`: `(?:(?:(?m:^)(?:a))|(?:(?:b)(?m:$)))`,
		`\ba\z`:     `(?:(?:)(?:a)(?:))`,
		`x{2,}`:     `(?:(?:x)){2,}`,
		`[^a]`:      `(?:[\x{0}-\x{60}b-\x{10FFFF}]|(?-u:[\x80-\xFF]))`,
		`a\(\[\.`:   `(?:a\x{28}\x{5B}\x{2E})`,
	} {
		re, err := syntax.Parse(pat, syntax.Perl)
		require.NoError(t, err)
		got, ok := peer.RgSyntax(re)
		assert.True(t, ok, pat)
		assert.Equal(t, want, got, pat)
	}
	re, err := syntax.Parse(`[^\x00-\x{10FFFF}]`, syntax.Perl)
	require.NoError(t, err)
	_, ok := peer.RgSyntax(re)
	assert.False(t, ok, "a class of nothing")
}
