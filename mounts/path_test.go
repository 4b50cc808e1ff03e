package mounts_test

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

var pathCases = []struct {
	name  string
	valid bool
}{
	{".", true},
	{"a", true},
	{"a/b/c", true},
	{"src/main.go", true},
	{"naïve café.txt", true},
	{"日本語/ファイル", true},
	{"emoji-🙂", true},
	{"with space", true},
	{" lead", true},
	{"trail ", true},
	{"...", true},
	{"a..b", true}, // ".." inside a component is a name, not a parent
	{"..a/b..", true},
	{".hidden/.git", true}, // the git mount adds its own rule for .git
	{`back\slash`, true},
	{"colon:name", true},
	{"a\u00a0b", true},               // no-break space
	{"a\u200bb", true},               // zero-width space: a format char, not a control
	{"a\u0085b", false},              // C1 controls are refused too
	{strings.Repeat("x", 255), true}, // ValidPath does not measure; CheckPath does
	{strings.Repeat("x", 256), true},

	{"", false},
	{"/", false},
	{"/a", false},
	{"//a", false},
	{"a/", false},
	{"a//b", false},
	{"./a", false},
	{"a/.", false},
	{"a/./b", false},
	{"..", false},
	{"../a", false},
	{"a/..", false},
	{"a/../b", false},
	{"a\x00b", false},
	{"\x00", false},
	{"a\x01", false},
	{"a\nb", false},
	{"a\rb", false},
	{"a\tb", false},
	{"\x1b[31mred", false},
	{"a\x1f", false},
	{"a\x7fb", false},
	{"\xff", false}, // fs.ValidPath wants UTF-8: such names cannot be served
	{"a/\x95b", false},
}

func TestValidPath(t *testing.T) {
	for _, tc := range pathCases {
		t.Run(strings.ToValidUTF8(tc.name, "?"), func(t *testing.T) {
			assert.Equalf(t, tc.valid, mounts.ValidPath(tc.name), "ValidPath(%q)", tc.name)
		})
	}
}

func TestCheckPath(t *testing.T) {
	long := strings.Repeat("x", mounts.MaxNameLen+1)
	tests := []struct {
		name string
		want error // nil: accepted
	}{
		{".", nil},
		{"a/b", nil},
		{strings.Repeat("x", mounts.MaxNameLen), nil},
		{strings.Repeat("é", mounts.MaxNameLen/2), nil}, // 254 bytes
		{"a/" + strings.Repeat("x", mounts.MaxNameLen) + "/b", nil},
		{long, mounts.ErrNameTooLong},
		{"a/" + long, mounts.ErrNameTooLong},
		{long + "/a", mounts.ErrNameTooLong},
		{strings.Repeat("é", mounts.MaxNameLen/2+1), mounts.ErrNameTooLong}, // 256 bytes, 128 runes: bytes count
		{"/x", fs.ErrInvalid},
		{"a//b", fs.ErrInvalid},
		{"a/../b", fs.ErrInvalid},
		{"a\x00b", fs.ErrInvalid},
		{long + "\n", fs.ErrInvalid}, // invalid wins over too long
		{"/" + long, fs.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name[:min(len(tc.name), 20)], func(t *testing.T) {
			err := mounts.CheckPath("mkdir", tc.name)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			var pe *fs.PathError
			require.True(t, errors.As(err, &pe), "%T is not a *fs.PathError", err)
			assert.Equal(t, "mkdir", pe.Op)
			assert.Equal(t, tc.name, pe.Path)
		})
	}
}

func TestSplit(t *testing.T) {
	tests := []struct{ name, dir, base string }{
		{".", ".", "."},
		{"a", ".", "a"},
		{"a/b", "a", "b"},
		{"a/b/c.go", "a/b", "c.go"},
		{"...", ".", "..."},
	}
	for _, tc := range tests {
		dir, base := mounts.Split(tc.name)
		assert.Equalf(t, [2]string{tc.dir, tc.base}, [2]string{dir, base}, "Split(%q)", tc.name)
	}
}

func TestJoin(t *testing.T) {
	tests := []struct{ dir, elem, want string }{
		{".", "a", "a"},
		{".", ".", "."},
		{"a", "b", "a/b"},
		{"a/b", "c", "a/b/c"},
		{"a", ".", "a"},
	}
	for _, tc := range tests {
		assert.Equalf(t, tc.want, mounts.Join(tc.dir, tc.elem), "Join(%q, %q)", tc.dir, tc.elem)
	}
}

func TestRel(t *testing.T) {
	for _, tc := range []struct{ name, dir, want string }{
		{"a/b/c", "a", "b/c"},
		{"a/b", "a/b", "."},
		{".", ".", "."},
		{"a", ".", "a"},
		{"ab/c", "ab", "c"},
	} {
		assert.Equal(t, tc.want, mounts.Rel(tc.name, tc.dir), "Rel(%q, %q)", tc.name, tc.dir)
		assert.Equal(t, tc.name, mounts.Join(tc.dir, mounts.Rel(tc.name, tc.dir)), "Join undoes Rel")
	}
}

