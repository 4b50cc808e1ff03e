package mounts

import (
	"context"
	"io/fs"
	"os"
	"regexp/syntax"
	"strconv"
	"sync/atomic"
	"time"
)

// Op names a verb of the contract in a [Call].
type Op uint8

// The verbs. OpOpen is Open, and OpenFile with flags that ask for no
// change (as [OpenFile] treats them); OpOpenFile is an OpenFile that asks
// for one. The OpFile ones are calls on a file opened for writing through
// a wrapper of [Watch], which only watchers see. OpOffer is a page the
// mount offers up ([PageOfferer]), which only interceptors see: one that
// refuses it drops the page.
const (
	OpStat Op = iota + 1
	OpReadDir
	OpStatDir
	OpOpen
	OpReadLink
	OpOpenFile
	OpTruncate
	OpMkdir
	OpUnlink
	OpRmdir
	OpRename
	OpSymlink
	OpLink
	OpMknod
	OpChmod
	OpChown
	OpChtimes
	OpGetXattr
	OpListXattr
	OpSetXattr
	OpRemoveXattr
	OpStatFS
	OpSync
	OpFileTruncate
	OpFileSync
	OpFileClose
	OpOffer
)

var opNames = [...]string{
	OpStat: "stat", OpReadDir: "readdir", OpStatDir: "statdir", OpOpen: "open",
	OpReadLink: "readlink", OpOpenFile: "openfile", OpTruncate: "truncate",
	OpMkdir: "mkdir", OpUnlink: "unlink", OpRmdir: "rmdir", OpRename: "rename",
	OpSymlink: "symlink", OpLink: "link", OpMknod: "mknod", OpChmod: "chmod",
	OpChown: "chown", OpChtimes: "chtimes", OpGetXattr: "getxattr",
	OpListXattr: "listxattr", OpSetXattr: "setxattr", OpRemoveXattr: "removexattr",
	OpStatFS: "statfs", OpSync: "sync", OpFileTruncate: "file truncate",
	OpFileSync: "file sync", OpFileClose: "file close", OpOffer: "offer",
}

// String is the verb's lower-case name: "mkdir", "file close".
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Call is one call of the contract as the wrappers of [Intercept] and
// [Watch] see it: the verb and its arguments. Fields a verb does not take
// are zero.
type Call struct {
	Op Op
	// Name is the name the verb acts on: the old name of a Rename or a
	// Link, the new link of a Symlink, "." for StatFS. On a file, the name
	// it was opened by.
	Name string
	// NewName is the new name of a Rename or a Link.
	NewName string
	// Target is the target of a Symlink.
	Target string
	// Flag holds the open flags of OpenFile and the flags of SetXattr.
	Flag int
	// Open holds the options of an Open made through [OpenWith].
	Open OpenOptions
	// RenameFlags are Rename's.
	RenameFlags RenameFlags
	// Mode is the perm of OpenFile and Mkdir, and the mode of Mknod and
	// Chmod.
	Mode fs.FileMode
	// Size is the size of a Truncate, by name or on a file.
	Size int64
	// Dev is the device number of a Mknod.
	Dev uint32
	// Uid and Gid are Chown's.
	Uid, Gid int
	// Atime and Mtime are Chtimes's.
	Atime, Mtime time.Time
	// Attr is the extended attribute of GetXattr, SetXattr and
	// RemoveXattr.
	Attr string
	// Data is the value of a SetXattr. It is the caller's: look, do not
	// keep.
	Data []byte

	// The fields below are facts a wrapper of Watch finds out for its
	// watcher; an interceptor sees them zero.

	// Existed says, for an OpenFile, whether its name existed before the
	// call: it did not when the flags hold O_CREATE and O_EXCL, it did
	// when they lack O_CREATE, and otherwise [Watcher.StatCreates] asks
	// the mount first (without it, Existed is false).
	Existed bool
	// Written counts the bytes written through a file since it was opened
	// (OpFileTruncate, OpFileSync, OpFileClose).
	Written int64
	// Changed says a write of at least one byte or a Truncate succeeded
	// on the file since it was opened or since the last OpFileSync or
	// OpFileClose (OpFileSync, OpFileClose).
	Changed bool
}

