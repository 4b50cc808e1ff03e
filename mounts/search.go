package mounts

import (
	"context"
	"regexp/syntax"
	"strings"
)

// SearchFS narrows a content search: a mount that knows its content (an
// index of an immutable tree) names the files a regular expression may
// match, so a search reads those instead of every file. It is an
// optimisation only: the caller still checks every candidate with the
// real expression, and a mount without it (or one that cannot narrow a
// search) is scanned.
type SearchFS interface {
	FS
	// Candidates returns, with complete true, every regular file at or
	// below the directory dir (names of this mount, in walk order: see
	// [CompareWalk]) that may hold a match of re, which is parsed with the
	// flags the search matches with. A file left out holds no match. With
	// complete false the mount cannot narrow this search (no index yet, a
	// pattern that every file may match) and names is nil: the caller
	// scans, at no cost beyond the call.
	Candidates(ctx context.Context, dir string, re *syntax.Regexp) (names []string, complete bool, err error)
}

// Candidates asks fsys for the files below dir that may match re (see
// [SearchFS]); a mount without the capability cannot narrow: nil, false.
func Candidates(ctx context.Context, fsys FS, dir string, re *syntax.Regexp) ([]string, bool, error) {
	s, ok := fsys.(SearchFS)
	if !ok || !Capabilities(fsys).Has(CapSearch) {
		return nil, false, nil
	}
	return s.Candidates(ctx, dir, re)
}

// CompareWalk orders names as a walk visits them: a directory's entries
// by name, each directory's contents right after it ("a/b" before "a-c",
// which a byte order puts first).
func CompareWalk(a, b string) int {
	for {
		ea, ra, moreA := strings.Cut(a, "/")
		eb, rb, moreB := strings.Cut(b, "/")
		if c := strings.Compare(ea, eb); c != 0 {
			return c
		}
		switch {
		case !moreA && !moreB:
			return 0
		case !moreA:
			return -1
		case !moreB:
			return 1
		}
		a, b = ra, rb
	}
}
