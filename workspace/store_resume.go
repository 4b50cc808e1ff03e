package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/mounts/writablegit"
	"github.com/vfsmount/vfsmount/store"
)

// store.resume: a checkpoint of the store brought into a running
// workspace, as --resume brings one into a new daemon. Each writable
// layer the checkpoint holds is made what it was then: its tree is read
// from the store lazily (content only for the files that differ) and the
// live mount is mirrored to it through its own verbs, as the operator, so
// the journal, a persisted store, git's fsmonitor and the kernel face see
// every change as any other. Resuming another workspace of the store
// moves this daemon's writing to it: what this one had not pushed is
// pushed first, then the other's lease is taken (from its holder only
// with take_over) and this one's let go.

var _ jsonrpc.StoreResumer = (*Checkpoints)(nil)

// dotGitConfig is what NewWritableGit writes at every start (this run's
// fsmonitor hook): a resume keeps the live one.
const dotGitConfig = dotGit + "/vfsmount.config"

// resumed is one writable layer to bring back: the live mount and the
// tree it is to become.
type resumed struct {
	prefix string
	live   mounts.FS
	want   mounts.FS
}

// StoreResume brings checkpoint p.Ref of the workspace's store into the
// workspace, and pushes to its workspace from then on.
func (c *Checkpoints) StoreResume(ctx context.Context, p jsonrpc.StoreResumeParams) (jsonrpc.StoreResumeResult, error) {
	var res jsonrpc.StoreResumeResult
	if c.store == nil {
		return res, fmt.Errorf("%w: no store", jsonrpc.ErrInvalidParams)
	}
	s := c.store
	sess, _ := s.current()
	st := sess.Store()
	ref := p.Ref
	if strings.HasPrefix(ref, "s3://") {
		base, name, ckpt, err := store.ParseWorkspaceURL(ref)
		if err != nil {
			return res, fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
		}
		if base != st.URL() {
			return res, fmt.Errorf("%w: %s is in the store %s; this workspace's is %s", jsonrpc.ErrInvalidParams, ref, base, st.URL())
		}
		ref = name
		if ckpt != "" {
			ref += "@" + ckpt
		}
	}
	name, _, err := store.SplitRef(ref)
	if err != nil {
		return res, fmt.Errorf("%w: store %s: %v", jsonrpc.ErrInvalidParams, st.URL(), err)
	}
	r, err := st.Resume(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
	}
	if err != nil {
		return res, err
	}
	plan, left, err := c.resumePlan(ctx, r)
	if err != nil {
		return res, err
	}

	s.mu.Lock() // no push meanwhile
	defer s.mu.Unlock()
	if name != sess.Name() || sess.Fenced() != nil {
		// Another workspace (or this one again, once fenced): its
		// lease, taken as --resume takes it.
		if sess.Fenced() == nil && s.changed(c) {
			if _, err := s.pushLocked(ctx, c, "", "before resume"); err != nil {
				return res, fmt.Errorf("store.resume of %s: pushing what %s had not pushed first: %w", ref, sess.Name(), err)
			}
		}
		next, err := st.Acquire(ctx, name, store.AcquireOptions{Holder: sess.Holder(), TakeOver: p.TakeOver})
		if err != nil {
			return res, err
		}
		next.KeepRenewing()
		s.stMu.Lock()
		s.sess, s.url = next, st.URL()+"/"+name
		s.st = storeState{}
		s.stMu.Unlock()
		if err := sess.Release(ctx); err != nil {
			s.o.Logger.Warn("store: letting the lease of the workspace resumed from go failed; it ends by itself", "workspace", sess.Name(), "err", err)
		}
		s.o.Logger.Info("store: this daemon now writes another workspace", "from", sess.Name(), "to", name)
	}

	opCtx := asOperator(ctx)
	var errs []error
	for _, rs := range plan {
		changed, err := mirror(opCtx, rs.live, rs.want, func(n string) bool { return n == dotGitConfig })
		paths := make([]string, len(changed))
		for i, n := range changed {
			paths[i] = mounts.Join(rs.prefix, n)
		}
		c.notify(namesOf(paths)...)
		res.Changed = append(res.Changed, paths...)
		if c.audit != nil {
			for _, p := range paths {
				c.audit.Change(opCtx, "resume", p, nil)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("store.resume of %s: %s: %w", ref, rs.prefix, err))
			continue
		}
		res.Restored = append(res.Restored, rs.prefix)
	}
	slices.Sort(res.Changed)
	s.stMu.Lock()
	s.st.resumed = r.Ref
	s.stMu.Unlock()
	_, url := s.current()
	res.URL = fmt.Sprintf("%s@%d", url, r.Ref.Seq)
	res.Workspace, res.Seq, res.ID, res.Time, res.Left = name, r.Ref.Seq, r.Ref.ID, r.Ref.Time, left
	if res.Restored == nil {
		res.Restored = []string{}
	}
	if res.Changed == nil {
		res.Changed = []string{}
	}
	s.o.Logger.Info("store: resumed into the running workspace", "checkpoint", res.URL, "changed", len(res.Changed), "err", errors.Join(errs...))
	return res, errors.Join(errs...)
}

