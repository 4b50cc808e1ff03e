package store

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// Resumed is a checkpoint fetched from the store, to bring a workspace
// back as it was at it.
type Resumed struct {
	s *Store
	// Head and Ref are the workspace and the checkpoint.
	Head     *Head
	Ref      Ref
	Manifest *Manifest
	packs    map[string]packed // where the packed chunks are
}

// WarmPacks fetches every pack that holds a chunk of the trees at
// prefixes, whole (one GET a pack, in parallel), into the local cache,
// each chunk checked by its hash: a lazy tree's files then load from the
// cache, not with a request each, and a file read meanwhile waits for its
// pack rather than asking for its chunk. Without a cache it does nothing.
func (r *Resumed) WarmPacks(ctx context.Context, prefixes ...string) error {
	if r.s.cache == nil {
		return nil
	}
	packs := map[string]bool{}
	for _, p := range prefixes {
		m, ok := r.Mount(p)
		if !ok || m.Tree == nil {
			continue
		}
		for _, in := range m.Tree.Inodes {
			for _, h := range in.Chunks {
				if l, ok := r.packs[h]; ok {
					packs[l.pack] = true
				}
			}
		}
	}
	// The packs no other warming fetches already are this one's.
	s := r.s
	s.warmMu.Lock()
	if s.warming == nil {
		s.warming = map[string]chan struct{}{}
	}
	mine := map[string]bool{}
	for p := range packs {
		if s.warming[p] == nil {
			s.warming[p] = make(chan struct{})
			mine[p] = true
		}
	}
	s.warmMu.Unlock()
	defer func() {
		s.warmMu.Lock()
		for p := range mine {
			close(s.warming[p])
			delete(s.warming, p)
		}
		s.warmMu.Unlock()
	}()
	return r.fetchPacks(ctx, mine, nil)
}

// chunk fetches chunk h of the checkpoint, from its pack if it is in one.
func (r *Resumed) chunk(ctx context.Context, h string) ([]byte, error) {
	if l, ok := r.packs[h]; ok {
		return r.s.getPacked(ctx, h, l)
	}
	return r.s.getChunk(ctx, h)
}

