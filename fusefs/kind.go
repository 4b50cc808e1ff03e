package fusefs

import (
	"fmt"

	"github.com/vfsmount/vfsmount/mounts"
)

// connKind is what one FUSE connection serves, and so how it serves it
// (see "# Connections" in the package doc). Mount chooses it once per
// connection; what a handler does differently by kind it reads from the
// connection's strategy, and no handler tests the kind itself.
type connKind uint8

const (
	// kindMain is the main connection of a workspace with anything
	// mutable in it: the kernel asks before it opens a file or a
	// directory, every open has a handle, and the caching policy is the
	// mount's of each name.
	kindMain connKind = iota
	// kindImmutable serves content that never changes (a git commit),
	// read-only: the kernel opens files and directories without asking,
	// every name is cached as immutable content, and each directory is
	// listed once. Stacked over an immutable mount of the table, or the
	// main connection when every mount is immutable.
	kindImmutable
	// kindCopyOnWrite serves a writable layer over a commit that only
	// this process changes (the overlay of a writable git mount),
	// stacked over its mount point: the kernel opens files without
	// asking, as on an immutable connection, and READ, WRITE and FSYNC
	// go by name through the connection's file cache.
	kindCopyOnWrite
	// kindNotified serves a mount whose changes behind this process's
	// back are told (a remote mount with its change stream), stacked
	// over its mount point: openless and writable as a copy-on-write
	// connection is, and told of the changes made elsewhere.
	kindNotified
)

// String names the kind as the log and the package doc do.
func (k connKind) String() string {
	switch k {
	case kindMain:
		return "main"
	case kindImmutable:
		return "immutable"
	case kindCopyOnWrite:
		return "copy-on-write"
	case kindNotified:
		return "notified"
	}
	return fmt.Sprintf("connKind(%d)", int(k))
}

// strategy is how a kind of connection serves requests: one value per
// kind, in strategies. Each field is one decision, named for what it
// decides; a handler that depends on the kind reads the field it needs.
type strategy struct {
	// readOnly mounts the connection read-only (MS_RDONLY) whatever
	// [Options.ReadOnly] says: its content cannot change.
	readOnly bool
	// openless answers OPEN and OPENDIR with ENOSYS, after which the
	// kernel opens and closes files and directories by itself: READs
	// (and WRITEs, FSYNCs) come without a handle and go through the
	// connection's file cache (readerCache), READDIRs without one
	// through a handle opened for the request (noOpendir), listings
	// come with their entries' attributes where the tree can list them
	// so ([mounts.StatDirFS]), the page store serves the connection,
	// and nothing is passed through (no handle to register a backing
	// file with).
	openless bool
	// rootDropsAll makes an invalidation of the connection's root drop
	// every entry the kernel holds of it (none is a mount point): on a
	// stacked root, nothing above it can be dropped instead.
	rootDropsAll bool
	// policy is the caching policy of a name of the connection (see "#
	// Caching" in the package doc).
	policy func(c *conn, name string) cachePolicy
	// keepListings keeps a directory's listing once it is built: every
	// READDIR of an openless connection lists afresh, and content that
	// never changes need not be asked twice.
	keepListings bool
	// writesByName serves WRITE and FSYNC without a handle, by name
	// through the file cache, and pins a regular file about to lose its
	// last name (pinOrphan): the kernel opened it without telling us
	// and may still read and write it.
	writesByName bool
	// changes says names of the connection change behind the kernel's
	// back (library changes, [Server.Invalidate]): the connection is
	// told of them, and pages offered of a changed name before it
	// changed are dropped. Content that never changes has nothing to
	// invalidate.
	changes bool
	// writersStay keeps a file's cached file opened for writing when
	// the file changes behind the kernel's back: a remote handle is the
	// file the node is, which shows the change, and which a program
	// holding the node open goes on writing if the name now leads
	// elsewhere (that is another number, so another node). Elsewhere a
	// change may put another file behind the same node (the overlay
	// keeps a name's number across a restore), and every cached file of
	// the node goes.
	writersStay bool
}

// strategies is the strategy of each kind.
var strategies = [...]strategy{
	kindMain: {
		policy:  (*conn).mountPolicy,
		changes: true,
	},
	kindImmutable: {
		readOnly:     true,
		openless:     true,
		policy:       func(*conn, string) cachePolicy { return immutablePolicy },
		keepListings: true,
	},
	kindCopyOnWrite: {
		openless:     true,
		policy:       (*conn).mountPolicy,
		writesByName: true,
		changes:      true,
	},
	kindNotified: {
		openless:     true,
		rootDropsAll: true,
		policy:       (*conn).mountPolicy,
		writesByName: true,
		changes:      true,
		writersStay:  true,
	},
}

// newConn returns the state of a connection of kind serving the subtree
// prefix of fsys ("." for the whole tree); parentIno is the inode number
// of prefix's parent, for the root's "..".
func newConn(fsys mounts.FS, kind connKind, prefix string, parentIno uint64) *conn {
	c := &conn{fsys: fsys, kind: kind, how: strategies[kind], prefix: prefix, parentIno: parentIno}
	if c.how.openless {
		c.readers = newReaderCache(maxReaders)
	}
	return c
}
