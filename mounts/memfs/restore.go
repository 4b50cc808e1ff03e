package memfs

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// ErrBadImage is returned by [Restore] for an image that is not a tree: an
// entry naming an inode that does not exist, a directory with two names,
// content for something other than a regular file. A store returns it for
// a file it cannot trust.
var ErrBadImage = errors.New("inconsistent saved tree")

// Image is a saved tree for [Restore] to start from, as a persistent
// [Store] rebuilds it from its records.
type Image struct {
	// Inodes holds the inodes of the tree. The root (inode 1) may be
	// absent: a store that never saw it change has no record of it, and
	// New's root is used. Inodes that no entry reaches from the root are
	// garbage (a file unlinked while open when the process died) and are
	// dropped.
	Inodes []InodeRecord
	// Entries binds names in directories to inodes; Ino 0 is invalid here.
	Entries []EntryRecord
	// Content, when set, feeds the data of the regular files: it calls
	// put with pieces of data at offsets, in any order. put copies what it
	// is given, so Data may be reused once put returns; an error from put
	// must be returned unchanged.
	Content func(put func(WriteRecord) error) error
	// Fetch, when set instead of Content, feeds one regular file's
	// content when it is first needed (lazy.go): the tree is whole at
	// once, and its files' content comes on demand.
	Fetch Fetcher
	// Checkpoints are the tree's checkpoints, oldest first, as a store
	// saved them ([Mutation.Checkpoint]).
	Checkpoints []CheckpointImage
	// Pending is the store's pending restore intent, Decided the
	// restores it decided as a coordinator (see [RestoreIntent]).
	Pending *RestoreIntent
	Decided []RestoreDecision
}

// CheckpointImage is a saved checkpoint for [Restore].
type CheckpointImage struct {
	CheckpointRecord
	// Content feeds the data of the checkpoint's regular files, as
	// Image.Content does the tree's; put keeps the slices it is given
	// (a store hands the same slice for the same data, which the
	// checkpoints then share).
	Content func(put func(WriteRecord) error) error
}

