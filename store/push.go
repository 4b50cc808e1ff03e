package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
)

// PushOptions tune a push.
type PushOptions struct {
	// Keep bounds the checkpoints the head keeps (the oldest go first;
	// their data is garbage for GC once nothing else names it); 0 keeps
	// them all.
	Keep int
}

// PushResult says what a push did.
type PushResult struct {
	Workspace string `json:"workspace"`
	// Ref is the checkpoint in the store (Seq: NAME@SEQ).
	Ref Ref `json:"ref"`
	// Files counts the regular files the checkpoint holds, Read those
	// whose content was read (new or changed since the checkpoint
	// pushed before; the others' chunks are the previous manifest's).
	Files int `json:"files"`
	Read  int `json:"read"`
	// Changed is the size of the content the previous checkpoint did
	// not have (the chunks it did not name); Sent counts every byte
	// sent: the chunks the store lacked, the manifest and the head.
	Changed int64 `json:"changed_bytes"`
	Sent    int64 `json:"sent_bytes"`
	// Chunks counts the chunks the checkpoint names; Uploaded those the
	// store did not have.
	Chunks   int `json:"chunks"`
	Uploaded int `json:"uploaded"`
}

// upperViewer is a mount whose checkpoints are those of an upper layer
// over an immutable lower (overlayfs: a writable git mount).
type upperViewer interface {
	UpperCheckpointView(ctx context.Context, id string) (mounts.FS, error)
}

