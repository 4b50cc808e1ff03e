package policy

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// matcher is one list of gitignore-style patterns, matched against
// workspace names. It is go-git's matcher: the same semantics as a
// .gitignore file at the workspace root, so "/repo/secrets/" is anchored,
// "*.env" matches at any depth, a pattern that matches a directory matches
// everything below it, and a later "!pattern" re-includes.
type matcher struct {
	m     gitignore.Matcher
	n     int
	dirOn bool // some pattern ends in "/": matching needs to know directories
}

// compile validates and compiles patterns; what names the list in errors
// ("deny_read").
func compile(what string, patterns []string) (*matcher, error) {
	ps := make([]gitignore.Pattern, 0, len(patterns))
	m := &matcher{n: len(patterns)}
	for _, p := range patterns {
		if err := checkPattern(p); err != nil {
			return nil, fmt.Errorf("%s: invalid pattern %q: %v", what, p, err)
		}
		if strings.HasSuffix(p, "/") {
			m.dirOn = true
		}
		ps = append(ps, gitignore.ParsePattern(p, nil))
	}
	m.m = gitignore.NewMatcher(ps)
	return m, nil
}

// checkPattern rejects what go-git's matcher would silently never match: a
// malformed character class, "**" inside a component, an empty pattern,
// and "#", which in a .gitignore file starts a comment.
func checkPattern(p string) error {
	body := strings.TrimPrefix(p, "!")
	body = strings.TrimSuffix(strings.TrimRight(body, " "), "/")
	switch {
	case strings.TrimSpace(p) == "" || strings.Trim(body, "/") == "":
		return fmt.Errorf("empty pattern")
	case strings.HasPrefix(p, "#"):
		return fmt.Errorf(`"#" starts a comment in gitignore syntax; write \# for a literal #`)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("NUL in pattern")
	}
	for _, comp := range strings.Split(strings.TrimPrefix(body, "/"), "/") {
		if comp == "**" {
			continue
		}
		if strings.Contains(comp, "**") {
			return fmt.Errorf(`"**" must be a whole path component ("a/**/b", not "a**b")`)
		}
		if _, err := filepath.Match(comp, ""); err != nil {
			return fmt.Errorf("malformed component %q: %v", comp, err)
		}
	}
	return nil
}

// match reports whether the workspace name ("repo/x", mount-relative to
// the union, "." the root) matches. The root never matches.
func (m *matcher) match(name string, isDir bool) bool {
	if m == nil || m.n == 0 || name == "." || name == "" {
		return false
	}
	return m.m.Match(strings.Split(name, "/"), isDir)
}

// empty reports whether the list has no pattern.
func (m *matcher) empty() bool { return m == nil || m.n == 0 }

// needsDirs reports whether some pattern is directory-only, so matching a
// name needs to know whether it is a directory.
func (m *matcher) needsDirs() bool { return m != nil && m.dirOn }
