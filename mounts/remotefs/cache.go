package remotefs

import (
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// cache keeps what the peer answered until the change stream says it
// changed. An answer is kept only if nothing about its name was reported
// changed since its request was sent (the epoch it was asked at): an
// answer that crossed a change on the link is used once and forgotten.
// Without a change stream, answers live one second.
type cache struct {
	mu      sync.Mutex
	now     uint64            // the epoch: one more for each invalidation
	floor   uint64            // answers asked before it are stale (a flush)
	changed map[string]uint64 // name → epoch of its last invalidation
	attrs   map[string]attrEntry
	dirs    map[string]dirEntry
	content map[string]contentEntry
	multi   map[string]uint64 // names of files with several links → inode
	// inos holds the inodes of files with several links whose links or
	// content changed, and when (dropLinks): an answer asked before
	// about any name of one is stale, a name the cache did not hold
	// then included. multiFloor is the same for every such file, when
	// the one that changed was not known.
	inos       map[uint64]uint64
	multiFloor uint64
	bytes      int64
	max        int64
	watching   bool
	walked     map[string]bool // directories a read-ahead walked, still as it saw them
	// single holds the names forgotten while known to be no other
	// file's name (a file of one link, a directory, missing): a change
	// of one that leaves it so changes no other name's link count.
	single map[string]bool
}

type attrEntry struct {
	a       mounts.Attr
	missing bool
	link    string
	hasLink bool
	at      time.Time
}

type dirEntry struct {
	ents    []mounts.DirEntry
	attrs   []mounts.Attr
	at      time.Time
	offered bool // its files' content went to the page sink (offerDir)
}

// contentEntry is a small file's whole content, as of attrs a.
type contentEntry struct {
	a    mounts.Attr
	data []byte
}

// page is a file's content offered to the page sink.
type page struct {
	name string
	data []byte
}

const unwatchedTTL = time.Second

func newCache(max int64) *cache {
	return &cache{changed: map[string]uint64{}, attrs: map[string]attrEntry{},
		dirs: map[string]dirEntry{}, content: map[string]contentEntry{}, multi: map[string]uint64{}, inos: map[uint64]uint64{}, max: max,
		walked: map[string]bool{}, single: map[string]bool{}}
}

func (c *cache) setWatching(w bool) {
	c.mu.Lock()
	c.watching = w
	c.mu.Unlock()
}

// watched reports whether the change stream is up: what is cached is
// then current, not a second old.
func (c *cache) watched() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watching
}

func (c *cache) epoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *cache) fresh(at time.Time) bool {
	return c.watching || time.Since(at) < unwatchedTTL
}

// keep reports whether an answer about name asked at epoch may be kept.
func (c *cache) keep(epoch uint64, name string) bool {
	return epoch >= c.floor && c.changed[name] <= epoch
}

// staleSince reports whether name's attributes a, learnt at epoch, may
// have changed since: name changed, or a file of several links did.
func (c *cache) staleSince(epoch uint64, name string, a mounts.Attr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.keepAttr(epoch, name, a)
}

// keepAttr is keep for an answer that name has attributes a: one of a
// file with several links is stale too when any name of that file (or,
// unknown which, of any such file) changed after epoch.
func (c *cache) keepAttr(epoch uint64, name string, a mounts.Attr) bool {
	return c.keep(epoch, name) && !c.linksChangedLocked(epoch, a)
}

// linksChangedSince reports whether a is of a file with several links
// of which one changed (or, unknown which, one of any such file) after
// epoch.
func (c *cache) linksChangedSince(epoch uint64, a mounts.Attr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.linksChangedLocked(epoch, a)
}

func (c *cache) linksChangedLocked(epoch uint64, a mounts.Attr) bool {
	if a.Nlink < 2 || a.IsDir() {
		return false
	}
	return c.multiFloor > epoch || c.inos[a.Ino] > epoch
}

// changedSince reports whether name was reported changed (or everything
// forgotten) after epoch.
func (c *cache) changedSince(name string, epoch uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.keep(epoch, name)
}

