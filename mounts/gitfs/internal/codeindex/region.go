package codeindex

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// region is anonymous memory outside the Go heap, for the build's large,
// short-lived tables: a page costs memory once touched only (no zeroing
// of reused heap), and all of them go back to the system when the build
// ends, not when a collection and the scavenger get to them. (Huge pages
// were tried: no faster, and a small tree paid 2 MiB a trigram met.)
type region struct {
	b    []byte
	mmap bool // b is a mapping, not from the Go heap
}

// newRegion returns n zero bytes, from the Go heap when no mapping can be
// had.
func newRegion(n int) region {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return region{b: make([]byte, n)}
	}
	return region{b: b, mmap: true}
}

// grow makes the region n bytes long, its content kept, zeros after it;
// it may move it.
func (r *region) grow(n int) bool {
	if r.mmap {
		b, err := unix.Mremap(r.b, n, unix.MREMAP_MAYMOVE)
		if err != nil {
			return false
		}
		r.b = b
		return true
	}
	b := make([]byte, n)
	copy(b, r.b)
	r.b = b
	return true
}

// free gives the memory back; the region is empty after it.
func (r *region) free() {
	if r.mmap && r.b != nil {
		_ = unix.Munmap(r.b)
	}
	*r = region{}
}

// newTable returns a region of 1<<24 uint32, zero, and the table in it.
func newTable() (region, *[1 << 24]uint32) {
	r := newRegion(4 << 24)
	return r, (*[1 << 24]uint32)(unsafe.Pointer(unsafe.SliceData(r.b)))
}