// Push sends checkpoint id of ws to the store as the workspace's newest
// checkpoint: the chunks the store lacks, in parallel, then the manifest,
// then the head, by compare-and-swap. A memory mount is sent whole; a
// writable git mount as its upper layer (what differs from its commit)
// and its commit. Content the previous checkpoint named is neither read
// nor sent again, nor is a large chunk the store has (a HEAD, then a
// create with If-None-Match); the small ones go into packs (see the
// package doc). A failed push leaves the head as it was; pushing again
// completes it.
func (ss *Session) Push(ctx context.Context, ws *checkpoint.Workspace, id string, opts PushOptions) (PushResult, error) {
	// Pushes run one at a time; the session's state is locked only
	// briefly, so the lease is renewed during a long push.
	ss.pushMu.Lock()
	defer ss.pushMu.Unlock()
	ss.mu.Lock()
	fenced, head, headTag := ss.fenced, ss.head, ss.headTag
	ss.mu.Unlock()
	s := ss.s
	res := PushResult{Workspace: ss.name}
	if fenced != nil {
		return res, fenced
	}
	info, err := ws.Get(id)
	if err != nil {
		return res, err
	}
	// A collection waits for this push (locks.go).
	lk, err := s.lockPush(ctx, ss.holder)
	if err != nil {
		return res, err
	}
	defer s.unlock(lk)

	var prev *Manifest
	m := &Manifest{Workspace: ss.name, Checkpoint: info.ID, Name: info.Name, Time: info.Time, ChunkSize: s.cfg.ChunkSize}
	if head != nil {
		if r, ok := head.Latest(); ok {
			if ss.pushed.hash == r.Manifest {
				prev = ss.pushed.m
			} else if prev, err = s.Manifest(ctx, r.Manifest); err != nil {
				return res, err
			}
			m.Parent = r.Manifest
			if prev.ChunkSize != m.ChunkSize {
				prev = nil // cut otherwise: nothing to reuse by inode
			}
		}
	}
	known, loc := map[string]struct{}{}, map[string]packed{}
	if prev != nil {
		known, loc = prev.chunks(), prev.packIndex()
	}

	up := &uploader{s: s, known: known, queued: map[string]struct{}{}}
	up.packs = &packer{u: up, loc: map[string]packed{}}
	up.g, up.gctx = errgroup.WithContext(ctx)
	up.g.SetLimit(s.cfg.Parallel)
	for _, mnt := range ws.Mounts() {
		e := MountManifest{Prefix: mnt.Prefix, Type: mnt.Type, Source: mnt.Source, Commit: mnt.Commit}
		switch {
		case mnt.Tree != nil:
			e.Coverage = string(checkpoint.Frozen)
		case mnt.Immutable:
			e.Coverage = string(checkpoint.Immutable)
		default:
			e.Coverage = string(checkpoint.NotCovered)
		}
		if mnt.Tree != nil {
			var view mounts.FS
			if u, ok := mnt.Tree.(upperViewer); ok {
				e.Layer = LayerUpper
				view, err = u.UpperCheckpointView(ctx, id)
			} else if mnt.Export != nil {
				// A writable git mount whose upper this build cannot
				// see alone: never its merged tree (every file of the
				// commit).
				up.g.Wait()
				return res, fmt.Errorf("push of %s: the mount's upper layer cannot be read alone", mnt.Prefix)
			} else {
				e.Layer = LayerMemory
				view, err = mnt.Tree.CheckpointView(ctx, id)
			}
			if err != nil {
				up.g.Wait()
				return res, fmt.Errorf("push of %s: %w", mnt.Prefix, err)
			}
			var old map[uint64]*Inode
			if prev != nil {
				old = prev.inodes(mnt.Prefix, e.Layer)
			}
			tree, err := up.walk(ctx, view, old, &res)
			if err != nil {
				if werr := up.g.Wait(); werr != nil {
					err = werr // the cause, not the cancellation it made
				}
				return res, fmt.Errorf("push of %s: %w", mnt.Prefix, err)
			}
			e.Tree = tree
		}
		m.Mounts = append(m.Mounts, e)
	}
	up.packs.flush()
	if err := up.g.Wait(); err != nil {
		return res, err
	}
	maps.Copy(loc, up.packs.loc)
	m.setPacks(loc)
	res.Chunks = len(m.chunks())
	res.Uploaded = int(up.uploaded.Load())
	res.Sent += up.sent.Load()
	res.Changed = up.changed.Load()
	s.hook("push:chunks")
	if s.cfg.Now().After(lk.expires.Add(-lockTTL / 3)) {
		// A collection may no longer see this push's lock: it must not
		// name chunks a collection could have taken.
		return res, fmt.Errorf("store %s: push of %q took longer than %v: %w; push again", s.url, ss.name, 2*lockTTL/3, ErrBusy)
	}

	// Every chunk is there: the manifest, then the head.
	mh, n, err := s.putManifest(ctx, m)
	if err != nil {
		return res, err
	}
	res.Sent += n
	s.hook("push:manifest")
	h := &Head{Workspace: ss.name}
	if head != nil {
		c := *head
		c.Checkpoints = append([]Ref(nil), c.Checkpoints...)
		h = &c
	}
	h.Writer = ss.holder
	seq := 1
	if r, ok := h.Latest(); ok {
		seq = r.Seq + 1
	}
	ref := Ref{Seq: seq, ID: info.ID, Name: info.Name, Time: info.Time, Manifest: mh}
	h.Checkpoints = append(h.Checkpoints, ref)
	if opts.Keep > 0 && len(h.Checkpoints) > opts.Keep {
		h.Checkpoints = h.Checkpoints[len(h.Checkpoints)-opts.Keep:]
	}
	tag, n, err := s.casHead(ctx, h, headTag)
	if isConflict(err) {
		cur, _, rerr := s.readHead(ctx, ss.name)
		switch {
		case rerr == nil && cur.Writer != ss.holder:
			return res, ss.fenceLocking("the head names " + cur.Writer + " as its writer")
		case errors.Is(rerr, ErrNotFound) && head != nil:
			return res, ss.fenceLocking("the workspace was deleted")
		}
		return res, fmt.Errorf("store %s: head of %q: %w", s.url, ss.name, err)
	}
	if err != nil {
		return res, err
	}
	res.Sent += n
	ss.mu.Lock()
	ss.head, ss.headTag = h, tag
	ss.mu.Unlock()
	ss.pushed.hash, ss.pushed.m = mh, m
	res.Ref = ref
	return res, nil
}

// inodes are prefix's inodes of m by number, for the layer.
func (m *Manifest) inodes(prefix, layer string) map[uint64]*Inode {
	for _, mm := range m.Mounts {
		if mm.Prefix == prefix && mm.Layer == layer && mm.Tree != nil {
			out := make(map[uint64]*Inode, len(mm.Tree.Inodes))
			for i := range mm.Tree.Inodes {
				out[mm.Tree.Inodes[i].Ino] = &mm.Tree.Inodes[i]
			}
			return out
		}
	}
	return nil
}

// uploader sends the chunks a push needs, in parallel and bounded.
type uploader struct {
	s     *Store
	g     *errgroup.Group
	gctx  context.Context
	known map[string]struct{} // named by the previous checkpoint
	packs *packer             // the small chunks

	mu       sync.Mutex
	queued   map[string]struct{}
	sent     atomic.Int64
	changed  atomic.Int64
	uploaded atomic.Int64
}

