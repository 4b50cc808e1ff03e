package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// ripgrepPath finds ripgrep on this machine's PATH, once; "" when it is
// not there. Tests replace it.
var ripgrepPath = sync.OnceValue(func() string {
	p, err := exec.LookPath("rg")
	if err != nil {
		return ""
	}
	return p
})

// ripgrepRuns counts the searches ripgrep answered (tests read it).
var ripgrepRuns struct {
	sync.Mutex
	ok, fellBack int
}

// ripgrep names, in walk order, the files below the directory dir that
// may match pattern (Go syntax, parsed with flags): a superset of those
// the walk and Go's regexp find, which the caller checks one by one. It
// runs ripgrep, much faster than Go's regexp over a tree, when ripgrep is
// on PATH and the peer knows its directory; ok is false when it cannot
// (no ripgrep, a pattern this cannot say in ripgrep's syntax, any error
// of ripgrep's, such as an unreadable file): the caller walks.
//
// Three things make its answer a superset of the Go scan's:
//   - the same files: every regular file below dir, hidden ones and
//     ignored ones included, no symlink followed, directories named .git
//     left out, binary files searched as text, no encoding guessed
//     (--hidden --no-ignore --text --encoding none -g '!.git/');
//   - the whole file as one string (--multiline), as re.Match(data) sees
//     it, not line by line;
//   - a pattern that matches wherever Go's does (rgSyntax): Go's tree
//     written out in the syntax both agree on, its assertions other than
//     ^ and $ dropped, and every class that matches U+FFFD (which Go also
//     matches at each byte of invalid UTF-8) matching any byte above
//     0x7F as well.
//
// Each name is then a file of the walk's: one below a symlink or a .git
// directory is refused (ripgrep reports none), so the checked answer is
// exactly the walk's.
func (s *server) ripgrep(ctx context.Context, dir, pattern string) (names []string, ok bool) {
	rg := ripgrepPath()
	if rg == "" || s.opts.Dir == "" {
		return nil, false
	}
	defer func() {
		ripgrepRuns.Lock()
		if ok {
			ripgrepRuns.ok++
		} else {
			ripgrepRuns.fellBack++
		}
		ripgrepRuns.Unlock()
	}()
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	expr, ok := rgSyntax(re)
	if !ok {
		return nil, false
	}
	// ripgrep runs in dir, opened beneath the served directory as the
	// host mount opens it (RESOLVE_BENEATH: a symlink that leads out is
	// refused), and searches ".": it never follows a symlink it meets.
	root, err := unix.Open(s.opts.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(root)
	fd := root
	if dir != "." {
		fd, err = unix.Openat2(root, dir, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return nil, false
		}
		defer unix.Close(fd)
	}
	cmd := exec.CommandContext(ctx, rg, "--no-config", "--files-with-matches", "--null",
		"--multiline", "--text", "--encoding", "none", "--hidden", "--no-ignore",
		"--glob", "!.git/", "--no-messages", "--regexp", expr, "--", "./")
	cmd.Dir = "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(fd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return nil, true // no match
	default:
		s.opts.Logger.Debug("peer: grep: ripgrep failed, searching without it", "pattern", pattern,
			"err", err, "stderr", strings.TrimSpace(stderr.String()))
		return nil, false
	}
	for _, rel := range bytes.Split(out, []byte{0}) {
		if len(rel) == 0 {
			continue
		}
		name, found := strings.CutPrefix(string(rel), "./")
		if !found {
			return nil, false
		}
		if mounts.CheckPath("grep", name) != nil {
			continue // not a name of the mount: the walk skips it too
		}
		names = append(names, mounts.Join(dir, name))
	}
	names, ok = s.inWalk(ctx, dir, names)
	if !ok {
		return nil, false
	}
	slices.SortFunc(names, mounts.CompareWalk)
	return names, true
}

// inWalk keeps the names the walk of dir would reach: none below a
// directory named .git or below a symlink. ok is false when a directory
// on the way cannot be looked at.
func (s *server) inWalk(ctx context.Context, dir string, names []string) (_ []string, ok bool) {
	walked := map[string]bool{dir: true} // directories the walk enters
	var enters func(d string) (bool, error)
	enters = func(d string) (bool, error) {
		if in, seen := walked[d]; seen {
			return in, nil
		}
		parent, base := mounts.Split(d)
		in := base != ".git" && parent != d
		if in {
			var err error
			if in, err = enters(parent); err != nil {
				return false, err
			}
		}
		if in {
			a, err := s.fsys.Stat(ctx, d) // lstat
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, err
			}
			in = err == nil && a.Mode.IsDir()
		}
		walked[d] = in
		return in, nil
	}
	out := names[:0]
	for _, name := range names {
		parent, _ := mounts.Split(name)
		in, err := enters(parent)
		if err != nil {
			return nil, false
		}
		if in {
			out = append(out, name)
		}
	}
	return out, true
}

