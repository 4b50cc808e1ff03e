package mounts

import "context"

// FileWalker is the optional accelerated read capability behind the search
// tools (grep): one call visits every regular file of a subtree with its
// content, which a mount can do far faster than a Stat, ReadDir and Open
// per file (the git mount walks tree objects once and reads blobs straight
// from the object store). Search semantics (the pattern, binary detection,
// ignore files) stay with the caller, so every mount searches the same way.
type FileWalker interface {
	FS
	// WalkFiles visits every regular file below the directory dir. It
	// does not follow or visit symlinks and does not descend into
	// directories named ".git". For each file, want (when non-nil) is
	// asked first with the file's name, and a refused file is not read;
	// then visit gets the name and the whole content. Names are full
	// names of this mount ("src/main.go"), like dir.
	//
	// Files are visited in no particular order, and visit may be called
	// from several goroutines at once; it must not keep data after it
	// returns. The first error from visit stops the walk and is returned.
	// A file that vanishes during the walk is skipped.
	WalkFiles(ctx context.Context, dir string, want func(name string) bool, visit func(name string, data []byte) error) error
}

// WalkFiles visits the regular files below dir with fsys's FileWalker. ok
// is false when fsys has none: the caller walks the tree itself.
func WalkFiles(ctx context.Context, fsys FS, dir string, want func(name string) bool, visit func(name string, data []byte) error) (ok bool, err error) {
	w, ok := fsys.(FileWalker)
	if !ok {
		return false, nil
	}
	return true, w.WalkFiles(ctx, dir, want, visit)
}
