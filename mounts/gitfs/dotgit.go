package gitfs

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sync/errgroup"

	"github.com/vfsmount/vfsmount/mounts"
)

// A checkout's .git for the mount (DotGit): what makes git work in a
// writable copy of the commit as in a clone of it, without copying the
// repository. Its objects/info/alternates names the source repository's
// object directory, so the history is the source's, read in place; HEAD is
// the pinned commit; the index is the commit's tree with, for every entry,
// exactly the stat data the mount reports for it (times, inode number,
// owner, size, mode), so git never rehashes a file nobody touched; its
// cache-tree extension says every directory matches the commit's tree, so
// comparing the index with HEAD reads no tree; and its fsmonitor extension
// carries a token of the overlay's change journal, so git asks the hook for
// what changed instead of stat'ing every file.
//
// Which stat fields count: git's match_stat_data on Linux compares the
// mtime and ctime (seconds, and nanoseconds where git was built with
// USE_NSEC), the owner, the low 32 bits of the inode number and the size;
// the device only with USE_STDEV, which Linux builds lack. The mount
// reports the committer time for every time, the mount owner's ids, the
// entry's stable inode number (the union moves it above bit 56, which
// git's 32 bits do not see) and the blob's size, and so does the index.

// DotGitOptions say how the .git of DotGit is set up.
type DotGitOptions struct {
	// Branch, when set, makes HEAD refs/heads/Branch (made at the
	// commit); otherwise HEAD is the commit itself, detached.
	Branch string
	// Token is the fsmonitor token the index carries ("" for none).
	Token string
	// Worktree, with a Token, is where git runs in the checkout (the
	// shell's path of the mount, /repo): the index then carries git's
	// untracked cache for it, saying no directory holds an untracked
	// file (dotgit_untracked.go). Give it only for a checkout that is
	// the commit's tree, unchanged; "" writes none.
	Worktree string
	// ObjectsDir is the source's object directory, as ObjectsDir
	// returns it; "" asks for it.
	ObjectsDir string
}

// DotGit returns the files of a .git directory for a checkout of the
// commit (names relative to .git, directories ending in "/", with nil
// content) and its config settings apart ("core.fsmonitor" and the like
// are the caller's: they name the hook). It fails for a mount of a subdir:
// git's paths are the commit's, and the mount's root is not its root.
func (f *FS) DotGit(ctx context.Context, o DotGitOptions) (map[string][]byte, error) {
	if f.subdir != "" {
		return nil, fmt.Errorf("gitfs: .git: the mount serves subdir %q, not the commit's root", f.subdir)
	}
	objects := o.ObjectsDir
	if objects == "" {
		var err error
		if objects, err = f.ObjectsDir(ctx); err != nil {
			return nil, err
		}
	}
	index, err := f.index(ctx, o.Token, o.Worktree)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"objects/":                nil,
		"objects/info/":           nil,
		"objects/pack/":           nil,
		"objects/info/alternates": []byte(objects + "\n"),
		"refs/":                   nil,
		"refs/heads/":             nil,
		"refs/tags/":              nil,
		"info/":                   nil,
		"info/exclude":            nil,
		"HEAD":                    []byte(f.commit.String() + "\n"),
		"index":                   index,
	}
	if o.Branch != "" {
		if !validBranch(o.Branch) {
			return nil, fmt.Errorf("gitfs: branch %q: %w: not a valid branch name", o.Branch, ErrBadBranch)
		}
		files["HEAD"] = []byte("ref: refs/heads/" + o.Branch + "\n")
		parts := strings.Split(o.Branch, "/")
		for i := 1; i < len(parts); i++ {
			files["refs/heads/"+strings.Join(parts[:i], "/")+"/"] = nil
		}
		files["refs/heads/"+o.Branch] = []byte(f.commit.String() + "\n")
	}
	return files, nil
}