// Interceptor decides about calls before they reach the mount; see
// [Intercept]. Every field is optional.
type Interceptor struct {
	// Call is given every call made through the wrapper before the mount
	// sees it. It returns the call to make: c itself, or c with names or
	// arguments rewritten (the Op stays c's), or an error, which refuses
	// the call: the wrapper returns it, and the mount never sees the call.
	Call func(ctx context.Context, c Call) (Call, error)
	// Capabilities is what the wrapper reports, given what the mount
	// reports: a wrapper that refuses every change reports none.
	Capabilities func(Capability) Capability
	// Mounts rewrites the mount's table ([Mounts]: a copy, the hook's to
	// change) before the wrapper answers it.
	Mounts func([]MountInfo) []MountInfo
}

// Watcher is told of calls once they have returned; see [Watch].
type Watcher struct {
	// Done is told of every call made through the wrapper, and of
	// Truncate, Sync and the first Close on each file it opened for
	// writing, once the call has returned: the call and its error (nil on
	// success). It may be called from several goroutines at once, and
	// with no lock of the wrapper held.
	Done func(ctx context.Context, c Call, err error)
	// StatCreates makes the wrapper Stat the name before an OpenFile
	// that may or may not create it (O_CREATE without O_EXCL), so that
	// [Call.Existed] can tell a creation from an open. It costs that
	// Stat.
	StatCreates bool
}

// Intercept wraps fsys so that in sees every call before fsys does and may
// refuse it or rewrite it. It is how the path rules of package policy bind
// every verb: the wrapper has one forwarder per verb, and a rule is one
// function of a [Call].
//
// The wrapper declares every capability interface of the contract and
// forwards each call through the helpers of this package, so a verb fsys
// lacks fails as it would on fsys; it reports fsys's capabilities,
// descriptions and mount table (as in's hooks rewrite them). When in
// rewrites a name, an error that names the rewritten name is given the
// caller's back, so errors name what the caller passed. Open files are
// fsys's own, host descriptors ([FDFile]) included: calls on them are not
// intercepted, as a permission is checked when a name is used.
func Intercept(fsys FS, in Interceptor) FS {
	return &wrapper{fsys: fsys, in: in}
}

// Watch wraps fsys so that out is told of every call after the fact: the
// verb, its names and arguments, and its error. It is how the audit log
// and [Observe] see every change, whichever verb made it.
//
// The wrapper declares every capability interface of the contract and
// forwards each call through the helpers of this package, so a verb fsys
// lacks fails as it would on fsys; it reports fsys's capabilities,
// descriptions and mount table. A file opened for writing is wrapped to
// count the bytes written through it and to report its Truncate, Sync and
// first Close (see [Call.Written], [Call.Changed]); those reports carry a
// context with the caller of the open ([CallerFrom]), since the calls of
// a file take none. No file the wrapper returns offers [FDFile]: the
// kernel would read and write behind the wrapper's back, and since the
// kernel serves every open of a file the same way, a reader holding a
// passthrough open would force the writer that follows into one.
func Watch(fsys FS, out Watcher) FS {
	return &wrapper{fsys: fsys, out: out, watching: true}
}

