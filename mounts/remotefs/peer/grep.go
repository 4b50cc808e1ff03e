package peer

import (
	"bytes"
	"context"
	"errors"
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
// file read whole and matched line by line ((?m) semantics).
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
	var files []string
	if err := s.walk(s.ctx, g.Dir, func(name string) { files = append(files, name) }); err != nil {
		return err
	}
	matches := make([][]wire.Match, len(files))
	eg, ctx := errgroup.WithContext(s.ctx)
	eg.SetLimit(runtime.GOMAXPROCS(0) * 2)
	for i, name := range files {
		eg.Go(func() error {
			data, err := mounts.ReadFile(ctx, s.fsys, name)
			if err != nil {
				return nil // gone or unreadable since the walk: not a match
			}
			if !re.Match(data) {
				return nil
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
	for _, m := range matches {
		if g.Limit > 0 && len(resp.Matches)+len(m) > g.Limit {
			resp.More = true
			resp.Matches = append(resp.Matches, m[:g.Limit-len(resp.Matches)]...)
			break
		}
		resp.Matches = append(resp.Matches, m...)
	}
	return nil
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
// it), leaving .git directories out.
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
