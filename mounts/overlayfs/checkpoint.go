package overlayfs

import (
	"context"
	"strings"
	"sync"

	"github.com/vfsmount/vfsmount/mounts"
)

// Checkpoints of an overlay are checkpoints of its upper layer, which holds
// everything the overlay knows (see "# Bookkeeping"). These are the hooks a
// checkpoint needs: hold the overlay still, reach its upper, read an upper
// as it was, and name merged names after upper ones.

// Hold holds off every change of the merged tree (a change is several calls
// on the upper, and a checkpoint must see none half done) until release is
// called. Writes through files already open go to the upper directly: a
// checkpoint of the upper holds those off itself.
func (f *FS) Hold() (release func()) {
	f.mu.Lock()
	var once sync.Once
	return func() { once.Do(f.mu.Unlock) }
}

// Upper returns the upper layer.
func (f *FS) Upper() mounts.FS { return f.upper }

// Lower returns the lower layer.
func (f *FS) Lower() mounts.FS { return f.lower }

// Over returns an overlay of upper over f's lower with f's options: upper
// as it was at a checkpoint, say, to list its changes or read it. upper is
// an upper layer f made (a copy of its upper); New's checks apply, and it
// empties upper's work directory.
func (f *FS) Over(ctx context.Context, upper mounts.FS) (*FS, error) {
	return New(ctx, f.lower, upper, f.opts)
}

// MergedName returns the name in the merged tree of a name in the upper
// layer, and false for the upper's bookkeeping (the work and meta
// directories), which no merged name shows.
func MergedName(upper string) (string, bool) {
	switch {
	case upper == treeDir:
		return ".", true
	case strings.HasPrefix(upper, treeDir+"/"):
		return upper[len(treeDir)+1:], true
	}
	return "", false
}

// UpperName returns the name in the upper layer of a merged name: what a
// checkpoint of the upper restores for it.
func UpperName(name string) string { return up(name) }