// namesOf are workspace paths as the kernel face names them.
func namesOf(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = mounts.NameOf(p)
	}
	return out
}

// resumePlan pairs each writable layer r holds with the workspace's mount
// there, and lists the workspace's writable mounts r does not hold (left
// as they are). A layer this workspace lacks, or has of another kind or
// over another commit, is bad input: nothing is changed.
func (c *Checkpoints) resumePlan(ctx context.Context, r *store.Resumed) (plan []resumed, left []string, _ error) {
	live := map[string]checkpoint.Mount{}
	for _, m := range c.ws.Mounts() {
		if m.Tree != nil {
			live[m.Prefix] = m
		}
	}
	held := map[string]bool{}
	for _, mm := range r.Manifest.Mounts {
		if mm.Tree == nil {
			continue
		}
		held[mm.Prefix] = true
		m, ok := live[mm.Prefix]
		if !ok {
			return nil, nil, fmt.Errorf("%w: the checkpoint holds the writable mount %s (%s), which this workspace lacks", jsonrpc.ErrInvalidParams, mm.Prefix, mm.Source)
		}
		if err := r.CheckCommit(mm.Prefix, m.Commit); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
		}
		tree, err := r.LazyView(mm.Prefix)
		if err != nil {
			return nil, nil, err
		}
		rs := resumed{prefix: mm.Prefix, live: m.Tree}
		g, isGit := m.Tree.(interface{ Git() *gitfs.FS })
		switch {
		case mm.Layer == store.LayerMemory && m.Export == nil:
			rs.want = tree
		case mm.Layer == store.LayerUpper && isGit:
			// The checkpoint's upper over the same commit: the tree the
			// live overlay is to show.
			ov, err := writablegit.New(ctx, g.Git(), tree, overlayfs.Options{Private: []string{dotGit}})
			if err != nil {
				return nil, nil, fmt.Errorf("store.resume: %s: %w", mm.Prefix, err)
			}
			rs.want = ov
		default:
			return nil, nil, fmt.Errorf("%w: the checkpoint's %s is a %s layer (%s); this workspace's mount there is %s", jsonrpc.ErrInvalidParams, mm.Prefix, mm.Layer, mm.Source, m.Source)
		}
		plan = append(plan, rs)
	}
	for p := range live {
		if !held[p] {
			left = append(left, p)
		}
	}
	slices.Sort(left)
	return plan, left, nil
}

// mirror makes the tree dst what src is, through dst's verbs: the names
// src lacks removed; a file written anew when its type, size or
// modification time differ (the quick check rsync makes), a symlink when
// its target does; hard links of src linked alike in dst; modes, owners,
// extended attributes and times as src has them (an access time only with
// a change: a read moves it). Names skip accepts are
// left as they are. It returns the names it changed, in the order it
// changed them.
func mirror(ctx context.Context, dst, src mounts.FS, skip func(name string) bool) ([]string, error) {
	m := &mirrorer{ctx: ctx, dst: dst, src: src, skip: skip, links: map[uint64]string{}}
	err := m.dir(".")
	if err == nil {
		var a mounts.Attr
		if a, err = src.Stat(ctx, "."); err == nil {
			err = m.attrs(".", a, false)
		}
	}
	return m.changed, err
}