// validBranch is git check-ref-format --branch, in the main: names a
// checkout can hold as refs/heads/NAME.
func validBranch(b string) bool {
	if b == "" || b == "@" || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".") || strings.Contains(b, "..") || strings.Contains(b, "//") || strings.Contains(b, "@{") {
		return false
	}
	for _, part := range strings.Split(b, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	for _, r := range b {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return false
		}
	}
	return true
}

// ObjectsDir is the absolute path of the source repository's object
// directory: what a checkout's alternates name.
func (f *FS) ObjectsDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", f.repo, "rev-parse", "--path-format=absolute", "--git-path", "objects").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%v: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("gitfs: the object directory of %s: %w", f.repo, err)
	}
	return filepath.Clean(strings.TrimSpace(string(out))), nil
}

// ObjectDirs are the host paths of every object directory git reads for
// the source: its own (what ObjectsDir names) and, recursively, its
// alternates' (a clone made with --shared or --reference). A checkout's
// .git names only the first, and git follows the rest from there, so a
// namespace that runs git on the checkout must show all of them.
func (f *FS) ObjectDirs() []string { return f.obj.ObjectDirs() }

// indexEntry is one entry of the generated index.
type indexEntry struct {
	path string
	mode uint32
	hash plumbing.Hash
	a    mounts.Attr
	n    node   // for its attributes
	name string // in the mount
}

// cacheTree is one directory of the index's cache-tree extension.
type cacheTree struct {
	name    string // the directory's own name, "" for the root
	entries int    // index entries below it; -1 when not the commit's tree
	hash    plumbing.Hash
	subs    []*cacheTree
}