// fetchPacks fetches the packs named, whole, one GET a pack, and checks
// each chunk they hold against its hash; each goes into the cache, and to
// keep (when not nil).
func (r *Resumed) fetchPacks(ctx context.Context, packs map[string]bool, keep func(h string, b []byte)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.s.cfg.Parallel)
	for _, p := range r.Manifest.Packs {
		if !packs[p.Hash] {
			continue
		}
		g.Go(func() error {
			key := r.s.key(packKeyPart(p.Hash))
			o, err := r.s.get(gctx, key)
			if err != nil {
				return err
			}
			for _, c := range p.Chunks {
				if c.Off < 0 || c.Len < 0 || c.Off+c.Len > int64(len(o.data)) {
					return fmt.Errorf("store %s: %s: %w: %d bytes, chunk %s at %d+%d", r.s.url, key, ErrCorrupt, len(o.data), c.Hash, c.Off, c.Len)
				}
				b := o.data[c.Off : c.Off+c.Len : c.Off+c.Len]
				if got := sum(b); got != c.Hash {
					r.s.log.Error("store: corrupt chunk in a pack", "store", r.s.url, "pack", key, "chunk", c.Hash, "offset", c.Off, "sha256", got)
					return fmt.Errorf("store %s: chunk %s at %d in %s: %w: its bytes hash to %s", r.s.url, c.Hash, c.Off, key, ErrCorrupt, got)
				}
				if r.s.cache != nil {
					r.s.cache.put(c.Hash, b)
				}
				if keep != nil {
					keep(c.Hash, b)
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// Resume fetches the manifest of ref (NAME[@CKPT]; the newest checkpoint
// without CKPT). A workspace or a checkpoint the store lacks is
// ErrNotFound naming both.
func (s *Store) Resume(ctx context.Context, ref string) (*Resumed, error) {
	h, r, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	m, err := s.Manifest(ctx, r.Manifest)
	if err != nil {
		return nil, err
	}
	return &Resumed{s: s, Head: h, Ref: r, Manifest: m, packs: m.packIndex()}, nil
}

// Mount is the manifest's mount at prefix, false when it has none.
func (r *Resumed) Mount(prefix string) (MountManifest, bool) {
	for _, m := range r.Manifest.Mounts {
		if m.Prefix == prefix {
			return m, true
		}
	}
	return MountManifest{}, false
}

// CheckCommit checks that the writable git mount at prefix is resumed over
// the commit its checkpoint was taken over: have is the commit the source
// serves now. Another one is ErrOtherCommit, naming both.
func (r *Resumed) CheckCommit(prefix, have string) error {
	m, ok := r.Mount(prefix)
	if !ok || m.Commit == "" || m.Commit == have {
		return nil
	}
	return fmt.Errorf("store %s: workspace %q checkpoint %d: %s: %w: the checkpoint is over %s, the source serves %s",
		r.s.url, r.Head.Workspace, r.Ref.Seq, prefix, ErrOtherCommit, m.Commit, have)
}

// Tree rebuilds the writable layer of the mount at prefix as a memory tree
// with opts: a memory mount's tree, or the upper layer of a writable git
// mount (put it over its commit, overlayfs.New). Its chunks are fetched in
// parallel (from the local cache when it has them), each checked by its
// hash. A prefix whose mount the checkpoint does not hold is ErrNotFound.
func (r *Resumed) Tree(ctx context.Context, prefix string, opts memfs.Options) (*memfs.FS, error) {
	m, ok := r.Mount(prefix)
	if !ok || m.Tree == nil {
		return nil, fmt.Errorf("store %s: workspace %q checkpoint %d holds no tree at %s: %w", r.s.url, r.Head.Workspace, r.Ref.Seq, prefix, ErrNotFound)
	}
	t := m.Tree
	// Fetch every distinct chunk first, in parallel: the packs whole,
	// then the chunks of their own.
	data := map[string][]byte{}
	var mu sync.Mutex
	for _, in := range t.Inodes {
		for _, h := range in.Chunks {
			data[h] = nil
		}
	}
	packs := map[string]bool{}
	for h := range data {
		if l, ok := r.packs[h]; ok {
			packs[l.pack] = true
		}
	}
	err := r.fetchPacks(ctx, packs, func(h string, b []byte) {
		mu.Lock()
		if _, ok := data[h]; ok {
			data[h] = b
		}
		mu.Unlock()
	})
	if err != nil {
		return nil, fmt.Errorf("resume of %s: %w", prefix, err)
	}
	var rest []string
	for h, b := range data {
		if b == nil {
			rest = append(rest, h)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.s.cfg.Parallel)
	for _, h := range rest {
		g.Go(func() error {
			b, err := r.s.getChunk(gctx, h)
			if err != nil {
				return err
			}
			mu.Lock()
			data[h] = b
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("resume of %s: %w", prefix, err)
	}
	img := r.image(t)
	cs := r.Manifest.ChunkSize
	img.Content = func(put func(memfs.WriteRecord) error) error {
		for _, in := range t.Inodes {
			for i, h := range in.Chunks {
				b := data[h]
				if want := min(cs, in.Size-int64(i)*cs); int64(len(b)) != want {
					return fmt.Errorf("store %s: chunk %s of inode %d: %w: %d bytes, want %d", r.s.url, h, in.Ino, ErrCorrupt, len(b), want)
				}
				if err := put(memfs.WriteRecord{Ino: in.Ino, Off: int64(i) * cs, Data: b}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	f, err := memfs.Restore(opts, img)
	if err != nil {
		return nil, fmt.Errorf("store %s: workspace %q checkpoint %d: %s: %w", r.s.url, r.Head.Workspace, r.Ref.Seq, prefix, err)
	}
	return f, nil
}

// LazyTree is [Resumed.Tree] with the content left in the store: the tree
// is whole at once (names, attributes, sizes), and a file's chunks are
// fetched (from the local cache when it has them, each checked by its
// hash) when the file is first opened; f.LoadAll(ctx, n) fetches the rest,
// in the background say. A chunk that cannot be fetched, or is corrupt,
// fails that open with EIO, and the store's log names it.
func (r *Resumed) LazyTree(prefix string, opts memfs.Options) (*memfs.FS, error) {
	m, ok := r.Mount(prefix)
	if !ok || m.Tree == nil {
		return nil, fmt.Errorf("store %s: workspace %q checkpoint %d holds no tree at %s: %w", r.s.url, r.Head.Workspace, r.Ref.Seq, prefix, ErrNotFound)
	}
	img := r.image(m.Tree)
	byIno := make(map[uint64]*Inode, len(m.Tree.Inodes))
	for i := range m.Tree.Inodes {
		byIno[m.Tree.Inodes[i].Ino] = &m.Tree.Inodes[i]
	}
	cs := r.Manifest.ChunkSize
	img.Fetch = func(ctx context.Context, ino uint64, put func(memfs.WriteRecord) error) error {
		in := byIno[ino]
		if in == nil {
			return fmt.Errorf("store %s: no inode %d at %s", r.s.url, ino, prefix)
		}
		data := make([][]byte, len(in.Chunks))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(4)
		for i, h := range in.Chunks {
			g.Go(func() error {
				b, err := r.chunk(gctx, h)
				if err != nil {
					return err
				}
				if want := min(cs, in.Size-int64(i)*cs); int64(len(b)) != want {
					return fmt.Errorf("store %s: chunk %s of inode %d: %w: %d bytes, want %d", r.s.url, h, in.Ino, ErrCorrupt, len(b), want)
				}
				data[i] = b
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		for i, b := range data {
			if err := put(memfs.WriteRecord{Ino: ino, Off: int64(i) * cs, Data: b}); err != nil {
				return err
			}
		}
		return nil
	}
	f, err := memfs.Restore(opts, img)
	if err != nil {
		return nil, fmt.Errorf("store %s: workspace %q checkpoint %d: %s: %w", r.s.url, r.Head.Workspace, r.Ref.Seq, prefix, err)
	}
	return f, nil
}

// LazyView is [Resumed.LazyTree] with the default options, to read (a
// running workspace mirrors its mounts to it: store.resume).
func (r *Resumed) LazyView(prefix string) (mounts.FS, error) {
	f, err := r.LazyTree(prefix, memfs.Options{})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// image is t's inodes and entries for memfs.Restore, without content.
func (r *Resumed) image(t *Tree) memfs.Image {
	img := memfs.Image{}
	for _, in := range t.Inodes {
		img.Inodes = append(img.Inodes, memfs.InodeRecord{
			Ino: in.Ino, Mode: in.Mode, Uid: in.Uid, Gid: in.Gid, Size: in.Size,
			Atime: in.Atime, Mtime: in.Mtime, Ctime: in.Ctime, Target: in.Target, Rdev: in.Rdev, Xattrs: in.Xattrs,
		})
	}
	for _, e := range t.Entries {
		img.Entries = append(img.Entries, memfs.EntryRecord{Dir: e.Dir, Name: e.Name, Ino: e.Ino})
	}
	return img
}