var (
	_ OpenFileFS         = (*wrapper)(nil)
	_ OpenWithFS         = (*wrapper)(nil)
	_ StatDirFS          = (*wrapper)(nil)
	_ TruncateFS         = (*wrapper)(nil)
	_ MkdirFS            = (*wrapper)(nil)
	_ RemoveFS           = (*wrapper)(nil)
	_ RenameFS           = (*wrapper)(nil)
	_ SymlinkFS          = (*wrapper)(nil)
	_ LinkFS             = (*wrapper)(nil)
	_ MknodFS            = (*wrapper)(nil)
	_ ChmodFS            = (*wrapper)(nil)
	_ ChownFS            = (*wrapper)(nil)
	_ ChtimesFS          = (*wrapper)(nil)
	_ XattrFS            = (*wrapper)(nil)
	_ SetXattrFS         = (*wrapper)(nil)
	_ StatFSer           = (*wrapper)(nil)
	_ SyncFS             = (*wrapper)(nil)
	_ CapabilityReporter = (*wrapper)(nil)
	_ Describer          = (*wrapper)(nil)
	_ PathDescriber      = (*wrapper)(nil)
	_ MountTabler        = (*wrapper)(nil)
	_ SearchFS           = (*wrapper)(nil)
	_ PageOfferer        = (*wrapper)(nil)
	_ WritableFile       = (*watchedFile)(nil)
)

// wrapper is both primitives: the one forwarder of every verb, with an
// interceptor before the call and a watcher after it.
type wrapper struct {
	fsys     FS
	in       Interceptor
	out      Watcher
	watching bool // a Watch wrapper: wrap writable files, hide descriptors
}

// enter lets the interceptor decide about c. It returns the call to make.
func (w *wrapper) enter(ctx context.Context, c Call) (Call, error) {
	if w.in.Call == nil {
		return c, nil
	}
	made, err := w.in.Call(ctx, c)
	made.Op = c.Op
	return made, err
}

// back gives an error of the call made the names of the call asked for,
// where the interceptor rewrote them.
func back(c, made *Call, err error) error {
	if err == nil || (made.Name == c.Name && made.NewName == c.NewName) {
		return err
	}
	pe, ok := err.(*fs.PathError)
	if !ok {
		return err
	}
	switch pe.Path {
	case made.Name:
		return &fs.PathError{Op: pe.Op, Path: c.Name, Err: pe.Err}
	case made.NewName:
		return &fs.PathError{Op: pe.Op, Path: c.NewName, Err: pe.Err}
	}
	return err
}

// done tells the watcher about c and returns err.
func (w *wrapper) done(ctx context.Context, c Call, err error) error {
	if w.out.Done != nil {
		w.out.Done(ctx, c, err)
	}
	return err
}

// run is the common path of a verb without results: intercept, forward
// through fn, watch.
func (w *wrapper) run(ctx context.Context, c Call, fn func(made Call) error) error {
	made, err := w.enter(ctx, c)
	if err == nil {
		err = back(&c, &made, fn(made))
	}
	return w.done(ctx, c, err)
}

func (w *wrapper) Capabilities() Capability {
	// Freezing is a service's, on the mount itself: never forwarded.
	c := Capabilities(w.fsys) &^ CapFreeze
	if w.in.Capabilities != nil {
		c = w.in.Capabilities(c)
	}
	return c
}

func (w *wrapper) Describe() Description              { return Describe(w.fsys) }
func (w *wrapper) DescribeAt(name string) Description { return DescribeAt(w.fsys, name) }

func (w *wrapper) Mounts() []MountInfo {
	t := Mounts(w.fsys)
	if w.in.Mounts != nil {
		t = w.in.Mounts(t)
	}
	return t
}

// OfferPages forwards the pages fsys offers to sink, each first through
// the interceptor as an OpOffer of its name: a page it refuses, or whose
// name it rewrites (the names of a page go up, a rewrite maps them down),
// is dropped. Watchers are not told: an offer is no call anybody made.
func (w *wrapper) OfferPages(sink PageSink) bool {
	if sink == nil || w.in.Call == nil {
		return OfferPages(w.fsys, sink)
	}
	return OfferPages(w.fsys, func(name string, data []byte) {
		c := Call{Op: OpOffer, Name: name}
		if made, err := w.enter(offerCtx, c); err == nil && made.Name == name {
			sink(name, data)
		}
	})
}

// offerCtx is the context an interceptor decides about an offered page
// with: no caller made the offer.
var offerCtx = context.Background()