// Restore returns a memory mount holding img, with img's inode numbers; new
// inodes are numbered past the largest. Link counts are recomputed from the
// entries, so a record's Nlink is not trusted. The usage counters start at
// what img holds: a tree larger than Options.MaxBytes or MaxFiles loads,
// and then refuses growth until enough is removed.
//
// opts.Store receives the changes made after Restore returns; the image
// itself is not reported to it.
func Restore(opts Options, img Image) (*FS, error) {
	f := New(opts)
	nodes := make(map[uint64]*node, len(img.Inodes)+1)
	nodes[1] = f.root
	rootSeen := false
	for i := range img.Inodes {
		r := &img.Inodes[i]
		n, err := nodeOf(r)
		if err != nil {
			return nil, err
		}
		if r.Ino == 1 {
			if rootSeen || !n.isDir() {
				return nil, fmt.Errorf("%w: bad root record", ErrBadImage)
			}
			rootSeen = true
			f.root = n
		} else if _, dup := nodes[r.Ino]; dup {
			return nil, fmt.Errorf("%w: inode %d recorded twice", ErrBadImage, r.Ino)
		}
		nodes[r.Ino] = n
	}

	// Link the entries; a name whose directory or inode was never
	// recorded means a torn or doctored file.
	for _, e := range img.Entries {
		dir, ok := nodes[e.Dir]
		switch {
		case !ok || !dir.isDir():
			return nil, fmt.Errorf("%w: entry %q in inode %d, not a directory", ErrBadImage, e.Name, e.Dir)
		case !validName(e.Name):
			return nil, fmt.Errorf("%w: bad name %q in inode %d", ErrBadImage, e.Name, e.Dir)
		}
		child, ok := nodes[e.Ino]
		if !ok || e.Ino == 1 {
			return nil, fmt.Errorf("%w: entry %q in inode %d names inode %d", ErrBadImage, e.Name, e.Dir, e.Ino)
		}
		if _, dup := dir.children[e.Name]; dup {
			return nil, fmt.Errorf("%w: entry %q twice in inode %d", ErrBadImage, e.Name, e.Dir)
		}
		dir.children[e.Name] = child
	}

	// Walk from the root: count links, charge usage, and refuse a
	// directory reachable twice (a hard-linked directory, or a cycle).
	reached := map[uint64]bool{1: true}
	f.root.nlink = 2
	queue := []*node{f.root}
	var usedBytes, usedFiles int64
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		for _, child := range dir.children {
			if child.isDir() {
				if reached[child.ino] {
					return nil, fmt.Errorf("%w: directory inode %d has two names", ErrBadImage, child.ino)
				}
				dir.nlink++
				child.nlink = 2
				queue = append(queue, child)
			} else if reached[child.ino] {
				child.nlink++
				continue
			} else {
				child.nlink = 1
			}
			reached[child.ino] = true
			usedFiles++
			usedBytes += child.xattrBytes + int64(len(child.target))
		}
	}
	usedBytes += f.root.xattrBytes
	for ino := range nodes {
		if !reached[ino] {
			delete(nodes, ino)
			continue
		}
		f.nextIno = max(f.nextIno, ino+1)
	}

	if img.Content != nil {
		err := img.Content(func(w WriteRecord) error {
			n, ok := nodes[w.Ino]
			switch {
			case !ok:
				return nil // content of a dropped inode
			case n.typ != 0:
				return fmt.Errorf("%w: content for inode %d, not a regular file", ErrBadImage, w.Ino)
			case w.Off < 0 || w.Off > n.data.size-int64(len(w.Data)):
				return fmt.Errorf("%w: content of inode %d past its size", ErrBadImage, w.Ino)
			}
			// writeAt extends the size to the end of what it wrote;
			// the record's size is the truth.
			size := n.data.size
			before := n.data.alloc
			n.data.writeAt(w.Data, w.Off)
			n.data.size = size
			usedBytes += n.data.alloc - before
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if img.Fetch != nil {
		if img.Content != nil || len(img.Checkpoints) > 0 {
			return nil, fmt.Errorf("%w: lazy content with content or checkpoints", ErrBadImage)
		}
		f.lz = &lazyState{fetch: img.Fetch, left: map[uint64]*node{}, loading: map[uint64]chan struct{}{}}
		for _, n := range nodes {
			if n.typ == 0 && n.data.size > 0 {
				f.lz.left[n.ino] = n
			}
		}
	}
	f.usedBytes.Store(usedBytes)
	f.usedFiles.Store(usedFiles)
	f.pending, f.decided = img.Pending, img.Decided
	if len(img.Checkpoints) > 0 {
		if err := f.loadCheckpoints(img.Checkpoints); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// nodeOf makes the node an inode record describes, without links.
func nodeOf(r *InodeRecord) (*node, error) {
	typ := r.Mode.Type()
	switch {
	case r.Ino == 0:
		return nil, fmt.Errorf("%w: inode 0", ErrBadImage)
	case typ != 0 && typ != fs.ModeDir && typ != fs.ModeSymlink && !mounts.IsSpecial(typ):
		return nil, fmt.Errorf("%w: inode %d has mode %v", ErrBadImage, r.Ino, r.Mode)
	case r.Rdev != 0 && !mounts.IsDevice(typ):
		return nil, fmt.Errorf("%w: inode %d has a device number but is no device", ErrBadImage, r.Ino)
	case mounts.IsSpecial(typ) && r.Size != 0:
		return nil, fmt.Errorf("%w: inode %d has size %d", ErrBadImage, r.Ino, r.Size)
	case r.Size < 0 || (typ == 0 && r.Size > maxFileSize):
		return nil, fmt.Errorf("%w: inode %d has size %d", ErrBadImage, r.Ino, r.Size)
	case typ != fs.ModeSymlink && r.Target != "":
		return nil, fmt.Errorf("%w: inode %d has a target but is no symlink", ErrBadImage, r.Ino)
	}
	n := &node{
		ino: r.Ino, typ: typ, target: r.Target, rdev: r.Rdev, perm: r.Mode & permBits,
		uid: r.Uid, gid: r.Gid, atime: r.Atime, mtime: r.Mtime, ctime: r.Ctime,
	}
	switch typ {
	case fs.ModeDir:
		n.children = map[string]*node{}
	case 0:
		n.data.size = r.Size
	}
	if len(r.Xattrs) > 0 {
		n.xattrs = make(map[string][]byte, len(r.Xattrs))
		for k, v := range r.Xattrs {
			if checkXattr(k) != nil || len(v) > maxXattrValue || typ == fs.ModeSymlink {
				return nil, fmt.Errorf("%w: inode %d has extended attribute %q", ErrBadImage, r.Ino, k)
			}
			n.xattrs[k] = v
			n.xattrBytes += int64(len(k) + len(v))
		}
	}
	return n, nil
}

// validName reports whether elem is one path element a tree may hold: a
// name mounts.CheckPath accepts, so every restored name can be reached.
func validName(elem string) bool {
	return elem != "." && !strings.Contains(elem, "/") && mounts.ValidPath(elem)
}
