package objstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Alternates, as git reads them (gitrepository-layout(5),
// objects/info/alternates; git's odb.c link_alt_odb_entries): one object
// directory a line; a line starting with '#' is a comment and an empty
// line is skipped; a line starting with '"' is a C-style quoted path
// (broken quoting falls back to the line as written, as in git); a
// relative path is relative to the object directory whose alternates file
// names it (its real path); an alternate's own alternates are read too,
// depth first, to maxAlternateDepth; a directory listed twice, or the
// repository's own, is read once. Nothing is trimmed: git keeps leading
// and trailing blanks as part of the path, and so does this.
//
// What git reports and skips — an entry that is not a directory, nesting
// too deep — is an [AlternateError] here, and the entry is skipped too:
// the objects of the other directories are still served, and a read of an
// object that is in none of them says what was skipped (see Store.missing).
//
// go-git reads alternates too, but only one level deep, with a relative
// path taken from the repository's root rather than the object directory,
// and an absolute one outside the repository not at all (its file system
// is confined to the repository): a git clone --shared was served nothing
// of its source's. So the store reads them itself and gives go-git one
// storage per directory.
//
// GIT_ALTERNATE_OBJECT_DIRECTORIES is not read: it is the environment of
// one git command, and a daemon's environment applies to every repository
// it serves (gitfs's exports set it for the git they run).

// maxAlternateDepth is git's limit: an alternates file read at a greater
// depth (the repository's own is at 0) is ignored, with an error.
const maxAlternateDepth = 5

// AlternateError is an entry of an alternates file that cannot be used.
// It names the host paths as the repository's configuration does: it is
// for the operator's log and the mount's error, never for a file's reader
// (gitfs turns a failed read into EIO).
type AlternateError struct {
	// File is the alternates file: "objects/info/alternates" for the
	// repository's own, the file's host path for an alternate's.
	File string
	// Line is the entry's line in File, from 1; 0 when the whole file is
	// at fault.
	Line int
	// Entry is the entry as written (unquoted), or "" with Line 0.
	Entry string
	// Dir is the object directory the entry names, resolved.
	Dir string
	Err error
}

func (e *AlternateError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("alternates %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("alternates %s line %d: object directory %q: %v", e.File, e.Line, e.Dir, e.Err)
}

func (e *AlternateError) Unwrap() error { return e.Err }

// Reasons an alternate is skipped.
var (
	errAltNotDir   = errors.New("is not a directory")
	errAltTooDeep  = fmt.Errorf("nesting too deep (more than %d levels of alternates), ignored", maxAlternateDepth)
	errAltNotFound = errors.New("does not exist")
)

// alternates returns the alternate object directories of the object
// directory own, in the order git searches them, and what it skipped.
func alternates(own string) (dirs []string, problems []error) {
	seen := map[string]bool{realPath(own): true}
	var walk func(objDir, file string, depth int)
	walk = func(objDir, file string, depth int) {
		data, err := os.ReadFile(filepath.Join(objDir, "info", "alternates"))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, &AlternateError{File: file, Err: unwrapPath(err)})
			}
			return
		}
		if depth > maxAlternateDepth {
			problems = append(problems, &AlternateError{File: file, Err: errAltTooDeep})
			return
		}
		base := realPath(objDir)
		for i, line := range bytes.Split(data, []byte{'\n'}) {
			entry, ok := parseAlternate(line)
			if !ok {
				continue
			}
			dir := entry
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(base, dir)
			}
			dir = filepath.Clean(dir)
			fi, err := os.Stat(dir)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				err = errAltNotFound
			case err != nil:
				err = unwrapPath(err)
			case !fi.IsDir():
				err = errAltNotDir
			}
			if err != nil {
				problems = append(problems, &AlternateError{File: file, Line: i + 1, Entry: entry, Dir: dir, Err: err})
				continue
			}
			real := realPath(dir)
			if seen[real] {
				continue
			}
			seen[real] = true
			dirs = append(dirs, dir)
			walk(dir, filepath.Join(dir, "info", "alternates"), depth+1)
		}
	}
	walk(own, "objects/info/alternates", 0)
	return dirs, problems
}

// parseAlternate returns the path a line of an alternates file names, and
// false for a comment or an empty line.
func parseAlternate(line []byte) (string, bool) {
	switch {
	case len(line) == 0 || line[0] == '#':
		return "", false
	case line[0] == '"':
		if s, err := strconv.Unquote(string(line)); err == nil {
			return s, s != ""
		}
	}
	return string(line), true
}

// realPath is dir with its symbolic links resolved, or dir when that fails:
// what tells two names of one directory apart.
func realPath(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}