// index is the commit's tree as a version 2 index file (git's
// Documentation/gitformat-index.txt), with the stat data the mount reports,
// a cache-tree extension (TREE) and, with a token, an fsmonitor extension
// (FSMN) saying no entry is dirty as of that token, preceded, with a
// worktree, by the untracked cache (UNTR), which git must read first.
func (f *FS) index(ctx context.Context, token, worktree string) ([]byte, error) {
	var ents []indexEntry
	root, err := f.indexWalk(ctx, f.root, ".", "", &ents)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b indexEntry) int { return strings.Compare(a.path, b.path) })
	// The attributes, a blob header each for the size: in parallel, as
	// they are most of the cost.
	g, gctx := errgroup.WithContext(ctx)
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		g.Go(func() error {
			for i := w; i < len(ents); i += workers {
				if err := gctx.Err(); err != nil {
					return err
				}
				// A blob a partial clone lacks is not fetched for its
				// size: entered with size 0, the file fails git's
				// stat check, and git reads it (fetching it) the
				// first time it looks at it, if ever (never with
				// the fsmonitor hook, which says it is clean).
				n := ents[i].n
				sized := n.kind.isDir() || n.kind == kindGitlink || !f.obj.WouldFetch(n.hash)
				a, err := f.attrOf("index", ents[i].name, n, sized)
				if err != nil {
					return err
				}
				ents[i].a = a
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	var b bytes.Buffer
	b.WriteString("DIRC")
	be32(&b, 2)
	be32(&b, uint32(len(ents)))
	for _, e := range ents {
		start := b.Len()
		a := e.a
		ctime := a.Ctime
		if ctime.IsZero() {
			ctime = a.Mtime
		}
		be32(&b, uint32(ctime.Unix()))
		be32(&b, uint32(ctime.Nanosecond()))
		be32(&b, uint32(a.Mtime.Unix()))
		be32(&b, uint32(a.Mtime.Nanosecond()))
		be32(&b, 0) // dev: not compared on Linux
		be32(&b, uint32(a.Ino))
		be32(&b, e.mode)
		be32(&b, a.Uid)
		be32(&b, a.Gid)
		be32(&b, uint32(a.Size))
		b.Write(e.hash[:])
		be16(&b, uint16(min(len(e.path), 0xfff)))
		b.WriteString(e.path)
		// 1 to 8 NULs, to a multiple of 8 bytes.
		pad := 8 - (b.Len()-start)%8
		b.Write(make([]byte, pad))
	}
	var tb bytes.Buffer
	writeCacheTree(&tb, root)
	b.WriteString("TREE")
	be32(&b, uint32(tb.Len()))
	b.Write(tb.Bytes())
	if token != "" && worktree != "" {
		var uts syscall.Utsname
		if err := syscall.Uname(&uts); err != nil {
			return nil, fmt.Errorf("gitfs: uname: %w", err)
		}
		var sysname []byte
		for _, c := range uts.Sysname {
			if c == 0 {
				break
			}
			sysname = append(sysname, byte(c))
		}
		var ub bytes.Buffer
		if err := f.writeUntracked(ctx, &ub, untrackedTree(ents), worktree, string(sysname)); err != nil {
			return nil, err
		}
		b.WriteString("UNTR")
		be32(&b, uint32(ub.Len()))
		b.Write(ub.Bytes())
	}
	if token != "" {
		var fb bytes.Buffer
		be32(&fb, 2) // extension version 2: an opaque token
		fb.WriteString(token)
		fb.WriteByte(0)
		// An empty EWAH bitmap: no entry dirty.
		var ewah bytes.Buffer
		writeEWAH(&ewah, nil)
		be32(&fb, uint32(ewah.Len()))
		fb.Write(ewah.Bytes())
		b.WriteString("FSMN")
		be32(&b, uint32(fb.Len()))
		b.Write(fb.Bytes())
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes(), nil
}

// indexWalk adds the entries below directory n (mount name name, index
// prefix prefix) and returns its cache-tree node.
func (f *FS) indexWalk(ctx context.Context, n node, name, prefix string, out *[]indexEntry) (*cacheTree, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	raw, err := f.obj.Bytes(plumbing.TreeObject, n.hash)
	if err != nil {
		return nil, f.eio("index", name, n.hash, err)
	}
	t, bad, err := parseTree(raw)
	if err != nil {
		return nil, f.eio("index", name, n.hash, err)
	}
	ct := &cacheTree{name: path.Base(name), hash: n.hash}
	if name == "." {
		ct.name = ""
	}
	before := len(*out)
	for i := range t.entries {
		child := n.child(&t.entries[i])
		cname := mounts.Join(name, child.e.name)
		if child.kind == kindDir {
			// The index has no entry of its own for a directory.
			sub, err := f.indexWalk(ctx, child, cname, prefix+child.e.name+"/", out)
			if err != nil {
				return nil, err
			}
			if sub.entries < 0 {
				ct.entries = -1
			}
			ct.subs = append(ct.subs, sub)
			continue
		}
		e := indexEntry{path: prefix + child.e.name, hash: child.e.hash, n: child, name: cname}
		switch child.kind {
		case kindGitlink:
			e.mode = 0o160000
		case kindSymlink:
			e.mode = 0o120000
		case kindExec:
			e.mode = 0o100755
		default:
			e.mode = 0o100644
		}
		*out = append(*out, e)
	}
	if len(bad) > 0 {
		// The index lacks what the mount hides: this directory is not
		// the commit's tree, and git must compute it.
		ct.entries = -1
	}
	if ct.entries >= 0 {
		ct.entries = len(*out) - before
	}
	// git keeps subtrees sorted by name length, then bytes.
	slices.SortFunc(ct.subs, func(a, b *cacheTree) int {
		if len(a.name) != len(b.name) {
			return len(a.name) - len(b.name)
		}
		return strings.Compare(a.name, b.name)
	})
	return ct, nil
}

// writeCacheTree writes t and its subtrees in git's TREE format.
func writeCacheTree(b *bytes.Buffer, t *cacheTree) {
	b.WriteString(t.name)
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(t.entries))
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(t.subs)))
	b.WriteByte('\n')
	if t.entries >= 0 {
		b.Write(t.hash[:])
	}
	for _, s := range t.subs {
		writeCacheTree(b, s)
	}
}

func be32(b *bytes.Buffer, v uint32) { _ = binary.Write(b, binary.BigEndian, v) }
func be16(b *bytes.Buffer, v uint16) { _ = binary.Write(b, binary.BigEndian, v) }
