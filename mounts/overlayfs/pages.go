package overlayfs

import (
	"context"

	"github.com/vfsmount/vfsmount/mounts"
)

var _ mounts.PageOfferer = (*FS)(nil)

// OfferPages passes on the pages the lower offers (a git mount reading a
// scan's files ahead, mounts.PageOfferer) of the names the overlay shows
// as they are in the lower: not copied up, replaced, deleted or moved. A
// name that changes after its check is the sink's to notice (fusefs drops
// what it stored for a file written meanwhile); the check holds no lock
// across the sink, which may wait for the kernel.
func (f *FS) OfferPages(sink mounts.PageSink) bool {
	if sink == nil {
		return mounts.OfferPages(f.lower, nil)
	}
	return mounts.OfferPages(f.lower, func(name string, data []byte) {
		if f.private(name) {
			return
		}
		f.mu.RLock()
		e, err := f.resolve(context.Background(), name)
		f.mu.RUnlock()
		if err == nil && !e.upper && e.lower == name {
			sink(name, data)
		}
	})
}