// invalidate forgets name, its listing and its parent's listing.
func (c *cache) invalidate(name string) { c.invalidateAs(name, false) }

// invalidateAs is invalidate for a change after which name is known to
// be no other file's name (single: the change stream's state of it says
// so): when it was not either before, the other names of files with
// several links need not be forgotten (git's index.lock, created and
// removed at every status, would otherwise take the packs' attributes
// along, which a local clone links).
func (c *cache) invalidateAs(name string, single bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	parent, _ := mounts.Split(name)
	if name == "." {
		parent = "."
	}
	_, listed := c.dirs[name]
	known, isKnown := c.attrs[name]
	subtree := listed || !isKnown || known.a.IsDir()
	a, ok := c.known(name)
	wasSingle := ok && (a.Nlink < 2 || a.IsDir()) || isKnown && known.missing || !ok && (c.single[name] || c.unlisted(name))
	if !wasSingle || !single && !ok {
		c.dropLinks(name)
	}
	if wasSingle {
		c.single[name] = true
	} else {
		delete(c.single, name)
	}
	for _, n := range []string{name, parent} {
		c.changed[n] = c.now
		delete(c.attrs, n)
		delete(c.dirs, n)
		delete(c.walked, n)
		if e, ok := c.content[n]; ok {
			c.bytes -= int64(len(e.data))
			delete(c.content, n)
		}
	}
	// The parent's attributes (its link count, its times) are also in its
	// own parent's listing, which known answers from.
	if grand, base := mounts.Split(parent); parent != "." {
		if d, ok := c.dirs[grand]; ok {
			if _, ok := d.find(base); ok {
				delete(c.dirs, grand)
			}
		}
	}
	// A directory renamed or removed takes its subtree with it.
	if subtree {
		c.dropSubtree(name)
	}
	c.bound()
}

// bound keeps the marks of changes bounded: past 65,536 of them, every
// answer asked before now is stale (what is cached stays: it is current).
func (c *cache) bound() {
	if len(c.changed) > 1<<16 || len(c.inos) > 1<<16 {
		c.changed = map[string]uint64{}
		c.single = map[string]bool{}
		c.inos = map[uint64]uint64{}
		c.floor = c.now
	}
}

// unlisted reports whether name's parent listing is cached without it.
func (c *cache) unlisted(name string) bool {
	parent, base := mounts.Split(name)
	d, ok := c.dirs[parent]
	if !ok || name == "." {
		return false
	}
	for _, e := range d.ents {
		if e.Name == base {
			return false
		}
	}
	return true
}

// dropLinks forgets the other names of name's file when it has several:
// a change of one (its content, its link count) shows at all. When name
// is not known, every file with several links is forgotten.
func (c *cache) dropLinks(name string) {
	a, ok := c.known(name)
	if ok && (a.Nlink < 2 || a.IsDir()) {
		return
	}
	// An answer already on its way about the file, by any name, is
	// stale too: the names held here, their listings, and those the
	// cache does not hold (keepAttr).
	if ok {
		c.inos[a.Ino] = c.now
	} else {
		c.multiFloor = c.now
	}
	for n, ino := range c.multi {
		if ok && ino != a.Ino {
			continue
		}
		delete(c.multi, n)
		delete(c.attrs, n)
		c.changed[n] = c.now
		if ce, had := c.content[n]; had {
			c.bytes -= int64(len(ce.data))
			delete(c.content, n)
		}
		parent, _ := mounts.Split(n)
		delete(c.dirs, parent)
		c.changed[parent] = c.now
	}
}

// track notes whether name's file has several links.
func (c *cache) track(name string, a mounts.Attr) {
	if a.Nlink >= 2 && !a.IsDir() {
		c.multi[name] = a.Ino
	} else {
		delete(c.multi, name)
	}
}

