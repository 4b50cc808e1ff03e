package peer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"regexp"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// grep searches the served tree on this machine, so that only the names
// (or lines) that match cross the link. It walks as the tool face's grep
// does: no symlink followed, .git directories left out, every regular
// file read whole and matched as a whole ((?m) semantics). Where ripgrep
// can find the files that may match (s.ripgrep), only those are read
// here; each is still matched with Go's regexp, so the answer is the
// walk's either way. With Grep.Content, the matching files an open would
// answer whole come along in resp.Files, for the daemon's cache.
func (s *server) grep(g *wire.Grep, resp *wire.Response) error {
	if g == nil {
		return mounts.PathErr("grep", ".", fs.ErrInvalid)
	}
	flags := "(?m)"
	if g.IgnoreCase {
		flags += "(?i)"
	}
	re, err := regexp.Compile(flags + g.Pattern)
	if err != nil {
		return mounts.PathErr("grep", g.Dir, fs.ErrInvalid)
	}
	a, err := s.fsys.Stat(s.ctx, g.Dir)
	if err != nil {
		return err
	}
	var files []string
	searched := false
	// ripgrep reports no match at the end of a file after its last line
	// (nor in an empty file): only an expression that matches the empty
	// string could match there, and it matches "" too; those are left to
	// the scan.
	if a.Mode.IsDir() && !re.MatchString("") {
		files, searched = s.ripgrep(s.ctx, g.Dir, flags+g.Pattern)
	}
	if !searched {
		if err := s.walk(s.ctx, g.Dir, func(name string) { files = append(files, name) }); err != nil {
			return err
		}
	}
	matches := make([][]wire.Match, len(files))
	contents := make([]*wire.File, len(files))
	eg, ctx := errgroup.WithContext(s.ctx)
	eg.SetLimit(runtime.GOMAXPROCS(0) * 2)
	for i, name := range files {
		eg.Go(func() error {
			data, a, err := readWhole(ctx, s.fsys, name)
			if err != nil {
				return nil // gone or unreadable since the walk: not a match
			}
			if !re.Match(data) {
				return nil
			}
			if g.Content > 0 && a.Mode.IsRegular() && a.Size == int64(len(data)) && a.Size <= WholeFile {
				contents[i] = &wire.File{Name: name, Attr: wire.FromAttr(a), Data: data}
			}
			if g.FilesOnly {
				matches[i] = []wire.Match{{Name: name}}
				return nil
			}
			matches[i] = matchLines(name, data, re)
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	budget := g.Content
	for i, m := range matches {
		if c := contents[i]; c != nil && int64(len(c.Data)) <= budget {
			resp.Files = append(resp.Files, *c)
			budget -= int64(len(c.Data))
		}
		if g.Limit > 0 && len(resp.Matches)+len(m) > g.Limit {
			resp.More = true
			resp.Matches = append(resp.Matches, m[:g.Limit-len(resp.Matches)]...)
			break
		}
		resp.Matches = append(resp.Matches, m...)
	}
	return nil
}

// readWhole reads a file whole, with the attributes it had as it was
// opened.
func readWhole(ctx context.Context, fsys mounts.FS, name string) ([]byte, mounts.Attr, error) {
	f, err := fsys.Open(ctx, name)
	if err != nil {
		return nil, mounts.Attr{}, err
	}
	defer f.Close()
	a, err := f.Stat()
	if err != nil {
		return nil, mounts.Attr{}, err
	}
	buf := make([]byte, 0, a.Size+1) // one more: a file that grew shows it
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.ReadAt(buf[len(buf):cap(buf)], int64(len(buf)))
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return buf, a, nil
		}
		if err != nil {
			return nil, mounts.Attr{}, err
		}
	}
}

// matchLines lists the lines of data that re matches.
func matchLines(name string, data []byte, re *regexp.Regexp) []wire.Match {
	var out []wire.Match
	line := 1
	for len(data) > 0 {
		end := bytes.IndexByte(data, '\n')
		text := data
		if end >= 0 {
			text = data[:end]
		}
		if re.Match(text) {
			out = append(out, wire.Match{Name: name, Line: line, Text: string(text)})
		}
		if end < 0 {
			break
		}
		data = data[end+1:]
		line++
	}
	return out
}

// walk calls fn with every regular file at or below dir, in walk order
// (mounts.CompareWalk: ReadDir is sorted, and a directory's files follow
// it), leaving .git directories out, and names that are not valid ones
// of the mount (mounts.CheckPath), which no open could read.
func (s *server) walk(ctx context.Context, dir string, fn func(name string)) error {
	a, err := s.fsys.Stat(ctx, dir)
	if err != nil {
		return err
	}
	if a.Mode.IsRegular() {
		fn(dir)
		return nil
	}
	var rec func(dir string) error
	rec = func(dir string) error {
		ents, err := s.fsys.ReadDir(ctx, dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed during the walk
			}
			return err
		}
		for _, e := range ents {
			name := mounts.Join(dir, e.Name)
			if mounts.CheckPath("grep", name) != nil {
				continue // a name no request could give (a control character)
			}
			switch {
			case e.Type.IsDir():
				if e.Name == ".git" {
					continue
				}
				if err := rec(name); err != nil {
					return err
				}
			case e.Type.IsRegular():
				fn(name)
			}
		}
		return nil
	}
	return rec(dir)
}
