package gitfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// The index's untracked cache (extension UNTR, git's dir.c
// write_untracked_extension): what git's first status in a new checkout
// would find by reading every directory, written in advance. A checkout
// of the commit holds no untracked file, so every directory of the tree is
// recorded as read and empty of them. With the fsmonitor extension and a
// hook that says nothing changed, git trusts a recorded directory without
// a stat (dir.c valid_cached_dir) and reads none; a directory the hook
// names is read again, so a change made since is still found.
//
// git uses the cache only where its identity matches: "Location WORKTREE,
// system SYSNAME" (the worktree where git runs it, the kernel's name), the
// flags of an ordinary status (untracked files shown, empty directories
// hidden), .gitignore as the per-directory file, and the object ids of
// $GIT_DIR/info/exclude (ours is empty) and of core.excludesFile (none).
// Elsewhere (the checkout seen at another path, a user's excludes file)
// git drops it and reads the directories, as without it; with
// core.untrackedCache = true (vfsmount.config) it then writes its own.

// untrackedFlags are git's dir flags of an ordinary status:
// DIR_SHOW_OTHER_DIRECTORIES | DIR_HIDE_EMPTY_DIRECTORIES.
const untrackedFlags = 1<<1 | 1<<2

// emptyBlob is the object id of the empty blob: what git records for an
// exclude file that exists and is empty (.git/info/exclude here).
var emptyBlob = plumbing.NewHash("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")

// untrackedDir is one directory of the cache.
type untrackedDir struct {
	name      string // its own name, "" for the root
	dir       string // its mount name, "." for the root
	gitignore plumbing.Hash
	subs      []*untrackedDir // sorted by name, bytewise (git's lookup_untracked)
}

// untrackedTree is the directories of the index's entries (sorted by
// path): every directory that holds one, the root first; a gitlink is an
// entry, not a directory.
func untrackedTree(ents []indexEntry) *untrackedDir {
	root := &untrackedDir{dir: "."}
	dirs := map[string]*untrackedDir{"": root}
	var get func(p string) *untrackedDir
	get = func(p string) *untrackedDir {
		if d, ok := dirs[p]; ok {
			return d
		}
		parent, name := "", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			parent, name = p[:i], p[i+1:]
		}
		d := &untrackedDir{name: name, dir: p}
		pd := get(parent)
		pd.subs = append(pd.subs, d)
		dirs[p] = d
		return d
	}
	for _, e := range ents {
		dir, base := "", e.path
		if i := strings.LastIndexByte(e.path, '/'); i >= 0 {
			dir, base = e.path[:i], e.path[i+1:]
		}
		d := get(dir)
		if base == ".gitignore" && e.mode&0o170000 == 0o100000 {
			d.gitignore = e.hash
		}
	}
	for _, d := range dirs {
		slices.SortFunc(d.subs, func(a, b *untrackedDir) int { return strings.Compare(a.name, b.name) })
	}
	return root
}

// writeUntracked writes the UNTR extension's content for root, the
// checkout being at worktree on a system called sysname.
func (f *FS) writeUntracked(ctx context.Context, b *bytes.Buffer, root *untrackedDir, worktree, sysname string) error {
	ident := "Location " + worktree + ", system " + sysname + "\x00"
	putVarint(b, uint64(len(ident)))
	b.WriteString(ident)
	b.Write(make([]byte, 2*36)) // the stat data of info/exclude and of the excludes file: not compared
	be32(b, untrackedFlags)
	b.Write(emptyBlob[:])           // info/exclude: empty
	b.Write(make([]byte, 20))       // core.excludesFile: none
	b.WriteString(".gitignore\x00") // the per-directory exclude file

	// The directories in git's order (each before its subdirectories,
	// those by name), their count, then per directory: untracked files
	// (none), subdirectories, name.
	var order []*untrackedDir
	var walk func(d *untrackedDir)
	walk = func(d *untrackedDir) {
		order = append(order, d)
		for _, s := range d.subs {
			walk(s)
		}
	}
	walk(root)
	putVarint(b, uint64(len(order)))
	for _, d := range order {
		putVarint(b, 0)
		putVarint(b, uint64(len(d.subs)))
		b.WriteString(d.name)
		b.WriteByte(0)
	}
	valid := make([]bool, len(order))
	withIgnore := make([]bool, len(order))
	for i, d := range order {
		valid[i] = true
		withIgnore[i] = !d.gitignore.IsZero()
	}
	writeEWAH(b, valid)
	writeEWAH(b, make([]bool, len(order))) // check_only: none
	writeEWAH(b, withIgnore)
	for _, d := range order {
		a, err := f.Stat(ctx, d.dir)
		if err != nil {
			return err
		}
		ctime := a.Ctime
		if ctime.IsZero() {
			ctime = a.Mtime
		}
		for _, v := range []uint32{uint32(ctime.Unix()), uint32(ctime.Nanosecond()), uint32(a.Mtime.Unix()), uint32(a.Mtime.Nanosecond()),
			0, uint32(a.Ino), a.Uid, a.Gid, uint32(a.Size)} {
			be32(b, v)
		}
	}
	for _, d := range order {
		if !d.gitignore.IsZero() {
			b.Write(d.gitignore[:])
		}
	}
	b.WriteByte(0)
	return nil
}

// putVarint writes v in git's varint (varint.c: big-endian groups of 7
// bits, each continued group one less).
func putVarint(b *bytes.Buffer, v uint64) {
	var buf [16]byte
	pos := len(buf) - 1
	buf[pos] = byte(v & 127)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		pos--
		buf[pos] = 128 | byte(v&127)
	}
	b.Write(buf[pos:])
}

// writeEWAH writes bits as git's EWAH bitmap (ewah/ewah_io.c): the bit
// count, the number of 64-bit words, the words, and the position of the
// last marker word. One marker (no run, every word literal) then the
// literal words, lowest bit first.
func writeEWAH(b *bytes.Buffer, bits []bool) {
	words := make([]uint64, (len(bits)+63)/64)
	for i, set := range bits {
		if set {
			words[i/64] |= 1 << (i % 64)
		}
	}
	be32(b, uint32(len(bits)))
	be32(b, uint32(1+len(words)))
	_ = binary.Write(b, binary.BigEndian, uint64(len(words))<<33)
	for _, w := range words {
		_ = binary.Write(b, binary.BigEndian, w)
	}
	be32(b, 0)
}