// setAttr caches name's attributes and puts them into its parent's
// listing, so that a stat and a listing never disagree.
func (c *cache) setAttr(name string, a mounts.Attr) {
	e := c.attrs[name]
	if e.a != a {
		e.hasLink = false
	}
	e.a, e.missing, e.at = a, false, time.Now()
	c.attrs[name] = e
	c.track(name, a)
	parent, base := mounts.Split(name)
	if d, ok := c.dirs[parent]; ok && name != "." {
		if i, ok := d.find(base); ok {
			d.attrs[i] = a
		}
	}
}

// known returns name's cached attributes, its own or its parent
// listing's.
func (c *cache) known(name string) (mounts.Attr, bool) {
	if e, ok := c.attrs[name]; ok && !e.missing {
		return e.a, true
	}
	parent, base := mounts.Split(name)
	if d, ok := c.dirs[parent]; ok {
		if i, ok := d.find(base); ok {
			return d.attrs[i], true
		}
	}
	return mounts.Attr{}, false
}

// invalidateFile forgets what is known of a regular file (a file being
// written): no subtree to look for.
func (c *cache) invalidateFile(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	c.changed[name] = c.now
	c.dropLinks(name)
	delete(c.attrs, name)
	if e, ok := c.content[name]; ok {
		c.bytes -= int64(len(e.data))
		delete(c.content, name)
	}
	parent, _ := mounts.Split(name)
	delete(c.dirs, parent) // the listing holds the file's attributes
}

// flush forgets everything.
func (c *cache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	c.floor = c.now
	c.changed = map[string]uint64{}
	c.attrs = map[string]attrEntry{}
	c.dirs = map[string]dirEntry{}
	c.content = map[string]contentEntry{}
	c.multi = map[string]uint64{}
	c.inos = map[uint64]uint64{}
	c.walked = map[string]bool{}
	c.single = map[string]bool{}
	c.bytes = 0
}

// walk marks dir as walked by a read-ahead, and reports whether it was
// not already: a read-ahead starts only where none has been since the
// last change there. Without a change stream, none starts at all: what
// it fetched would be stale in a second.
func (c *cache) walk(dir string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching || c.walked[dir] {
		return false
	}
	c.walked[dir] = true
	return true
}

// aheadRoot is where a read-ahead for a file of dir starts: the highest
// directory from dir up whose ancestors on the way were all listed here
// (a program walking a tree lists each directory on its way down: tar
// from ".", a build from its package) and none walked yet.
func (c *cache) aheadRoot(dir string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	root := dir
	for d := dir; d != "."; {
		p, _ := mounts.Split(d)
		if _, listed := c.dirs[p]; !listed || c.walked[p] {
			break
		}
		root, d = p, p
	}
	return root
}

// walkedAt marks what a read-ahead answered, asked at epoch.
func (c *cache) walkedAt(epoch uint64, dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keep(epoch, dir) {
		c.walked[dir] = true
	}
}

// stat answers from the cache: the name's own attributes, or its
// absence from a cached listing of its parent.
func (c *cache) stat(name string) (mounts.Attr, error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.attrs[name]; ok && c.fresh(e.at) {
		if e.missing {
			return mounts.Attr{}, fs.ErrNotExist, true
		}
		return e.a, nil, true
	}
	if name == "." {
		return mounts.Attr{}, nil, false
	}
	parent, base := mounts.Split(name)
	if d, ok := c.dirs[parent]; ok && c.fresh(d.at) {
		if i, ok := d.find(base); ok {
			return d.attrs[i], nil, true
		}
		return mounts.Attr{}, fs.ErrNotExist, true
	}
	return mounts.Attr{}, nil, false
}

func (c *cache) putAttr(epoch uint64, name string, a mounts.Attr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keepAttr(epoch, name, a) {
		c.setAttr(name, a)
	}
}

func (c *cache) putMissing(epoch uint64, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keep(epoch, name) {
		c.attrs[name] = attrEntry{missing: true, at: time.Now()}
	}
}

