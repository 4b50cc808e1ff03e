package mounts

import (
	"io/fs"
	"path"
	"strings"
	"unicode"
)

// MaxNameLen is the longest name component accepted, as on Linux.
const MaxNameLen = 255

// ValidPath reports whether name is a valid mount-relative name: io/fs rules
// ([fs.ValidPath]: unrooted, slash-separated, no empty, "." or ".."
// components except the lone "."), and no NUL or other control character (C0, DEL, C1).
func ValidPath(name string) bool {
	if !fs.ValidPath(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) { // C0, DEL and C1
			return false
		}
	}
	return true
}

// CheckPath returns nil for a valid name and otherwise a *fs.PathError
// wrapping fs.ErrInvalid (or ErrNameTooLong for an over-long component).
// Every mount calls it first.
func CheckPath(op, name string) error {
	if !ValidPath(name) {
		return PathErr(op, name, fs.ErrInvalid)
	}
	for rest := name; rest != ""; {
		elem, tail, _ := strings.Cut(rest, "/")
		if len(elem) > MaxNameLen {
			return PathErr(op, name, ErrNameTooLong)
		}
		rest = tail
	}
	return nil
}

// Split returns the parent directory and base name of a valid name. The
// parent of a top-level name is ".". Split(".") returns (".", ".").
func Split(name string) (dir, base string) {
	if name == "." {
		return ".", "."
	}
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ".", name
	}
	return name[:i], name[i+1:]
}

// Join joins a valid directory name and a child name, treating "." as the
// root: Join(".", "a") == "a", Join("a", "b") == "a/b".
func Join(dir, elem string) string {
	if dir == "." {
		return elem
	}
	if elem == "." {
		return dir
	}
	return dir + "/" + elem
}

// Rel returns a valid name relative to dir, which must be the name itself
// or one of its ancestors: Rel("a/b", "a") == "b", Rel("a", "a") == ".",
// Rel("a", ".") == "a".
func Rel(name, dir string) string {
	switch {
	case name == dir:
		return "."
	case dir == ".":
		return name
	default:
		return name[len(dir)+1:]
	}
}

// NameOf converts an absolute workspace path ("/repo/a.go") or a relative
// one to a mount-relative name ("repo/a.go"), cleaning it lexically. It is for
// front ends that accept user input; the result still needs CheckPath. ".."
// that would climb above the root is kept, so CheckPath rejects it.
func NameOf(p string) string {
	if strings.TrimLeft(p, "/") == "" {
		return "."
	}
	return path.Clean(strings.TrimLeft(p, "/"))
}

// PathOf converts a mount-relative name to an absolute workspace path:
// "." -> "/", "a/b" -> "/a/b".
func PathOf(name string) string {
	if name == "." || name == "" {
		return "/"
	}
	return "/" + name
}