func (w *wrapper) Stat(ctx context.Context, name string) (Attr, error) {
	var a Attr
	err := w.run(ctx, Call{Op: OpStat, Name: name}, func(c Call) (err error) {
		a, err = w.fsys.Stat(ctx, c.Name)
		return err
	})
	return a, err
}

func (w *wrapper) ReadDir(ctx context.Context, name string) ([]DirEntry, error) {
	var ents []DirEntry
	err := w.run(ctx, Call{Op: OpReadDir, Name: name}, func(c Call) (err error) {
		ents, err = w.fsys.ReadDir(ctx, c.Name)
		return err
	})
	return ents, err
}

func (w *wrapper) StatDir(ctx context.Context, name string) ([]DirEntry, []Attr, error) {
	var ents []DirEntry
	var attrs []Attr
	err := w.run(ctx, Call{Op: OpStatDir, Name: name}, func(c Call) (err error) {
		ents, attrs, err = StatDir(ctx, w.fsys, c.Name)
		return err
	})
	return ents, attrs, err
}

func (w *wrapper) Open(ctx context.Context, name string) (File, error) {
	return w.OpenWith(ctx, name, OpenOptions{})
}

// OpenWith is Open with the caller's options, which the interceptor and the
// watcher see as the call's Open and fsys gets as made ([OpenWith]).
func (w *wrapper) OpenWith(ctx context.Context, name string, o OpenOptions) (File, error) {
	var f File
	err := w.run(ctx, Call{Op: OpOpen, Name: name, Open: o}, func(c Call) (err error) {
		f, err = OpenWith(ctx, w.fsys, c.Name, c.Open)
		return err
	})
	if err != nil {
		return nil, err
	}
	if w.watching {
		return hideFd(f), nil
	}
	return f, nil
}

func (w *wrapper) ReadLink(ctx context.Context, name string) (string, error) {
	var s string
	err := w.run(ctx, Call{Op: OpReadLink, Name: name}, func(c Call) (err error) {
		s, err = w.fsys.ReadLink(ctx, c.Name)
		return err
	})
	return s, err
}

// OpenFile is Open for flags that ask for no change, as [OpenFile] is.
func (w *wrapper) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (File, error) {
	if !WantsWrite(flag) {
		return w.Open(ctx, name)
	}
	c := Call{Op: OpOpenFile, Name: name, Flag: flag, Mode: perm}
	made, err := w.enter(ctx, c)
	var f File
	if err == nil {
		c.Existed = w.existed(ctx, made)
		f, err = OpenFile(ctx, w.fsys, made.Name, made.Flag, made.Mode)
		err = back(&c, &made, err)
	}
	if err := w.done(ctx, c, err); err != nil {
		return nil, err
	}
	if !w.watching {
		return f, nil
	}
	wf, ok := f.(WritableFile)
	if !ok {
		return hideFd(f), nil
	}
	caller, hasCaller := CallerFrom(ctx)
	return &watchedFile{WritableFile: wf, w: w, name: name, caller: caller, hasCaller: hasCaller}, nil
}

// existed is Call.Existed of an OpenFile about to be made.
func (w *wrapper) existed(ctx context.Context, c Call) bool {
	switch {
	case c.Flag&os.O_CREATE == 0:
		return true
	case c.Flag&os.O_EXCL != 0, !w.out.StatCreates:
		return false
	}
	_, err := w.fsys.Stat(ctx, c.Name)
	return err == nil
}

func (w *wrapper) Truncate(ctx context.Context, name string, size int64) error {
	return w.run(ctx, Call{Op: OpTruncate, Name: name, Size: size}, func(c Call) error {
		return Truncate(ctx, w.fsys, c.Name, c.Size)
	})
}

func (w *wrapper) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return w.run(ctx, Call{Op: OpMkdir, Name: name, Mode: perm}, func(c Call) error {
		return Mkdir(ctx, w.fsys, c.Name, c.Mode)
	})
}