func (c *cache) dir(name string) ([]mounts.DirEntry, []mounts.Attr, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.dirs[name]
	if !ok || !c.fresh(d.at) {
		return nil, nil, false
	}
	// Callers may keep or change what they get; an empty listing is an
	// empty slice, as a fresh one is.
	return append(make([]mounts.DirEntry, 0, len(d.ents)), d.ents...), append(make([]mounts.Attr, 0, len(d.attrs)), d.attrs...), true
}

func (c *cache) putDir(epoch uint64, name string, ents []mounts.DirEntry, attrs []mounts.Attr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.keep(epoch, name) {
		return
	}
	for i := range ents {
		if !c.keepAttr(epoch, mounts.Join(name, ents[i].Name), attrs[i]) {
			return // an entry's attributes are stale: so is the listing
		}
	}
	c.dirs[name] = dirEntry{ents: append([]mounts.DirEntry(nil), ents...), attrs: append([]mounts.Attr(nil), attrs...), at: time.Now()}
	// The listing is the newest word on each entry.
	for i := range ents {
		c.setAttr(mounts.Join(name, ents[i].Name), attrs[i])
	}
}

func (c *cache) link(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.attrs[name]
	if !ok || !e.hasLink || !c.fresh(e.at) {
		return "", false
	}
	return e.link, true
}

func (c *cache) putLink(epoch uint64, name, target string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.attrs[name]; ok && c.keep(epoch, name) {
		e.link, e.hasLink = target, true
		c.attrs[name] = e
	}
}

// file returns a small file's content if it is cached and its attributes
// are still those it was read with.
func (c *cache) file(name string) (contentEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.content[name]
	if !ok || !c.watching {
		return contentEntry{}, false
	}
	if a, ok := c.attrs[name]; ok && !a.missing && a.a == e.a {
		return e, true
	}
	return contentEntry{}, false
}

// pagesOf returns the content of dir's files to offer to the page sink:
// what is cached and current, unless offered (mark) before for this
// listing of dir kept here (the listing's entry holds the mark, and goes
// with any change there).
func (c *cache) pagesOf(dir string, mark bool) []page {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.dirs[dir]
	if !ok || d.offered || !c.watching {
		return nil
	}
	if mark {
		d.offered = true
		c.dirs[dir] = d
	}
	var pages []page
	for i, e := range d.ents {
		if !e.Type.IsRegular() {
			continue
		}
		name := mounts.Join(dir, e.Name)
		if ce, ok := c.content[name]; ok && ce.a == d.attrs[i] {
			pages = append(pages, page{name: name, data: ce.data})
		}
	}
	return pages
}

func (c *cache) putFile(epoch uint64, name string, a mounts.Attr, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.keepAttr(epoch, name, a) || int64(len(data)) > c.max/16 {
		return
	}
	if old, ok := c.content[name]; ok {
		c.bytes -= int64(len(old.data))
	}
	for n, e := range c.content { // evict at random: map order
		if c.bytes+int64(len(data)) <= c.max {
			break
		}
		c.bytes -= int64(len(e.data))
		delete(c.content, n)
	}
	c.content[name] = contentEntry{a: a, data: data}
	c.bytes += int64(len(data))
	c.setAttr(name, a)
}

// sameAs reports whether the cache holds name as existing with a, its
// ctime and atime aside.
func (c *cache) sameAs(name string, a mounts.Attr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	known, ok := c.known(name)
	if !ok {
		return false
	}
	// The ctime of a change made here is this daemon's guess until the
	// answer brings the peer's; what else it changes shows elsewhere.
	known.Ctime = a.Ctime
	return sameAttr(known, a, true)
}

// sameAttr reports whether a and b say the same, times compared as
// instants: one made here carries a monotonic reading and this machine's
// zone, the same time from the wire neither. With anyAtime their access
// times may differ: a read changes nothing else (the peer's own walk of
// a new directory, to watch it, reads it).
func sameAttr(a, b mounts.Attr, anyAtime bool) bool {
	if !anyAtime && !a.Atime.Equal(b.Atime) || !a.Mtime.Equal(b.Mtime) || !a.Ctime.Equal(b.Ctime) {
		return false
	}
	a.Atime, a.Mtime, a.Ctime = b.Atime, b.Mtime, b.Ctime
	return a == b
}

