package remotefs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// Write-behind. A program's change through the kernel face whose outcome
// the cache can tell (a file created in a directory it lists, whose
// name it knows to be free; a file of one link removed; a mode, owner or
// times set) is answered here at once and posted: sent without
// waiting for the peer's answer. The peer applies changes in the order
// sent (its change queue), so what follows sees them there; here, a
// request that is not itself a change waits until every change posted
// is answered (barrier), so that what a program reads next is what it
// made. The answer brings what the names are once the change was applied
// (wire.Response.After), which the cache then keeps; until it comes, the
// change stream's reports of those names are the daemon's own change
// coming back and are not taken.
//
// A posted change the peer refuses (a name someone took meanwhile, a
// full disk) is an error for the program at its next call on the file,
// at fsync of the file or of any directory of the mount, and in the log
// at once; the names are then what the answer says, and the peer refuses
// the changes of a name whose create failed that were sent before the
// daemon knew (wire.Request.Posted): a lock file another machine made a
// moment before is neither renamed nor removed. fsync of a directory
// waits for every change posted before it: it is the barrier a program
// has, since syncfs(2) reaches no FUSE server. A change asked through the
// tool face, or any the cache cannot tell, is sent and waited for as
// before.

// inoLocal marks the inode numbers given here to files created before
// the peer said which they are: bit 55, within the 56 bits the union
// keeps of a mount's numbers. Once the peer's number is known it is an
// alias of the local one (attrOf), so a file keeps one number for the
// life of the mount.
const inoLocal = 1 << 55

// behind is the state of write-behind.
type behind struct {
	mu    sync.Mutex
	next  uint64            // the last local number given
	alias map[uint64]uint64 // the peer's number of a file created here → its local one
	pend  map[string]int    // name → posted changes (and writes) that touch it, unanswered
	// fresh are the local numbers of files created here, open, with no
	// extended attribute set since: none has security.capability, which
	// the kernel asks before each write. (alias keeps an entry for
	// every file created here in the life of the mount: its number.)
	fresh map[uint64]bool
	// own are the states the answers to changes posted here brought,
	// by name: the change stream reporting a name in its own state is
	// that change coming back, late.
	own   map[string]mounts.Attr
	errs  []deferred // errors of posted changes not yet reported
	owner *wire.Owner
}

// Counts is how many requests a remote mount sent: Waited, answered
// before the call that sent them returned; Posted, changes answered here
// and sent without waiting (the writes of files aside).
type Counts struct{ Waited, Posted int64 }

// Counts returns the mount's request counts since it was opened.
func (f *ReadOnlyFS) Counts() Counts {
	return Counts{Waited: f.requests.Load(), Posted: f.postedN.Load()}
}

// attrOf converts attributes from the wire, with the local number of a
// file created here.
func (f *ReadOnlyFS) attrOf(wa wire.Attr) mounts.Attr {
	f.bh.mu.Lock()
	defer f.bh.mu.Unlock()
	return f.attrOfLocked(wa)
}

func (f *ReadOnlyFS) attrOfLocked(wa wire.Attr) mounts.Attr {
	a := wa.Mounts()
	if l, ok := f.bh.alias[a.Ino]; ok && a.Ino != 0 {
		a.Ino = l
	}
	return a
}

// maxOwn bounds behind.own.
const maxOwn = 4096

// ownStateLocked reports whether a is the state the answer to a change
// posted here gave name, and forgets it if not: a report of name in it
// is that change coming back. f.bh.mu is held.
func (f *ReadOnlyFS) ownStateLocked(name string, a mounts.Attr) bool {
	own, ok := f.bh.own[name]
	same := ok && sameAttr(own, a, true)
	if ok && !same {
		delete(f.bh.own, name)
	}
	return same
}

// pending reports whether a posted change or write of name is
// unanswered: the change stream's reports of the name are then this
// daemon's own changes coming back.
func (f *ReadOnlyFS) pending(name string) bool {
	f.bh.mu.Lock()
	defer f.bh.mu.Unlock()
	return f.bh.pend[name] > 0
}