func (w *wrapper) Unlink(ctx context.Context, name string) error {
	return w.run(ctx, Call{Op: OpUnlink, Name: name}, func(c Call) error {
		return Unlink(ctx, w.fsys, c.Name)
	})
}

func (w *wrapper) Rmdir(ctx context.Context, name string) error {
	return w.run(ctx, Call{Op: OpRmdir, Name: name}, func(c Call) error {
		return Rmdir(ctx, w.fsys, c.Name)
	})
}

func (w *wrapper) Rename(ctx context.Context, oldname, newname string, flags RenameFlags) error {
	return w.run(ctx, Call{Op: OpRename, Name: oldname, NewName: newname, RenameFlags: flags}, func(c Call) error {
		return Rename(ctx, w.fsys, c.Name, c.NewName, c.RenameFlags)
	})
}

func (w *wrapper) Symlink(ctx context.Context, target, name string) error {
	return w.run(ctx, Call{Op: OpSymlink, Name: name, Target: target}, func(c Call) error {
		return Symlink(ctx, w.fsys, c.Target, c.Name)
	})
}

func (w *wrapper) Link(ctx context.Context, oldname, newname string) error {
	return w.run(ctx, Call{Op: OpLink, Name: oldname, NewName: newname}, func(c Call) error {
		return Link(ctx, w.fsys, c.Name, c.NewName)
	})
}

func (w *wrapper) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	return w.run(ctx, Call{Op: OpMknod, Name: name, Mode: mode, Dev: dev}, func(c Call) error {
		return Mknod(ctx, w.fsys, c.Name, c.Mode, c.Dev)
	})
}

func (w *wrapper) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return w.run(ctx, Call{Op: OpChmod, Name: name, Mode: mode}, func(c Call) error {
		return Chmod(ctx, w.fsys, c.Name, c.Mode)
	})
}

func (w *wrapper) Chown(ctx context.Context, name string, uid, gid int) error {
	return w.run(ctx, Call{Op: OpChown, Name: name, Uid: uid, Gid: gid}, func(c Call) error {
		return Chown(ctx, w.fsys, c.Name, c.Uid, c.Gid)
	})
}

func (w *wrapper) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	return w.run(ctx, Call{Op: OpChtimes, Name: name, Atime: atime, Mtime: mtime}, func(c Call) error {
		return Chtimes(ctx, w.fsys, c.Name, c.Atime, c.Mtime)
	})
}

func (w *wrapper) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	var data []byte
	err := w.run(ctx, Call{Op: OpGetXattr, Name: name, Attr: attr}, func(c Call) (err error) {
		data, err = GetXattr(ctx, w.fsys, c.Name, c.Attr)
		return err
	})
	return data, err
}

func (w *wrapper) ListXattr(ctx context.Context, name string) ([]string, error) {
	var attrs []string
	err := w.run(ctx, Call{Op: OpListXattr, Name: name}, func(c Call) (err error) {
		attrs, err = ListXattr(ctx, w.fsys, c.Name)
		return err
	})
	return attrs, err
}

func (w *wrapper) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	return w.run(ctx, Call{Op: OpSetXattr, Name: name, Attr: attr, Data: data, Flag: flags}, func(c Call) error {
		return SetXattr(ctx, w.fsys, c.Name, c.Attr, c.Data, c.Flag)
	})
}

func (w *wrapper) RemoveXattr(ctx context.Context, name, attr string) error {
	return w.run(ctx, Call{Op: OpRemoveXattr, Name: name, Attr: attr}, func(c Call) error {
		return RemoveXattr(ctx, w.fsys, c.Name, c.Attr)
	})
}

func (w *wrapper) StatFS(ctx context.Context) (FSStat, error) {
	var st FSStat
	err := w.run(ctx, Call{Op: OpStatFS, Name: "."}, func(Call) (err error) {
		st, err = StatFS(ctx, w.fsys)
		return err
	})
	return st, err
}

