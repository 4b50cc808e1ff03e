package remotefs

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vfsmount/vfsmount/mounts"
)

// An answer asked before a change to a file with several links, about
// another of its names, is stale when it arrives: a stat, a listing or a
// read-ahead in flight while one name is unlinked must not put the old
// link count back, whether or not the cache held that name or the
// unlinked one.
func TestCacheLinksChangedWhileAsked(t *testing.T) {
	linked := mounts.Attr{Mode: 0o644, Nlink: 2, Ino: 7, Size: 1}
	other := mounts.Attr{Mode: 0o644, Nlink: 2, Ino: 9, Size: 1}
	g := []mounts.DirEntry{{Name: "g", Ino: 7}}
	for _, fKnown := range []bool{true, false} {
		c := newCache(1 << 20)
		c.setWatching(true)
		if fKnown {
			c.putAttr(c.epoch(), "a/f", linked)
		}
		asked := c.epoch()  // a stat of d/g, a listing of d and a read-ahead, on their way
		c.invalidate("a/f") // a/f unlinked (its other name is in another directory)
		c.putAttr(asked, "d/g", linked)
		c.putDir(asked, "d", g, []mounts.Attr{linked})
		c.putFile(asked, "d/g", linked, []byte("B"))
		_, _, cached := c.stat("d/g")
		assert.False(t, cached, "f known: %v: the link count from before the unlink", fKnown)
		_, _, listed := c.dir("d")
		assert.False(t, listed, "f known: %v: the listing from before the unlink", fKnown)

		// Another file's answers stand when the one changed is known.
		c.putAttr(asked, "e/h", other)
		_, _, cached = c.stat("e/h")
		assert.Equal(t, fKnown, cached, "f known: %v: another file with several links", fKnown)
		// And those asked after the change.
		now := c.epoch()
		c.putAttr(now, "d/g", mounts.Attr{Mode: 0o644, Nlink: 1, Ino: 7, Size: 1})
		a, _, cached := c.stat("d/g")
		assert.True(t, cached)
		assert.Equal(t, uint32(1), a.Nlink)
	}
}

// An open for writing whose answer crossed a change of another name of
// its file does not serve its first stat from that answer
// (linksChangedSince); one of a file of one link, or asked after the
// change, does.
func TestCacheLinksChangedSinceAnOpen(t *testing.T) {
	linked := mounts.Attr{Mode: 0o644, Nlink: 2, Ino: 7, Size: 1}
	c := newCache(1 << 20)
	c.putAttr(c.epoch(), "f", linked)
	c.putAttr(c.epoch(), "g", linked)
	asked := c.epoch()
	c.invalidate("g") // unlinked on the remote machine while the open of f was on its way
	assert.True(t, c.linksChangedSince(asked, linked))
	assert.False(t, c.linksChangedSince(c.epoch(), linked), "asked after the change")
	single := linked
	single.Nlink = 1
	assert.False(t, c.linksChangedSince(asked, single), "a file of one link has no other name")
	unknown := linked
	unknown.Ino = 9
	asked = c.epoch()
	c.invalidate("h") // not known: any file with several links may be it
	assert.True(t, c.linksChangedSince(asked, unknown))
}

// A change below a directory drops what the cache holds of the
// directory's attributes, its own parent's listing included: a
// directory's link count falls when a directory in it is removed, and
// that listing held the old count (TestRemoteDifferential: nlink 3 for
// good, 2 on the disk).
func TestCacheChangeBelowDropsTheParentInItsListing(t *testing.T) {
	c := newCache(1 << 20)
	c.setWatching(true)
	dir := mounts.Attr{Mode: 0o755 | 1<<31, Nlink: 3, Ino: 5}
	c.putDir(c.epoch(), "d", []mounts.DirEntry{{Name: "b", Ino: 5}}, []mounts.Attr{dir})
	_, ok := c.known("d/b")
	assert.True(t, ok, "known from d's listing")
	c.invalidate("d/b/b") // rmdir d/b/b
	_, ok = c.known("d/b")
	assert.False(t, ok, "d/b's link count before the rmdir")
}