func TestNameOf(t *testing.T) {
	tests := []struct {
		in, want string
		valid    bool // CheckPath accepts the result
	}{
		{"", ".", true},
		{"/", ".", true},
		{"///", ".", true},
		{".", ".", true},
		{"./", ".", true},
		{"/repo/a.go", "repo/a.go", true},
		{"repo/a.go", "repo/a.go", true},
		{"//repo//a.go/", "repo/a.go", true},
		{"/a/./b", "a/b", true},
		{"/a/../b", "b", true},
		{"./a", "a", true},
		{"/..", "..", false}, // kept, so CheckPath refuses the climb
		{"/../etc/passwd", "../etc/passwd", false},
		{"a/../../x", "../x", false},
		{"/a\x00b", "a\x00b", false},
	}
	for _, tc := range tests {
		got := mounts.NameOf(tc.in)
		assert.Equalf(t, tc.want, got, "NameOf(%q)", tc.in)
		assert.Equalf(t, tc.valid, mounts.CheckPath("open", got) == nil, "CheckPath(NameOf(%q))", tc.in)
	}
}

func TestPathOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{".", "/"},
		{"", "/"},
		{"a", "/a"},
		{"repo/a.go", "/repo/a.go"},
	}
	for _, tc := range tests {
		assert.Equalf(t, tc.want, mounts.PathOf(tc.in), "PathOf(%q)", tc.in)
	}
}

// FuzzValidPath checks the validator's invariants on arbitrary input: it
// never panics, CheckPath agrees with it, and what it accepts is a clean,
// unrooted name that the other path helpers round-trip.
func FuzzValidPath(f *testing.F) {
	for _, tc := range pathCases {
		f.Add(tc.name)
	}
	f.Add("a/" + strings.Repeat("y", 300))
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, name string) {
		valid := mounts.ValidPath(name)
		err := mounts.CheckPath("op", name)
		tooLong := false
		for _, elem := range strings.Split(name, "/") {
			tooLong = tooLong || len(elem) > mounts.MaxNameLen
		}
		switch {
		case !valid:
			if !errors.Is(err, fs.ErrInvalid) {
				t.Fatalf("CheckPath(%q) = %v, want fs.ErrInvalid", name, err)
			}
		case tooLong:
			if !errors.Is(err, mounts.ErrNameTooLong) {
				t.Fatalf("CheckPath(%q) = %v, want ErrNameTooLong", name, err)
			}
		case err != nil:
			t.Fatalf("CheckPath(%q) = %v for a valid name", name, err)
		}
		if err != nil {
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != name || pe.Op != "op" {
				t.Fatalf("CheckPath(%q) = %#v, want a *fs.PathError naming it", name, err)
			}
		}
		if !valid {
			return
		}
		if strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
			t.Fatalf("ValidPath accepted %q: rooted, trailing slash or empty component", name)
		}
		for _, elem := range strings.Split(name, "/") {
			if elem == ".." || (elem == "." && name != ".") {
				t.Fatalf("ValidPath accepted %q with a %q component", name, elem)
			}
		}
		for i := 0; i < len(name); i++ {
			if name[i] < 0x20 || name[i] == 0x7f {
				t.Fatalf("ValidPath accepted %q with control byte %#x", name, name[i])
			}
		}
		if path.Clean(name) != name {
			t.Fatalf("ValidPath accepted unclean %q", name)
		}
		if dir, base := mounts.Split(name); mounts.Join(dir, base) != name {
			t.Fatalf("Join(Split(%q)) = %q", name, mounts.Join(dir, base))
		}
		if got := mounts.NameOf(mounts.PathOf(name)); got != name {
			t.Fatalf("NameOf(PathOf(%q)) = %q", name, got)
		}
	})
}

// FuzzNameOf checks that cleaning user input yields either a name
// ValidPath accepts or one it refuses for a reason the input really had (a
// climb above the root, a control character, invalid UTF-8).
func FuzzNameOf(f *testing.F) {
	for _, s := range []string{"", "/", "/repo/a.go", "a/../../x", "./a//b/", "/a\x00b", "/..", "a/./b/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := mounts.NameOf(p)
		if mounts.NameOf(got) != got {
			t.Fatalf("NameOf is not idempotent on %q: %q then %q", p, got, mounts.NameOf(got))
		}
		if strings.HasPrefix(got, "/") {
			t.Fatalf("NameOf(%q) = %q is rooted", p, got)
		}
		if mounts.ValidPath(got) {
			return
		}
		climbs := got == ".." || strings.HasPrefix(got, "../")
		control := strings.ContainsFunc(got, unicode.IsControl)
		if !climbs && !control && utf8.ValidString(got) {
			t.Fatalf("NameOf(%q) = %q: invalid for no reason in the input", p, got)
		}
	})
}