// postable returns the peer's user when a change asked in ctx may be
// posted: through the kernel face, with the change stream up.
func (f *ReadOnlyFS) postable(ctx context.Context) *wire.Owner {
	c, ok := mounts.CallerFrom(ctx)
	if !ok || c.Face != mounts.FaceKernel || !f.cache.watched() {
		return nil
	}
	f.bh.mu.Lock()
	defer f.bh.mu.Unlock()
	return f.bh.owner
}

// mayChangeIn reports whether the peer's user may add and remove names in
// a directory with attributes dir, by its mode bits alone (as its owner,
// or as root).
func mayChangeIn(o *wire.Owner, dir mounts.Attr) bool {
	if !dir.IsDir() {
		return false
	}
	return o.Uid == 0 || dir.Uid == o.Uid && dir.Mode.Perm()&0o300 == 0o300
}

// post sends req (a change) without waiting for its answer, on session
// s. Its names and their parents (wire.Touched) are pending until it is
// answered; apply,
// if not nil, keeps in the cache what the change makes of them (it must
// not take f.bh.mu); done, if not nil, gets the answer on the session's
// reader (the peer's error, or the link's), before the names' states are
// taken.
func (f *ReadOnlyFS) post(s *session, req *wire.Request, apply func(), done func(*wire.Response, error)) {
	names := wire.Touched(req)
	// What the change makes of the names is kept, and the names counted
	// pending, at once: an answer settled meanwhile does not undo it.
	f.bh.mu.Lock()
	if apply != nil {
		apply()
	}
	for _, n := range names {
		f.bh.pend[n]++
	}
	f.bh.mu.Unlock()
	f.wmu.Lock()
	f.posted++
	f.wmu.Unlock()
	f.postedN.Add(1)
	op, name := req.Op.String(), req.Name
	fn := func(resp *wire.Response, err error) {
		switch {
		case err != nil:
			resp = nil
			err = mounts.PathErr(op, name, &linkError{what: "the link to " + f.opts.Source + " was lost before the change was confirmed", cause: err})
		case resp.Err != nil:
			err = resp.Err.Err(op, name)
		}
		if done != nil {
			done(resp, err)
		}
		if err != nil {
			f.deferError(name, err)
		}
		f.settle(req, names, resp)
	}
	if err := s.startPosted(req, fn); err != nil {
		fn(nil, err)
	}
}

// settle accounts for a posted change answered (resp nil: the session
// died, and the cache with it): see settleNames; the barrier waits for
// one change fewer.
func (f *ReadOnlyFS) settle(req *wire.Request, names []string, resp *wire.Response) {
	f.settleNames(req, names, resp)
	f.wmu.Lock()
	if f.posted--; f.posted == 0 && f.writes == 0 {
		f.wcond.Broadcast()
	}
	f.wmu.Unlock()
}

// settleNames accounts for a posted request answered, a change or a
// write (resp nil: it failed, or the session died): the names it kept
// pending are pending once fewer, the states its answer brings are kept
// for those no later request posted touches, and the kernel face is told
// of those that differ from what it was answered.
func (f *ReadOnlyFS) settleNames(req *wire.Request, names []string, resp *wire.Response) {
	// The kernel face is told of the names changed, not of their
	// directories: telling a name drops what it holds of its directory
	// too, and telling a directory would drop every entry below it.
	primary := func(n string) bool { return n == req.Name || n == req.Name2 }
	var changed []string
	f.bh.mu.Lock()
	for _, n := range names {
		if f.bh.pend[n]--; f.bh.pend[n] <= 0 {
			delete(f.bh.pend, n)
		}
	}
	if resp != nil {
		// Under f.bh.mu: a change posted from now on counts from
		// these states.
		for _, ev := range resp.After {
			if f.bh.pend[ev.Name] > 0 {
				continue // a later change's answer will say
			}
			var kept bool
			switch ev.State {
			case wire.StateExists:
				a := f.attrOfLocked(ev.Attr)
				kept = f.cache.setState(ev.Name, false, a)
				if len(f.bh.own) >= maxOwn {
					clear(f.bh.own)
				}
				f.bh.own[ev.Name] = a
			case wire.StateMissing:
				kept = f.cache.setState(ev.Name, true, mounts.Attr{})
				delete(f.bh.own, ev.Name)
			default:
				f.cache.invalidate(ev.Name)
				kept = true
			}
			if kept && primary(ev.Name) {
				changed = append(changed, ev.Name)
			}
		}
	}
	f.bh.mu.Unlock()
	if len(changed) > 0 {
		f.notify(changed...)
	}
}

