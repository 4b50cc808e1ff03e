package overlayfs

import (
	"context"
	"fmt"

	"github.com/vfsmount/vfsmount/mounts"
)

// UpperCheckpointView is the upper layer alone as it was at checkpoint id:
// everything the overlay knows (its changes, whiteouts, bookkeeping), and
// nothing of the lower. An object store sends this, not the merged tree, so
// a writable git mount costs in what changed, never in the commit's size;
// the overlay comes back by [New] over the same lower with a copy of it as
// the upper.
func (f *FS) UpperCheckpointView(ctx context.Context, id string) (mounts.FS, error) {
	z := f.freezer()
	if z == nil {
		return nil, fmt.Errorf("overlay: the upper layer cannot freeze")
	}
	return z.CheckpointView(ctx, id)
}
