package memfs

import (
	"io/fs"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// permBits are the mode bits a chmod or a create may set.
const permBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// node is one inode: a directory, a regular file, a symlink or a special
// file (a FIFO, a socket, a device), which is only its attributes. Names live
// in the parent's children map; a node has no name of its own, so hard
// links are just more entries pointing at it.
type node struct {
	ino    uint64      // immutable
	typ    fs.FileMode // type bits, immutable: 0, fs.ModeDir, fs.ModeSymlink or a special type
	target string      // symlink target, immutable
	rdev   uint32      // device number of a device, immutable

	mu sync.RWMutex // guards every field below except children

	perm                fs.FileMode
	uid, gid            uint32
	nlink               uint32
	atime, mtime, ctime time.Time
	xattrs              map[string][]byte
	xattrBytes          int64 // charged to the byte quota

	data  content // regular files
	opens int     // open handles of a regular file
	// handles are the open handles, for a restore to move them
	handles map[*handle]struct{}
	// mark is the checkpoint generation in which the node was last
	// recorded as changed (FS.gen); 0 never.
	mark  uint64
	freed bool // resources released; set once
	// ghost: a copy a checkpoint restore made of the node for the
	// handles open on it. It has no name, and the store knows nothing
	// of it (its number is the restored node's).
	ghost bool

	// children of a directory, guarded by FS.mu (the tree lock), not
	// by mu: lookups walk the tree under FS.mu alone.
	children map[string]*node
}

func (n *node) isDir() bool     { return n.typ == fs.ModeDir }
func (n *node) isSymlink() bool { return n.typ == fs.ModeSymlink }
func (n *node) isSpecial() bool { return mounts.IsSpecial(n.typ) }

// takesXattrs reports whether n may hold user.* attributes: Linux allows
// them on regular files and directories only (EPERM elsewhere).
func (n *node) takesXattrs() bool { return n.typ == 0 || n.typ == fs.ModeDir }

// attr reports n's attributes; the caller holds n.mu.
func (n *node) attr() mounts.Attr {
	a := mounts.Attr{
		Mode: n.typ | n.perm, Ino: n.ino, Nlink: n.nlink, Uid: n.uid, Gid: n.gid,
		Atime: n.atime, Mtime: n.mtime, Ctime: n.ctime, Rdev: n.rdev,
	}
	switch n.typ {
	case 0:
		a.Size, a.Blocks = n.data.size, n.data.blocks
	case fs.ModeSymlink:
		a.Size = int64(len(n.target))
	}
	return a
}

// stat locks n and reports its attributes.
func (n *node) stat() mounts.Attr {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.attr()
}

// changed stamps ctime, and mtime too when the content changed; the caller
// holds n.mu.
func (n *node) changed(now time.Time, content bool) {
	n.ctime = now
	if content {
		n.mtime = now
	}
}