// deferred is the error of a change posted on name.
type deferred struct {
	name string
	err  error
}

// maxDeferred bounds the errors kept for fsync; the log has them all.
const maxDeferred = 1024

// deferError keeps the error of a change posted on name for the next
// fsync that reports it, and logs it now.
func (f *ReadOnlyFS) deferError(name string, err error) {
	f.log.Error("remote: a change made through the kernel, answered at once, failed on the remote machine",
		"source", f.opts.Source, "err", err)
	f.bh.mu.Lock()
	if len(f.bh.errs) < maxDeferred {
		f.bh.errs = append(f.bh.errs, deferred{name, err})
	}
	f.bh.mu.Unlock()
}

// takeDeferred returns, once, the first error of the changes posted on
// name, or on any name when all is set (the fsync of a directory: what
// syncfs would report), with how many others there were.
func (f *ReadOnlyFS) takeDeferred(name string, all ...bool) error {
	f.bh.mu.Lock()
	defer f.bh.mu.Unlock()
	var first error
	n := 0
	kept := f.bh.errs[:0]
	for _, d := range f.bh.errs {
		if d.name != name && len(all) == 0 {
			kept = append(kept, d)
			continue
		}
		if first == nil {
			first = d.err
		}
		n++
	}
	clear(f.bh.errs[len(kept):])
	f.bh.errs = kept
	switch {
	case first == nil:
		return nil
	case n > 1:
		return fmt.Errorf("a change made earlier failed on the remote machine (and %d more, in the log): %w", n-1, first)
	}
	return fmt.Errorf("a change made earlier failed on the remote machine: %w", first)
}

// newIno gives a local number to a file created here.
func (f *ReadOnlyFS) newIno() uint64 {
	f.bh.mu.Lock()
	defer f.bh.mu.Unlock()
	f.bh.next++
	ino := inoLocal | f.bh.next
	f.bh.fresh[ino] = true
	return ino
}

// aliasIno makes the peer's number of a file created here the local one.
func (f *ReadOnlyFS) aliasIno(remote, local uint64) {
	if remote == 0 || remote == local {
		return
	}
	f.bh.mu.Lock()
	f.bh.alias[remote] = local
	f.bh.mu.Unlock()
}

// freshFile reports whether a is a file created here with no extended
// attribute set since.
func (f *ReadOnlyFS) freshFile(a mounts.Attr) bool {
	f.bh.mu.Lock()
	defer f.bh.mu.Unlock()
	return f.bh.fresh[a.Ino]
}

// staled notes that a file's extended attributes may have been set.
func (f *ReadOnlyFS) staled(name string) {
	a, err, ok := f.cache.stat(name)
	f.bh.mu.Lock()
	defer f.bh.mu.Unlock()
	if ok && err == nil {
		delete(f.bh.fresh, a.Ino)
	} else {
		clear(f.bh.fresh)
	}
}

// parentFor returns the attributes of name's directory when a change of
// name may be posted: the change stream is up, the directory is known
// and the peer's user may add and remove names in it.
func (f *ReadOnlyFS) parentFor(o *wire.Owner, name string) (mounts.Attr, bool) {
	if name == "." {
		return mounts.Attr{}, false
	}
	parent, _ := mounts.Split(name)
	d, err, ok := f.cache.stat(parent)
	if !ok || err != nil || !mayChangeIn(o, d) {
		return mounts.Attr{}, false
	}
	return d, true
}

// touchDir is the directory's attributes once an entry was added (+1
// link for a directory) or removed (-1), now.
func touchDir(d mounts.Attr, links int) mounts.Attr {
	now := time.Now()
	d.Mtime, d.Ctime = now, now
	d.Nlink = uint32(int(d.Nlink) + links)
	return d
}