// rgSyntax writes re in the syntax of ripgrep's default engine (Rust's
// regex crate) as an expression that matches wherever re does, in text
// searched as a whole. It uses only what both read alike: \x{…} escapes,
// classes as lists of ranges, non-capturing groups, the repetitions, and
// (?m:^) and (?m:$); case folding is spelled out (Go's simple folding).
// The other assertions (\A, \z, \b, \B) match the empty string instead:
// a superset, which the caller's check narrows. ok is false for what it
// does not write (an expression that matches nothing).
func rgSyntax(re *syntax.Regexp) (string, bool) {
	var b strings.Builder
	ok := writeRg(&b, re)
	return b.String(), ok
}

// invalidByte matches a byte that is not part of valid UTF-8, which Go's
// regexp reads as U+FFFD; ripgrep matches it only with a byte class.
const invalidByte = `(?-u:[\x80-\xFF])`

func writeRg(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		b.WriteString("(?:)")
	case syntax.OpBeginLine:
		b.WriteString("(?m:^)")
	case syntax.OpEndLine:
		b.WriteString("(?m:$)")
	case syntax.OpLiteral:
		b.WriteString("(?:")
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				writeClass(b, foldRanges(r))
			} else {
				writeClass(b, []rune{r, r})
			}
		}
		b.WriteString(")")
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return false
		}
		writeClass(b, re.Rune)
	case syntax.OpAnyCharNotNL:
		writeClass(b, []rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
	case syntax.OpAnyChar:
		writeClass(b, []rune{0, unicode.MaxRune})
	case syntax.OpCapture:
		b.WriteString("(?:")
		if !writeRg(b, re.Sub[0]) {
			return false
		}
		b.WriteString(")")
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString("(?:")
		if !writeRg(b, re.Sub[0]) {
			return false
		}
		b.WriteString(")")
		switch re.Op {
		case syntax.OpStar:
			b.WriteString("*")
		case syntax.OpPlus:
			b.WriteString("+")
		case syntax.OpQuest:
			b.WriteString("?")
		default:
			switch {
			case re.Max == re.Min:
				fmt.Fprintf(b, "{%d}", re.Min)
			case re.Max < 0:
				fmt.Fprintf(b, "{%d,}", re.Min)
			default:
				fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
			}
		}
	case syntax.OpConcat:
		b.WriteString("(?:")
		for _, sub := range re.Sub {
			if !writeRg(b, sub) {
				return false
			}
		}
		b.WriteString(")")
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteString("|")
			}
			if !writeRg(b, sub) {
				return false
			}
		}
		b.WriteString(")")
	default: // OpNoMatch, and any op added later
		return false
	}
	return true
}

// writeClass writes the ranges (pairs lo, hi) as one class, or a single
// character as itself; with U+FFFD in them, any byte that is not UTF-8
// too.
func writeClass(b *strings.Builder, ranges []rune) {
	invalid := false
	for i := 0; i < len(ranges); i += 2 {
		invalid = invalid || (ranges[i] <= utf8.RuneError && utf8.RuneError <= ranges[i+1])
	}
	if invalid {
		b.WriteString("(?:")
	}
	if len(ranges) == 2 && ranges[0] == ranges[1] {
		writeRune(b, ranges[0])
	} else {
		b.WriteString("[")
		for i := 0; i < len(ranges); i += 2 {
			writeRune(b, ranges[i])
			if ranges[i+1] != ranges[i] {
				b.WriteString("-")
				writeRune(b, ranges[i+1])
			}
		}
		b.WriteString("]")
	}
	if invalid {
		b.WriteString("|" + invalidByte + ")")
	}
}

// writeRune writes r: ASCII letters and digits as they are, anything else
// as \x{…}, which means the character itself in and out of a class.
func writeRune(b *strings.Builder, r rune) {
	if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
		b.WriteRune(r)
		return
	}
	fmt.Fprintf(b, `\x{%X}`, r)
}

// foldRanges is r's case-folding orbit (what Go's (?i) matches for r) as
// ranges of single characters, ascending.
func foldRanges(r rune) []rune {
	orbit := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		orbit = append(orbit, f)
	}
	slices.Sort(orbit)
	ranges := make([]rune, 0, 2*len(orbit))
	for _, c := range orbit {
		ranges = append(ranges, c, c)
	}
	return ranges
}
