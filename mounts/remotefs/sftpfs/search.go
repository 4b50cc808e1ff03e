package sftpfs

import (
	"context"
	"errors"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"

	"github.com/vfsmount/vfsmount/mounts"
)

var _ mounts.SearchFS = (*ReadOnlyFS)(nil)

// Candidates implements mounts.SearchFS with grep run on the remote
// machine over ssh exec, so that a search does not read every file across
// the link: the files below dir holding a literal that every match of re
// must contain (grep -rlF, symlinks not followed, .git left out, devices
// and FIFOs skipped), in walk order. The caller still matches each with
// re. A pattern with no such literal, or a remote grep that lacks an
// option or cannot read a file, cannot be narrowed (complete false):
// the caller reads the files through the mount.
func (f *ReadOnlyFS) Candidates(ctx context.Context, dir string, re *syntax.Regexp) ([]string, bool, error) {
	if err := mounts.CheckPath("grep", dir); err != nil {
		return nil, false, err
	}
	lits, ok := required(re)
	if !ok {
		return nil, false, nil
	}
	var args strings.Builder
	args.WriteString("LC_ALL=C exec grep -rlFZ -D skip --exclude-dir=.git")
	for _, l := range lits {
		if l.fold {
			args.WriteString(" -i")
			break
		}
	}
	for _, l := range lits {
		args.WriteString(" -e " + shellQuote(l.s))
	}
	args.WriteString(" -- .")
	var s *ssh.Session
	var c *conn
	var abs string
	err := f.do(ctx, "grep", dir, func(cn *conn) (err error) {
		if abs, err = cn.dirOf(dir); err != nil {
			return err
		}
		c = cn
		s, err = cn.ssh.NewSession()
		return err
	})
	if err != nil {
		return nil, false, err
	}
	defer s.Close()
	var out limitWriter
	out.b, out.n = &strings.Builder{}, 64<<20
	s.Stdout = &out
	if err := s.Start("sh -c " + shellQuote("cd "+shellQuote(abs)+" && "+args.String())); err != nil {
		return nil, false, nil
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-c.dead:
		return nil, false, mounts.PathErr("grep", dir, &linkError{what: "the link to " + f.opts.Source + " was lost", cause: c.err})
	}
	var ee *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitStatus() == 1:
		return []string{}, true, nil // no file holds it
	default:
		return nil, false, nil // grep could not say for every file: the caller scans
	}
	if out.b.Len() >= out.n {
		return nil, false, nil
	}
	var names []string
	for _, n := range strings.Split(out.b.String(), "\x00") {
		n = strings.TrimPrefix(n, "./")
		if n == "" || !mounts.ValidPath(n) {
			continue
		}
		names = append(names, mounts.Join(dir, n))
	}
	slices.SortFunc(names, mounts.CompareWalk)
	return names, true, nil
}

// lit is a literal every match holds, case-folded or not.
type lit struct {
	s    string
	fold bool
}

// required returns literals one of which every match of re contains, or
// false when there are none grep -F can look for.
func required(re *syntax.Regexp) ([]lit, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		s := string(re.Rune)
		fold := re.Flags&syntax.FoldCase != 0
		if s == "" || strings.ContainsAny(s, "\n\x00") || !utf8.ValidString(s) {
			return nil, false
		}
		// grep -i in the C locale folds ASCII letters only; Go also folds
		// k to the Kelvin sign and s to the long s.
		if fold && (strings.ContainsAny(s, "kKsS") || !isASCII(s)) {
			return nil, false
		}
		return []lit{{s, fold}}, true
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []lit
		for _, sub := range re.Sub {
			if l, ok := required(sub); ok && shortest(l) > shortest(best) {
				best = l
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []lit
		for _, sub := range re.Sub {
			l, ok := required(sub)
			if !ok {
				return nil, false
			}
			all = append(all, l...)
		}
		return all, true
	}
	return nil, false
}

func shortest(ls []lit) int {
	if len(ls) == 0 {
		return 0
	}
	n := len(ls[0].s)
	for _, l := range ls[1:] {
		n = min(n, len(l.s))
	}
	return n
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