type mirrorer struct {
	ctx      context.Context
	dst, src mounts.FS
	skip     func(string) bool
	links    map[uint64]string // a linked inode of src: the dst name made for it first
	changed  []string
}

func (m *mirrorer) change(name string) {
	if len(m.changed) == 0 || m.changed[len(m.changed)-1] != name {
		m.changed = append(m.changed, name)
	}
}

func (m *mirrorer) dir(name string) error {
	sEnts, sAttrs, err := mounts.StatDir(m.ctx, m.src, name)
	if err != nil {
		return err
	}
	dEnts, dAttrs, err := mounts.StatDir(m.ctx, m.dst, name)
	if err != nil {
		return err
	}
	have := make(map[string]mounts.Attr, len(dEnts))
	for i, e := range dEnts {
		have[e.Name] = dAttrs[i]
	}
	want := make(map[string]bool, len(sEnts))
	for _, e := range sEnts {
		want[e.Name] = true
	}
	for _, e := range dEnts {
		child := mounts.Join(name, e.Name)
		if !want[e.Name] && !m.skip(child) {
			if err := mounts.RemoveAll(m.ctx, m.dst, child); err != nil {
				return err
			}
			m.change(child)
		}
	}
	for i, e := range sEnts {
		child := mounts.Join(name, e.Name)
		if m.skip(child) {
			continue
		}
		if err := m.entry(child, sAttrs[i], have); err != nil {
			return err
		}
	}
	return nil
}

// entry makes child (of type and attributes sa in src) in dst; have are
// the attributes of dst's entries in its directory.
func (m *mirrorer) entry(child string, sa mounts.Attr, have map[string]mounts.Attr) error {
	da, ok := have[child[strings.LastIndexByte(child, '/')+1:]]
	remove := func() error {
		if !ok {
			return nil
		}
		ok = false
		m.change(child)
		return mounts.RemoveAll(m.ctx, m.dst, child)
	}
	if ok && da.Mode.Type() != sa.Mode.Type() {
		if err := remove(); err != nil {
			return err
		}
	}
	switch t := sa.Mode.Type(); {
	case t == fs.ModeDir:
		if !ok {
			if err := mounts.Mkdir(m.ctx, m.dst, child, sa.Mode.Perm()|0o700); err != nil {
				return err
			}
			m.change(child)
		}
		if err := m.dir(child); err != nil {
			return err
		}
	case t == fs.ModeSymlink:
		target, err := m.src.ReadLink(m.ctx, child)
		if err != nil {
			return err
		}
		if ok {
			if cur, err := m.dst.ReadLink(m.ctx, child); err != nil || cur != target {
				if err := remove(); err != nil {
					return err
				}
			}
		}
		if !ok {
			if err := mounts.Symlink(m.ctx, m.dst, target, child); err != nil {
				return err
			}
			m.change(child)
		}
		return m.attrs(child, sa, true)
	case t == 0:
		if sa.Nlink > 1 {
			if first, seen := m.links[sa.Ino]; seen {
				if ok {
					fa, err := m.dst.Stat(m.ctx, first)
					if err == nil && fa.Ino == da.Ino {
						return nil // linked already
					}
					if err := remove(); err != nil {
						return err
					}
				}
				m.change(child)
				return mounts.Link(m.ctx, m.dst, first, child)
			}
			m.links[sa.Ino] = child
		}
		if ok && (da.Size != sa.Size || !da.Mtime.Equal(sa.Mtime) || da.Nlink > 1 && sa.Nlink <= 1) {
			// A dst file linked elsewhere is not written through: the
			// other name would change too.
			if err := remove(); err != nil {
				return err
			}
		}
		if !ok {
			if err := m.copy(child, sa); err != nil {
				return err
			}
			m.change(child)
		}
	default:
		if ok && da.Rdev != sa.Rdev {
			if err := remove(); err != nil {
				return err
			}
		}
		if !ok {
			if err := mounts.Mknod(m.ctx, m.dst, child, sa.Mode, sa.Rdev); err != nil {
				return err
			}
			m.change(child)
		}
	}
	return m.attrs(child, sa, false)
}

