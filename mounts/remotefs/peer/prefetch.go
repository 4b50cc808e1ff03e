package peer

import (
	"errors"
	"io"
	"slices"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// prefetch answers OpPrefetch: the walk wire.Prefetch describes, from
// req.Names, until req.Size bytes of content or wire.PrefetchEntries
// names are in resp (checked between directories: a directory comes
// whole); resp.Names is what it did not reach. A directory
// that cannot be listed (gone since) is skipped; a file that cannot be
// read is left for its open to say why.
//
// It reads only where it can leave access times as they were
// (mounts.QuietReadFS): what it reads, no program has read yet. A
// directory or file it cannot read so (another user's) is left out, for
// the program's own open.
func (s *server) prefetch(req wire.Request, resp *wire.Response) error {
	quiet, ok := s.fsys.(mounts.QuietReadFS)
	if !ok {
		return errors.ErrUnsupported
	}
	stack := slices.Clone(req.Names)
	slices.Reverse(stack) // popped from the end: the first name first
	budget, entries := req.Size, 0
	for len(stack) > 0 && budget > 0 && entries < wire.PrefetchEntries {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if err := mounts.CheckPath("prefetch", dir); err != nil {
			return err
		}
		ents, attrs, err := statDirQuiet(s, quiet, dir)
		if err != nil {
			continue
		}
		d := wire.Dir{Name: dir, Entries: wireEntries(ents, attrs)}
		var subdirs []string
		for i := range ents {
			name := mounts.Join(dir, ents[i].Name)
			switch {
			case attrs[i].Mode.IsDir():
				subdirs = append(subdirs, name)
			case attrs[i].Mode.IsRegular() && attrs[i].Size <= WholeFile && budget > -3*req.Size:
				// The whole directory, once started (a program reading
				// it reads all of it, and the next request starts at
				// the next directory), to four times the budget.
				if f, ok := s.whole(quiet, name); ok {
					resp.Files = append(resp.Files, f)
					budget -= int64(len(f.Data))
				}
			}
		}
		resp.Tree = append(resp.Tree, d)
		entries += len(ents)
		slices.Reverse(subdirs)
		stack = append(stack, subdirs...)
	}
	slices.Reverse(stack)
	resp.Names = stack
	return nil
}

// whole reads a small regular file whole, with the attributes it has as
// it is read; false when it is not (any more) a small regular file.
func (s *server) whole(quiet mounts.QuietReadFS, name string) (wire.File, bool) {
	f, err := quiet.OpenQuiet(s.ctx, name)
	if err != nil {
		return wire.File{}, false
	}
	defer f.Close()
	a, err := f.Stat()
	if err != nil || !a.Mode.IsRegular() || a.Size > WholeFile {
		return wire.File{}, false
	}
	buf := make([]byte, a.Size+1) // one more: a file that grew shows it
	n, err := f.ReadAt(buf, 0)
	if (err != nil && !errors.Is(err, io.EOF)) || n != int(a.Size) {
		return wire.File{}, false
	}
	return wire.File{Name: name, Attr: wire.FromAttr(a), Data: buf[:n]}, true
}

// statDirQuiet lists dir quietly with its entries' attributes (a stat
// reads no content: it changes no access time).
func statDirQuiet(s *server, quiet mounts.QuietReadFS, dir string) ([]mounts.DirEntry, []mounts.Attr, error) {
	ents, err := quiet.ReadDirQuiet(s.ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	return mounts.StatEntries(s.ctx, s.fsys, dir, ents)
}