// dropContent forgets the content kept of name (a change stream event
// that shows its attributes unchanged: a rewrite within the clock's
// granularity keeps them), and the mark that its directory was walked.
func (c *cache) dropContent(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.content[name]; ok {
		c.bytes -= int64(len(e.data))
		delete(c.content, name)
	}
	parent, _ := mounts.Split(name)
	delete(c.walked, parent)
}

// setState makes name what this daemon knows it to be, newer than any
// answer asked before (a change posted here, or the state its answer
// brought): missing, or existing with a. The parent's listing, if kept,
// is kept in step, so that the next name looked up in it costs no round
// trip. It reports whether that changed what was known, beyond the
// ctime (the one time the peer's clock sets: the kernel face answered
// with this daemon's, a moment off), blocks not known before, and a
// directory's size.
func (c *cache) setState(name string, missing bool, a mounts.Attr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	c.changed[name] = c.now
	defer c.bound()
	before, had := c.known(name)
	if ce, ok := c.content[name]; ok && (missing || ce.a != a) {
		c.bytes -= int64(len(ce.data))
		delete(c.content, name)
	}
	if _, listed := c.dirs[name]; (had && before.IsDir() || listed) && (missing || !a.IsDir()) {
		// A directory gone or replaced: what was kept below it. (A
		// name not known as a directory has nothing kept below it:
		// going over the whole cache for each file a tar creates
		// would cost more than the tar.)
		c.dropSubtree(name)
	}
	delete(c.walked, name)
	parent, base := mounts.Split(name)
	d, listed := c.dirs[parent]
	if missing {
		c.attrs[name] = attrEntry{missing: true, at: time.Now()}
		delete(c.multi, name)
		if listed {
			if i, ok := d.find(base); ok {
				d.ents = slices.Delete(d.ents, i, i+1)
				d.attrs = slices.Delete(d.attrs, i, i+1)
				c.dirs[parent] = d
			}
		}
		return had
	}
	if listed && name != "." {
		ent := mounts.DirEntry{Name: base, Type: a.Mode.Type(), Ino: a.Ino}
		if i, ok := d.find(base); ok {
			d.ents[i] = ent // its attributes: setAttr, below
		} else {
			d.ents = slices.Insert(d.ents, i, ent)
			d.attrs = slices.Insert(d.attrs, i, a)
		}
		c.dirs[parent] = d
	}
	c.setAttr(name, a)
	before.Ctime = a.Ctime
	if before.Blocks == 0 || a.IsDir() {
		// Blocks this daemon did not know (the kernel face derived
		// them from the size), a directory's size: nothing a
		// program relies on.
		before.Blocks = a.Blocks
	}
	if a.IsDir() {
		before.Size = a.Size
	}
	return !had || !sameAttr(before, a, false)
}

// setEmptyDir keeps dir, just made here, as listed with no entry.
func (c *cache) setEmptyDir(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirs[dir] = dirEntry{at: time.Now()}
}

// dropSubtree forgets the listing of name and everything kept below it.
func (c *cache) dropSubtree(name string) {
	delete(c.dirs, name)
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	for n := range c.walked {
		if strings.HasPrefix(n, prefix) {
			delete(c.walked, n)
		}
	}
	for n := range c.attrs {
		if strings.HasPrefix(n, prefix) {
			delete(c.attrs, n)
		}
	}
	for n := range c.dirs {
		if strings.HasPrefix(n, prefix) {
			delete(c.dirs, n)
		}
	}
	for n, e := range c.content {
		if strings.HasPrefix(n, prefix) {
			c.bytes -= int64(len(e.data))
			delete(c.content, n)
		}
	}
}

// find is the index of base in the listing (sorted by name, as the
// contract has listings).
func (d dirEntry) find(base string) (int, bool) {
	return slices.BinarySearchFunc(d.ents, base, func(e mounts.DirEntry, n string) int { return strings.Compare(e.Name, n) })
}
