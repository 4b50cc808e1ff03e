package fusefs

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Negative entries (see "# Caching" in the package doc): a failed lookup
// of a name whose mount only this process changes is cached by the kernel
// as long as a found one is, and dropped by the same invalidation.
//
// go-fuse sets the negative timeout only mount-wide, and a host mount's
// must stay 0, so node.Lookup says per name: it fails with ENOENT and
// sets the entry timeout of out, and negEntries, below the readiness gate,
// turns that into the kernel's form of a cacheable miss: a reply with node
// id 0 and a timeout.
type negEntries struct {
	fuse.RawFileSystem
}

func (r negEntries) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	st := r.RawFileSystem.Lookup(cancel, h, name, out)
	if st == fuse.ENOENT && out.EntryTimeout() > 0 {
		valid, nsec := out.EntryValid, out.EntryValidNsec
		*out = fuse.EntryOut{EntryValid: valid, EntryValidNsec: nsec}
		return fuse.OK
	}
	return st
}

// maxRootNegatives bounds the missing names remembered at a connection's
// root; past it, misses there are not cached.
const maxRootNegatives = 1024

// rootNegatives are the missing names the kernel was told to cache at a
// connection's root. Invalidating a name below the root drops its entry
// in the directory above it, and a directory's entry takes the misses
// below it along; the root has no entry above it, so invalidating the
// whole connection (a restore of the mount on a stacked connection) drops
// these one by one.
type rootNegatives struct {
	mu    sync.Mutex
	names map[string]struct{}
}

// add remembers elem and reports whether the miss may be cached.
func (r *rootNegatives) add(elem string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.names[elem]; ok {
		return true
	}
	if len(r.names) >= maxRootNegatives {
		return false
	}
	if r.names == nil {
		r.names = map[string]struct{}{}
	}
	r.names[elem] = struct{}{}
	return true
}

// take returns the names remembered and forgets them.
func (r *rootNegatives) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.names))
	for n := range r.names {
		names = append(names, n)
	}
	r.names = nil
	return names
}
