package memfs

import (
	"slices"
	"syscall"
)

// pageSize is the unit of file storage. A page is allocated on first write
// and never for a hole, so a file with one byte at 1 GiB holds one page.
const pageSize = 64 << 10

// blockSize is the unit Attr.Blocks counts in.
const blockSize = 512

// maxFileSize bounds offsets so that off+len never overflows. Linux's
// MAX_LFS_FILESIZE is the same.
const maxFileSize = 1<<63 - 1

// errFileTooBig is returned for writes that would end past maxFileSize.
var errFileTooBig error = syscall.EFBIG

// content is the data of a regular file: a sparse array of pages.
//
// pages maps a page index to the prefix of that page that has ever been
// written; bytes of the page past the slice, and pages with no entry, read
// as zeros. Keeping only the prefix lets a small file cost its size, not a
// whole page, and keeps truncate and far writes O(pages touched): nothing is
// ever copied to fill a hole.
//
// content has no lock of its own; the owning node's mutex guards it.
type content struct {
	pages  map[int64][]byte
	size   int64
	alloc  int64 // sum of len(page): the bytes charged to the quota
	blocks int64 // sum of ceil(len(page)/512): what Attr.Blocks reports

	// shared says the pages may be shared with a checkpoint, which never
	// changes them: a page not in owned is copied before it is written.
	// A page shortened by truncate may be shared too (its backing array
	// past the cut is still the checkpoint's), so extend copies it as well.
	shared bool
	owned  map[int64]struct{}
}

func blocksOf(n int) int64 { return int64((n + blockSize - 1) / blockSize) }

// readAt copies the content at off into p, zeros for holes, and returns the
// count, which is short only at the end of the file.
func (c *content) readAt(p []byte, off int64) int {
	if off >= c.size {
		return 0
	}
	if rest := c.size - off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n := len(p)
	for len(p) > 0 {
		idx, in := off/pageSize, int(off%pageSize)
		chunk := min(len(p), pageSize-in)
		page := c.pages[idx]
		var got int
		if in < len(page) {
			got = copy(p[:chunk], page[in:])
		}
		clear(p[got:chunk])
		p, off = p[chunk:], off+int64(chunk)
	}
	return n
}

// growth returns how many bytes writing len bytes at off would add to
// alloc, without changing anything, so a quota can refuse a write before it
// happens.
func (c *content) growth(off int64, length int) int64 {
	var add int64
	for length > 0 {
		idx, in := off/pageSize, int(off%pageSize)
		chunk := min(length, pageSize-in)
		if end := in + chunk; end > len(c.pages[idx]) {
			add += int64(end - len(c.pages[idx]))
		}
		length, off = length-chunk, off+int64(chunk)
	}
	return add
}

// writeAt stores p at off, extending the size when it writes past the end.
// The caller checked off+len(p) against maxFileSize.
func (c *content) writeAt(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	if c.pages == nil {
		c.pages = make(map[int64][]byte)
	}
	if end := off + int64(len(p)); end > c.size {
		c.size = end
	}
	for len(p) > 0 {
		idx, in := off/pageSize, int(off%pageSize)
		chunk := min(len(p), pageSize-in)
		page := c.extend(idx, in+chunk)
		copy(page[in:], p[:chunk])
		p, off = p[chunk:], off+int64(chunk)
	}
}

// extend makes page idx at least n bytes long and returns it. Bytes between
// the old and the new length are zeroed: a page shortened by truncate may
// still hold old data past its length in the backing array.
func (c *content) extend(idx int64, n int) []byte {
	page := c.pages[idx]
	if c.shared {
		if _, own := c.owned[idx]; !own {
			if page != nil {
				page = append(make([]byte, 0, min(max(n, len(page)), pageSize)), page...)
				c.pages[idx] = page
			}
			if c.owned == nil {
				c.owned = map[int64]struct{}{}
			}
			c.owned[idx] = struct{}{}
		}
	}
	old := len(page)
	if n <= old {
		return page
	}
	if n <= cap(page) {
		page = page[:n]
		clear(page[old:])
	} else {
		// Double up to a whole page so appends in small pieces stay
		// amortised O(1) per byte.
		page = slices.Grow(page, min(max(n, 2*cap(page)), pageSize)-old)[:n]
		clear(page[old:])
	}
	c.pages[idx] = page
	c.alloc += int64(n - old)
	c.blocks += blocksOf(n) - blocksOf(old)
	return page
}

// truncate sets the size. Growing adds a hole; shrinking drops the pages
// past the end and cuts the last one, so data beyond the new end is gone for
// good (a later grow reads zeros). It returns the change in alloc (<= 0).
func (c *content) truncate(size int64) int64 {
	before := c.alloc
	if size < c.size {
		last := size / pageSize // first page that keeps fewer than pageSize bytes
		keep := int(size % pageSize)
		for idx, page := range c.pages {
			switch {
			case idx > last || (idx == last && keep == 0):
				c.alloc -= int64(len(page))
				c.blocks -= blocksOf(len(page))
				delete(c.pages, idx)
			case idx == last && len(page) > keep:
				c.alloc -= int64(len(page) - keep)
				c.blocks -= blocksOf(len(page)) - blocksOf(keep)
				if keep <= cap(page)/4 {
					// Give most of the page back to the collector.
					page = slices.Clone(page[:keep])
				}
				c.pages[idx] = page[:keep]
			}
		}
	}
	c.size = size
	return c.alloc - before
}

// release drops every page and returns the bytes that were allocated.
func (c *content) release() int64 {
	freed := c.alloc
	*c = content{size: c.size}
	return freed
}
