package memfs

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"golang.org/x/sync/errgroup"
)

// Lazy content
//
// A tree restored from an [Image] with Fetch (an object store's checkpoint)
// is whole at once, names, attributes and sizes, while the content of its
// regular files stays where it is until it is needed: a file's content is
// fetched, whole, when the file is first opened or truncated by name, and
// [FS.LoadAll] fetches what is left (in the background, say). Until then a
// file's stat shows its size (and no blocks); no read ever sees a byte that
// was not fetched. A fetch that fails fails that open with EIO, and the
// file stays to be fetched; nothing else is affected.
//
// A checkpoint needs every content (it shares the tree's pages): freezing
// the tree fetches what is left first, and a checkpoint fails while some
// content cannot be fetched.

// Fetcher feeds the content of regular file ino, as Image.Content does
// the whole tree's: put copies what it is given; an error of put must be
// returned unchanged.
type Fetcher func(ctx context.Context, ino uint64, put func(WriteRecord) error) error

// lazyState is what a lazily restored tree has left to fetch.
type lazyState struct {
	fetch Fetcher
	mu    sync.Mutex
	// left are the files whose content is not fetched yet; loading, the
	// fetches in flight (closed when done).
	left    map[uint64]*node
	loading map[uint64]chan struct{}
}

// Pending counts the files whose content is not fetched yet.
func (f *FS) Pending() int {
	if f.lz == nil {
		return 0
	}
	f.lz.mu.Lock()
	defer f.lz.mu.Unlock()
	return len(f.lz.left)
}

// load fetches n's content if it is not there yet (waiting for a fetch of
// it in flight). The caller holds no lock of n's.
func (f *FS) load(ctx context.Context, n *node) error {
	lz := f.lz
	if lz == nil {
		return nil
	}
	for {
		n.mu.RLock()
		gone := n.freed || n.nlink == 0
		n.mu.RUnlock()
		lz.mu.Lock()
		if lz.left[n.ino] != n {
			lz.mu.Unlock()
			return nil
		}
		if gone && lz.loading[n.ino] == nil {
			delete(lz.left, n.ino) // no name left: never needed
			lz.mu.Unlock()
			return nil
		}
		if ch := lz.loading[n.ino]; ch != nil {
			lz.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		ch := make(chan struct{})
		lz.loading[n.ino] = ch
		lz.mu.Unlock()
		err := f.fetchInto(ctx, n)
		lz.mu.Lock()
		delete(lz.loading, n.ino)
		if err == nil {
			delete(lz.left, n.ino)
		}
		close(ch)
		lz.mu.Unlock()
		if err != nil {
			f.log.Error("memfs: fetching a file's content failed", "ino", n.ino, "err", err)
			return fmt.Errorf("%w: fetching the content: %v", syscall.EIO, err)
		}
		return nil
	}
}

// fetchInto fetches n's content and puts it in place.
func (f *FS) fetchInto(ctx context.Context, n *node) error {
	n.mu.RLock()
	size := n.data.size
	n.mu.RUnlock()
	c := content{size: size}
	err := f.lz.fetch(ctx, n.ino, func(w WriteRecord) error {
		if w.Off < 0 || w.Off > size-int64(len(w.Data)) {
			return fmt.Errorf("%w: content of inode %d past its size", ErrBadImage, n.ino)
		}
		c.writeAt(w.Data, w.Off)
		c.size = size
		return nil
	})
	if err != nil {
		return err
	}
	n.mu.Lock()
	// Nothing changed the content meanwhile: a change opens or
	// truncates first, which waits for this fetch.
	n.data.pages, n.data.alloc, n.data.blocks = c.pages, c.alloc, c.blocks
	n.mu.Unlock()
	f.usedBytes.Add(c.alloc)
	return nil
}

// LoadAll fetches the content of every file not fetched yet, workers at a
// time, and returns the first failure (the rest are still fetched).
func (f *FS) LoadAll(ctx context.Context, workers int) error {
	if f.lz == nil {
		return nil
	}
	f.lz.mu.Lock()
	ns := make([]*node, 0, len(f.lz.left))
	for _, n := range f.lz.left {
		ns = append(ns, n)
	}
	f.lz.mu.Unlock()
	var g errgroup.Group
	g.SetLimit(max(workers, 1))
	for _, n := range ns {
		g.Go(func() error { return f.load(ctx, n) })
	}
	return g.Wait()
}

// lazyErr is an error while some reachable file's content is not fetched:
// a checkpoint cannot hold the tree yet.
func (f *FS) lazyErr() error {
	if f.lz == nil {
		return nil
	}
	f.lz.mu.Lock()
	defer f.lz.mu.Unlock()
	for ino, n := range f.lz.left {
		n.mu.RLock()
		gone := n.freed || n.nlink == 0
		n.mu.RUnlock()
		if gone {
			delete(f.lz.left, ino) // no name: never needed
			continue
		}
		return fmt.Errorf("%w: the content of %d files is not fetched yet (inode %d)", syscall.EIO, len(f.lz.left), ino)
	}
	return nil
}