// copy writes src's regular file name into dst, created.
func (m *mirrorer) copy(name string, sa mounts.Attr) error {
	in, err := m.src.Open(m.ctx, name)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := mounts.OpenFile(m.ctx, m.dst, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, sa.Mode.Perm())
	if err != nil {
		return err
	}
	w, ok := f.(mounts.WritableFile)
	if !ok {
		f.Close()
		return mounts.PathErr("resume", name, mounts.ErrReadOnly)
	}
	buf := make([]byte, min(sa.Size, 1<<20))
	for off := int64(0); off < sa.Size; {
		n, err := in.ReadAt(buf[:min(int64(len(buf)), sa.Size-off)], off)
		if n > 0 {
			if _, werr := w.WriteAt(buf[:n], off); werr != nil {
				f.Close()
				return werr
			}
			off += int64(n)
		}
		if err == io.EOF && off < sa.Size {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			f.Close()
			return fmt.Errorf("%s at %d: %w", name, off, err)
		}
	}
	return f.Close()
}

// attrs gives dst's name src's mode, owner, extended attributes and times
// where they differ (a symlink: its owner and extended attributes only).
func (m *mirrorer) attrs(name string, sa mounts.Attr, link bool) error {
	da, err := m.dst.Stat(m.ctx, name)
	if err != nil {
		return err
	}
	touched := false
	if !link && da.Mode != sa.Mode {
		if err := mounts.Chmod(m.ctx, m.dst, name, sa.Mode); err != nil {
			return err
		}
		touched = true
	}
	if da.Uid != sa.Uid || da.Gid != sa.Gid {
		if err := mounts.Chown(m.ctx, m.dst, name, int(sa.Uid), int(sa.Gid)); err != nil && !errors.Is(err, mounts.ErrNotSupported) {
			return err
		}
		touched = true
	}
	if x, err := m.xattrs(name); err != nil {
		return err
	} else if x {
		touched = true
	}
	// An access time alone is no change (a read moves it); a name
	// changed gets src's with its modification time.
	if !link && (!da.Mtime.Equal(sa.Mtime) || touched) {
		atime := sa.Atime
		if atime.IsZero() {
			atime = sa.Mtime
		}
		if err := mounts.Chtimes(m.ctx, m.dst, name, atime, sa.Mtime); err != nil {
			return err
		}
		touched = true
	}
	if touched {
		m.change(name)
	}
	return nil
}

// xattrs gives dst's name src's extended attributes; true when it changed
// any.
func (m *mirrorer) xattrs(name string) (bool, error) {
	want, err := xattrsOf(m.ctx, m.src, name)
	if err != nil {
		return false, err
	}
	have, err := xattrsOf(m.ctx, m.dst, name)
	if err != nil {
		return false, err
	}
	changed := false
	for k := range have {
		if _, ok := want[k]; !ok {
			if err := mounts.RemoveXattr(m.ctx, m.dst, name, k); err != nil {
				return changed, err
			}
			changed = true
		}
	}
	for k, v := range want {
		if cur, ok := have[k]; !ok || string(cur) != string(v) {
			if err := mounts.SetXattr(m.ctx, m.dst, name, k, v, 0); err != nil {
				return changed, err
			}
			changed = true
		}
	}
	return changed, nil
}

// xattrsOf are name's extended attributes in fsys; none where it has no
// such verb.
func xattrsOf(ctx context.Context, fsys mounts.FS, name string) (map[string][]byte, error) {
	names, err := mounts.ListXattr(ctx, fsys, name)
	if errors.Is(err, mounts.ErrNotSupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(names))
	for _, k := range names {
		v, err := mounts.GetXattr(ctx, fsys, name, k)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}