// chunk makes sure chunk h (data) is in the store: a small one in a pack
// of this push, a larger one as an object (a HEAD first: one another push
// sent is not sent again).
func (u *uploader) chunk(h string, data []byte) {
	if _, ok := u.known[h]; ok {
		return
	}
	u.mu.Lock()
	if _, ok := u.queued[h]; ok {
		u.mu.Unlock()
		return
	}
	u.queued[h] = struct{}{}
	u.mu.Unlock()
	u.changed.Add(int64(len(data)))
	if int64(len(data)) < u.s.cfg.PackBelow {
		u.packs.add(h, data)
		return
	}
	u.g.Go(func() error {
		ok, _, err := u.s.exists(u.gctx, u.s.key(chunkKeyPart(h)))
		if err != nil || ok {
			return err
		}
		n, err := u.s.putChunk(u.gctx, h, data)
		if n > 0 {
			u.sent.Add(n)
			u.uploaded.Add(1)
		}
		return err
	})
}

// walk records the tree of view (a memory tree: its inode numbers are its
// own), queueing the upload of the content old (the previous checkpoint's
// inodes of the mount) does not have.
func (u *uploader) walk(ctx context.Context, view mounts.FS, old map[uint64]*Inode, res *PushResult) (*Tree, error) {
	t := &Tree{}
	seen := map[uint64]bool{}
	var visit func(dir uint64, name string) error
	record := func(name string, a mounts.Attr) error {
		in := Inode{Ino: a.Ino, Mode: a.Mode, Uid: a.Uid, Gid: a.Gid, Size: a.Size, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime, Rdev: a.Rdev}
		if a.Mode.Type() == fs.ModeSymlink {
			target, err := view.ReadLink(ctx, name)
			if err != nil {
				return err
			}
			in.Target, in.Size = target, 0
		}
		if t := a.Mode.Type(); t == 0 || t == fs.ModeDir {
			names, err := mounts.ListXattr(ctx, view, name)
			if err != nil && !errors.Is(err, mounts.ErrNotSupported) {
				return err
			}
			for _, x := range names {
				v, err := mounts.GetXattr(ctx, view, name, x)
				if err != nil {
					return err
				}
				if in.Xattrs == nil {
					in.Xattrs = map[string][]byte{}
				}
				in.Xattrs[x] = v
			}
		}
		if a.Mode.Type() == 0 {
			res.Files++
			if o := old[a.Ino]; o != nil && o.Mode == in.Mode && o.Size == in.Size && o.Mtime.Equal(in.Mtime) && o.Ctime.Equal(in.Ctime) &&
				len(o.Chunks) == numChunks(in.Size, u.s.cfg.ChunkSize) {
				in.Chunks = o.Chunks // unchanged since the checkpoint before
			} else if in.Size > 0 {
				res.Read++
				hs, err := u.content(ctx, view, name, a.Size)
				if err != nil {
					return err
				}
				in.Chunks = hs
			}
		}
		t.Inodes = append(t.Inodes, in)
		return nil
	}
	visit = func(dir uint64, name string) error {
		ents, err := view.ReadDir(ctx, name)
		if err != nil {
			return err
		}
		for _, e := range ents {
			child := path.Join(name, e.Name)
			a, err := view.Stat(ctx, child)
			if err != nil {
				return err
			}
			if a.Ino == 0 {
				return fmt.Errorf("%s: no inode number", child)
			}
			t.Entries = append(t.Entries, Entry{Dir: dir, Name: e.Name, Ino: a.Ino})
			if seen[a.Ino] {
				continue // a hard link
			}
			seen[a.Ino] = true
			if err := record(child, a); err != nil {
				return err
			}
			if a.Mode.IsDir() {
				if err := visit(a.Ino, child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	root, err := view.Stat(ctx, ".")
	if err != nil {
		return nil, err
	}
	if root.Ino != 1 {
		return nil, fmt.Errorf("the tree's root is inode %d, not 1: not a memory tree", root.Ino)
	}
	seen[1] = true
	if err := record(".", root); err != nil {
		return nil, err
	}
	if err := visit(1, "."); err != nil {
		return nil, err
	}
	return t, u.gctx.Err()
}

func numChunks(size, chunk int64) int {
	return int((size + chunk - 1) / chunk)
}

// content reads name (size bytes) in chunks and queues each.
func (u *uploader) content(ctx context.Context, view mounts.FS, name string, size int64) ([]string, error) {
	f, err := view.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cs := u.s.cfg.ChunkSize
	var out []string
	for off := int64(0); off < size; off += cs {
		buf := make([]byte, min(cs, size-off))
		n, err := f.ReadAt(buf, off)
		if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
			return nil, fmt.Errorf("%s at %d: %w", name, off, err)
		}
		h := sum(buf)
		out = append(out, h)
		u.chunk(h, buf)
		if err := u.gctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