// created is the attributes of an entry the peer's user makes in a
// directory with attributes dir, with mode (type and permission bits).
func created(o *wire.Owner, dir mounts.Attr, mode fs.FileMode, ino uint64) mounts.Attr {
	now := time.Now()
	a := mounts.Attr{Mode: mode, Ino: ino, Nlink: 1, Uid: o.Uid, Gid: o.Gid, Atime: now, Mtime: now, Ctime: now}
	if dir.Mode&fs.ModeSetgid != 0 {
		a.Gid = dir.Gid
		if mode.IsDir() {
			a.Mode |= fs.ModeSetgid
		}
	}
	if mode.IsDir() {
		a.Nlink = 2
	}
	return a
}

// session returns the live session without waiting: posting needs one.
func (f *ReadOnlyFS) liveSession() *session {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sess
}

// postCreate creates name as OpenFile would, posted, when the cache says
// it is free in a directory the peer's user may change: the file is
// answered at once with the attributes the peer will give it.
func (f *FS) postCreate(ctx context.Context, name string, flag int, perm fs.FileMode) (*writableFile, bool) {
	o := f.postable(ctx)
	if o == nil || flag&os.O_CREATE == 0 || perm&^fs.ModePerm != 0 || !mounts.ValidPath(name) {
		return nil, false
	}
	if _, err, ok := f.cache.stat(name); !ok || !errors.Is(err, fs.ErrNotExist) || f.pending(name) {
		return nil, false
	}
	dir, ok := f.parentFor(o, name)
	if !ok {
		return nil, false
	}
	s := f.liveSession()
	if s == nil {
		return nil, false
	}
	a := created(o, dir, perm, f.newIno())
	parent, _ := mounts.Split(name)
	w := &writableFile{remoteFile: remoteFile{f: f.ReadOnlyFS, s: s, name: name, h: s.newHandle(), a: a, writable: true},
		local: a, posted: true}
	w.cond = sync.NewCond(&w.wmu)
	f.post(s, &wire.Request{Op: wire.OpOpen, Name: name, Flag: flag, Mode: perm, Handle: w.h, Atime: a.Atime, Mtime: a.Mtime, Posted: true},
		func() {
			f.cache.setState(name, false, a)
			f.cache.setState(parent, false, touchDir(dir, 0))
		},
		func(resp *wire.Response, err error) {
			if err != nil {
				// No file: what the answer says of the name is
				// kept (settle).
				w.fail(err)
				w.unfresh()
				return
			}
			f.aliasIno(resp.Attr.Ino, a.Ino)
		})
	return w, true
}

// postMkdir is Mkdir, posted when the cache says name is free in a
// directory the peer's user may change. The new directory is known
// empty.
func (f *FS) postMkdir(ctx context.Context, name string, perm fs.FileMode) bool {
	o := f.postable(ctx)
	if o == nil || perm&^fs.ModePerm != 0 || !mounts.ValidPath(name) {
		return false
	}
	if _, err, ok := f.cache.stat(name); !ok || !errors.Is(err, fs.ErrNotExist) || f.pending(name) {
		return false
	}
	dir, ok := f.parentFor(o, name)
	if !ok {
		return false
	}
	s := f.liveSession()
	if s == nil {
		return false
	}
	a := created(o, dir, fs.ModeDir|perm, f.newIno())
	parent, _ := mounts.Split(name)
	apply := func() {
		f.cache.setState(name, false, a)
		f.cache.setEmptyDir(name)
		f.cache.setState(parent, false, touchDir(dir, 1))
	}
	f.post(s, &wire.Request{Op: wire.OpMkdir, Name: name, Mode: perm, Atime: a.Atime, Mtime: a.Mtime, Posted: true}, apply, func(resp *wire.Response, err error) {
		if err == nil {
			for _, ev := range resp.After {
				if ev.Name == name {
					f.aliasIno(ev.Attr.Ino, a.Ino)
				}
			}
		}
	})
	return true
}