func (w *wrapper) Sync(ctx context.Context, name string) error {
	return w.run(ctx, Call{Op: OpSync, Name: name}, func(c Call) error {
		return Sync(ctx, w.fsys, c.Name)
	})
}

// Candidates forwards a search's candidates, each one as the interceptor
// rules on it: a file is kept only if the walk a search does without them
// would reach it and open it (OpReadDir of dir and of every directory
// between, OpOpen of the file), so a refused file is never a candidate.
// An interceptor that rewrites a name cannot be followed back from the
// mount's names: the search then scans. Watchers are not told: it is a
// read, as the walk's listings are.
func (w *wrapper) Candidates(ctx context.Context, dir string, re *syntax.Regexp) ([]string, bool, error) {
	if w.in.Call == nil {
		return Candidates(ctx, w.fsys, dir, re)
	}
	allowed := func(op Op, name string) (ok, same bool) {
		made, err := w.enter(ctx, Call{Op: op, Name: name})
		if err != nil {
			return false, true // refused: left out
		}
		return true, made.Name == name
	}
	c := Call{Op: OpReadDir, Name: dir}
	made, err := w.enter(ctx, c)
	if err != nil {
		return nil, false, back(&c, &made, err)
	}
	if made.Name != dir {
		return nil, false, nil
	}
	names, complete, err := Candidates(ctx, w.fsys, dir, re)
	if err != nil || !complete {
		return nil, false, err
	}
	dirs := map[string]bool{dir: true} // directories ruled on: listable
	out := names[:0:0]
	for _, name := range names {
		ok, same := allowed(OpOpen, name)
		for d := parentOf(name); ok && same && d != dir && d != "."; d = parentOf(d) {
			listable, seen := dirs[d]
			if !seen {
				listable, same = allowed(OpReadDir, d)
				dirs[d] = listable
			}
			ok = listable
		}
		if !same {
			return nil, false, nil
		}
		if ok {
			out = append(out, name)
		}
	}
	return out, true, nil
}

// parentOf is the directory of name, "." for a top-level one.
func parentOf(name string) string {
	dir, _ := Split(name)
	return dir
}

// plainFile is a file without its host descriptor (see Watch).
type plainFile struct{ File }

func hideFd(f File) File {
	if _, ok := f.(FDFile); ok {
		return plainFile{f}
	}
	return f
}

// watchedFile is a file opened for writing through a Watch wrapper. It
// counts what is written through it and reports Truncate, Sync and the
// first Close; WriteAt is not reported one by one, as a file is written in
// many kernel requests.
type watchedFile struct {
	WritableFile
	w         *wrapper
	name      string
	caller    Caller
	hasCaller bool
	written   atomic.Int64
	changed   atomic.Bool
	closed    atomic.Bool
}

// ctx carries the caller of the open: a kernel handle is written and
// released by later requests, whose caller may be another.
func (f *watchedFile) ctx() context.Context {
	if !f.hasCaller {
		return context.Background()
	}
	return WithCaller(context.Background(), f.caller)
}

func (f *watchedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(p, off)
	if n > 0 {
		f.written.Add(int64(n))
		f.changed.Store(true)
	}
	return n, err
}

func (f *watchedFile) Truncate(size int64) error {
	err := f.WritableFile.Truncate(size)
	if err == nil {
		f.changed.Store(true)
	}
	return f.w.done(f.ctx(), Call{Op: OpFileTruncate, Name: f.name, Size: size, Written: f.written.Load()}, err)
}

func (f *watchedFile) Sync() error {
	err := f.WritableFile.Sync()
	return f.w.done(f.ctx(), Call{Op: OpFileSync, Name: f.name, Written: f.written.Load(), Changed: f.changed.Swap(false)}, err)
}

func (f *watchedFile) Close() error {
	err := f.WritableFile.Close()
	if !f.closed.CompareAndSwap(false, true) {
		return err
	}
	return f.w.done(f.ctx(), Call{Op: OpFileClose, Name: f.name, Written: f.written.Load(), Changed: f.changed.Swap(false)}, err)
}