// postUnlink is Unlink, posted when the cache knows name as a file of one
// link in a directory the peer's user may change.
func (f *FS) postUnlink(ctx context.Context, name string) bool {
	o := f.postable(ctx)
	if o == nil || !mounts.ValidPath(name) {
		return false
	}
	a, err, ok := f.cache.stat(name)
	if !ok || err != nil || a.IsDir() || a.Nlink != 1 {
		return false
	}
	dir, ok := f.parentFor(o, name)
	if !ok || dir.Mode&fs.ModeSticky != 0 && o.Uid != 0 && a.Uid != o.Uid && dir.Uid != o.Uid {
		return false
	}
	s := f.liveSession()
	if s == nil {
		return false
	}
	parent, _ := mounts.Split(name)
	f.post(s, &wire.Request{Op: wire.OpUnlink, Name: name}, func() {
		f.cache.setState(name, true, mounts.Attr{})
		f.cache.setState(parent, false, touchDir(dir, 0))
	}, nil)
	return true
}

// postAttr posts a change of name's mode, owner or times when the cache
// knows the name as a file or directory the peer's user owns (or the
// peer is root): set gives its attributes after the change, or false
// when the outcome cannot be told.
func (f *FS) postAttr(ctx context.Context, req *wire.Request, set func(o *wire.Owner, a mounts.Attr) (mounts.Attr, bool)) bool {
	o := f.postable(ctx)
	if o == nil || !mounts.ValidPath(req.Name) {
		return false
	}
	a, err, ok := f.cache.stat(req.Name)
	if !ok || err != nil || !(a.Mode.IsRegular() || a.IsDir()) || a.Nlink > 1 && !a.IsDir() || o.Uid != 0 && a.Uid != o.Uid {
		return false
	}
	after, ok := set(o, a)
	if !ok {
		return false
	}
	s := f.liveSession()
	if s == nil {
		return false
	}
	after.Ctime = time.Now()
	f.post(s, req, func() { f.cache.setState(req.Name, false, after) }, nil)
	return true
}

// errNoData is getxattr's answer for an attribute a file does not have.
var errNoData = syscall.ENODATA

// closePosted closes a file created here without waiting: its close goes
// after its writes on the peer, and its answer says what the file and
// its name are (Response.After), which the cache keeps (settle); until
// then a stat of the file waits for it (writableFile.Stat).
func (w *writableFile) closePosted() error {
	f := w.f
	w.wmu.Lock()
	w.asking++
	w.wmu.Unlock()
	f.post(w.s, &wire.Request{Op: wire.OpClose, Handle: w.h, Name: w.name}, nil, func(resp *wire.Response, err error) {
		w.unfresh()
		w.wmu.Lock()
		w.asking--
		if err == nil && resp.Attr.Mode != 0 {
			w.local = f.attrOf(resp.Attr)
		}
		w.cond.Broadcast()
		w.wmu.Unlock()
		if err != nil {
			w.fail(err)
		}
	})
	return w.pending()
}

// unfresh notes that the file created here is no longer open here: a
// write that opens it again may ask the peer what it has.
func (w *writableFile) unfresh() {
	w.f.bh.mu.Lock()
	delete(w.f.bh.fresh, w.a.Ino)
	w.f.bh.mu.Unlock()
}

// writePosted sends a write of a file created here without waiting; its
// answer is taken on the session's reader. The name is pending until
// then: the change stream's reports of it are the write coming back, and
// the answer says what the file is once written (settleNames). apply
// keeps in the cache what the write makes of the file, once the name is
// pending and before the write is sent: an answer that came first would
// be overwritten with this daemon's guess.
func (w *writableFile) writePosted(req *wire.Request, apply func()) {
	n := int64(len(req.Data))
	f := w.f
	names := []string{w.name}
	f.bh.mu.Lock()
	f.bh.pend[w.name]++
	f.bh.mu.Unlock()
	apply()
	fn := func(resp *wire.Response, err error) {
		if err = w.writeErr(resp, err, len(req.Data)); err != nil {
			f.deferError(w.name, err)
			resp = nil
		}
		f.settleNames(req, names, resp)
		w.done(n, err)
	}
	if err := w.s.startPosted(req, fn); err != nil {
		fn(nil, err)
	}
}

// keepIfSame keeps a as name's state if the cache holds name as the same
// file (a file created here, written).
func (c *cache) keepIfSame(name string, a mounts.Attr) {
	c.mu.Lock()
	known, ok := c.known(name)
	c.mu.Unlock()
	if ok && known.Ino == a.Ino {
		c.setState(name, false, a)
	}
}
