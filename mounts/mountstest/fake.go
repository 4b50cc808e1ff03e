package mountstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp/syntax"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// The fakes RunWrapper wraps: mounts that keep nothing, answer every call
// with a result derived from its arguments and its caller, and record every
// call that changes something or opens a file. Each fake is the base read
// side plus a set of verb families, one small type per family, so that a
// fake's capabilities are its method set; a reporting fake has every method
// and reports a subset through mounts.CapabilityReporter, answering the
// verbs it does not report with the error a mount without them gets.

// errFake is what every fake call on a name starting with "fail" returns,
// and every call on a file opened by the name "ferr".
var errFake = errors.New("mountstest: the wrapped mount's own error")

// fakeTime is the time every fake attribute carries.
var fakeTime = time.Unix(1_600_000_000, 123456789)

// core is the state the parts of one fake share.
type core struct {
	label    string
	reported *mounts.Capability // nil: capability is method presence

	mu    sync.Mutex
	calls []string
	sink  mounts.PageSink // registered through offerVerb
}

// offer hands the registered sink, if any, the page of name.
func (c *core) offer(name string) {
	c.mu.Lock()
	sink := c.sink
	c.mu.Unlock()
	if sink != nil {
		sink(name, []byte("pages of "+name))
	}
}

func (c *core) record(ctx context.Context, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...)+" by "+callID(ctx))
}

func (c *core) recordFile(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
}

func (c *core) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func callID(ctx context.Context) string {
	if cl, ok := mounts.CallerFrom(ctx); ok {
		return fmt.Sprintf("%s/%s/%d", cl.Face, cl.CallID, cl.Uid)
	}
	return "nobody"
}

// fail is the error of op on name, or nil.
func fail(op, name string) error {
	if len(name) >= 4 && name[:4] == "fail" {
		return mounts.PathErr(op, name, errFake)
	}
	return nil
}

// absent answers a verb of family cap that a reporting fake does not
// report, with the error the helpers of package mounts give for a mount
// without it (their fallbacks aside: a fake without truncate does not
// truncate through a handle instead).
func (c *core) absent(cap mounts.Capability, op, name string) error {
	switch {
	case c.reported == nil || c.reported.Has(cap):
		return nil
	case cap&mounts.CapMutating == 0:
		return mounts.PathErr(op, name, mounts.ErrNotSupported)
	case *c.reported&mounts.CapMutating != 0:
		return mounts.PathErr(op, name, mounts.ErrNotSupported)
	}
	return mounts.PathErr(op, name, mounts.ErrReadOnly)
}

func fakeAttr(ctx context.Context, name string) mounts.Attr {
	a := mounts.Attr{Mode: 0o644, Size: int64(len(name)), Ino: uint64(len(name)) + 1, Nlink: 1,
		Mtime: fakeTime, Atime: fakeTime, Ctime: fakeTime}
	switch name {
	case ".", "d":
		a.Mode = fs.ModeDir | 0o755
	case "l":
		a.Mode = fs.ModeSymlink | 0o777
	}
	if cl, ok := mounts.CallerFrom(ctx); ok {
		a.Uid, a.Gid = cl.Uid, cl.Gid
	}
	return a
}

func fakeEntries(ctx context.Context) []mounts.DirEntry {
	return []mounts.DirEntry{
		{Name: "a", Ino: 2},
		{Name: "by " + callID(ctx), Ino: 3},
		{Name: "d", Type: fs.ModeDir, Ino: 4},
	}
}

// base is the read side every fake has.
type base struct{ c *core }

func (b base) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	if err := fail("stat", name); err != nil {
		return mounts.Attr{}, err
	}
	return fakeAttr(ctx, name), nil
}

func (b base) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	if err := fail("readdir", name); err != nil {
		return nil, err
	}
	return fakeEntries(ctx), nil
}

func (b base) Open(ctx context.Context, name string) (mounts.File, error) {
	return b.OpenWith(ctx, name, mounts.OpenOptions{})
}

// OpenWith records the options with the open, unless they are the zero
// ones, which make it an Open.
func (b base) OpenWith(ctx context.Context, name string, o mounts.OpenOptions) (mounts.File, error) {
	if o == (mounts.OpenOptions{}) {
		b.c.record(ctx, "open %s", name)
	} else {
		b.c.record(ctx, "open %s with %+v", name, o)
	}
	if err := fail("open", name); err != nil {
		return nil, err
	}
	return newFakeFile(b.c, name, false), nil
}

func (b base) ReadLink(ctx context.Context, name string) (string, error) {
	if err := fail("readlink", name); err != nil {
		return "", err
	}
	return "target of " + name + " for " + callID(ctx), nil
}

// One type per optional part of the contract.

type writeVerb struct{ c *core }

func (v writeVerb) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	if err := v.c.absent(mounts.CapWrite, "open", name); err != nil {
		return nil, err
	}
	v.c.record(ctx, "openfile %s %#x %v", name, flag, perm)
	if err := fail("open", name); err != nil {
		return nil, err
	}
	return newFakeFile(v.c, name, name != "ro"), nil
}

type truncateVerb struct{ c *core }

func (v truncateVerb) Truncate(ctx context.Context, name string, size int64) error {
	if err := v.c.absent(mounts.CapTruncate, "truncate", name); err != nil {
		return err
	}
	v.c.record(ctx, "truncate %s %d", name, size)
	return fail("truncate", name)
}

type mkdirVerb struct{ c *core }

func (v mkdirVerb) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if err := v.c.absent(mounts.CapMkdir, "mkdir", name); err != nil {
		return err
	}
	v.c.record(ctx, "mkdir %s %v", name, perm)
	return fail("mkdir", name)
}

type removeVerbs struct{ c *core }

func (v removeVerbs) Unlink(ctx context.Context, name string) error {
	if err := v.c.absent(mounts.CapRemove, "unlink", name); err != nil {
		return err
	}
	v.c.record(ctx, "unlink %s", name)
	return fail("unlink", name)
}

func (v removeVerbs) Rmdir(ctx context.Context, name string) error {
	if err := v.c.absent(mounts.CapRemove, "rmdir", name); err != nil {
		return err
	}
	v.c.record(ctx, "rmdir %s", name)
	return fail("rmdir", name)
}

type renameVerb struct{ c *core }

func (v renameVerb) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	if err := v.c.absent(mounts.CapRename, "rename", oldname); err != nil {
		return err
	}
	v.c.record(ctx, "rename %s %s %d", oldname, newname, flags)
	return fail("rename", oldname)
}

type symlinkVerb struct{ c *core }

func (v symlinkVerb) Symlink(ctx context.Context, target, name string) error {
	if err := v.c.absent(mounts.CapSymlink, "symlink", name); err != nil {
		return err
	}
	v.c.record(ctx, "symlink %s %s", target, name)
	return fail("symlink", name)
}

type linkVerb struct{ c *core }

func (v linkVerb) Link(ctx context.Context, oldname, newname string) error {
	if err := v.c.absent(mounts.CapLink, "link", newname); err != nil {
		return err
	}
	v.c.record(ctx, "link %s %s", oldname, newname)
	return fail("link", oldname)
}

type mknodVerb struct{ c *core }

func (v mknodVerb) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	if err := v.c.absent(mounts.CapMknod, "mknod", name); err != nil {
		return err
	}
	v.c.record(ctx, "mknod %s %v %d", name, mode, dev)
	return fail("mknod", name)
}

type chmodVerb struct{ c *core }

func (v chmodVerb) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	if err := v.c.absent(mounts.CapChmod, "chmod", name); err != nil {
		return err
	}
	v.c.record(ctx, "chmod %s %v", name, mode)
	return fail("chmod", name)
}

type chownVerb struct{ c *core }

func (v chownVerb) Chown(ctx context.Context, name string, uid, gid int) error {
	if err := v.c.absent(mounts.CapChown, "chown", name); err != nil {
		return err
	}
	v.c.record(ctx, "chown %s %d %d", name, uid, gid)
	return fail("chown", name)
}

type chtimesVerb struct{ c *core }

func (v chtimesVerb) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	if err := v.c.absent(mounts.CapChtimes, "chtimes", name); err != nil {
		return err
	}
	v.c.record(ctx, "chtimes %s %d %d", name, atime.UnixNano(), mtime.UnixNano())
	return fail("chtimes", name)
}

type xattrVerbs struct{ c *core }

func (v xattrVerbs) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	if err := v.c.absent(mounts.CapXattr, "getxattr", name); err != nil {
		return nil, err
	}
	if err := fail("getxattr", name); err != nil {
		return nil, err
	}
	return []byte(attr + " of " + name + " for " + callID(ctx)), nil
}

func (v xattrVerbs) ListXattr(ctx context.Context, name string) ([]string, error) {
	if v.c.reported != nil && !v.c.reported.Has(mounts.CapXattr) {
		// What the helper answers for a mount without xattrs.
		return nil, fail("stat", name)
	}
	if err := fail("listxattr", name); err != nil {
		return nil, err
	}
	return []string{"user.a", "user." + callID(ctx)}, nil
}

type setXattrVerbs struct{ c *core }

func (v setXattrVerbs) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	if err := v.c.absent(mounts.CapSetXattr, "setxattr", name); err != nil {
		return err
	}
	v.c.record(ctx, "setxattr %s %s %q %d", name, attr, data, flags)
	return fail("setxattr", name)
}

func (v setXattrVerbs) RemoveXattr(ctx context.Context, name, attr string) error {
	if err := v.c.absent(mounts.CapSetXattr, "removexattr", name); err != nil {
		return err
	}
	v.c.record(ctx, "removexattr %s %s", name, attr)
	return fail("removexattr", name)
}

type statFSVerb struct{ c *core }

func (v statFSVerb) StatFS(ctx context.Context) (mounts.FSStat, error) {
	if err := v.c.absent(mounts.CapStatFS, "statfs", "."); err != nil {
		return mounts.FSStat{}, err
	}
	return mounts.FSStat{Bsize: 4096, Blocks: uint64(len(callID(ctx))), NameLen: 255}, nil
}

type searchVerb struct{ c *core }

// Candidates names files in and out of dir, and the caller, so that a
// wrapper which drops names, the directory or the context is seen.
func (v searchVerb) Candidates(ctx context.Context, dir string, re *syntax.Regexp) ([]string, bool, error) {
	if v.c.reported != nil && !v.c.reported.Has(mounts.CapSearch) {
		return nil, false, nil // what the helper answers for a mount without it
	}
	if err := fail("search", dir); err != nil {
		return nil, false, err
	}
	v.c.record(ctx, "candidates %s %s", dir, re)
	return []string{mounts.Join(dir, "a"), mounts.Join(dir, "d/x"), mounts.Join(dir, "fail")}, true, nil
}

type syncVerb struct{ c *core }

func (v syncVerb) Sync(ctx context.Context, name string) error {
	v.c.record(ctx, "sync %s", name)
	return fail("sync", name)
}

type statDirVerb struct{ c *core }

// StatDir answers what StatEach would, marked so that a wrapper which
// falls back to StatEach instead of forwarding is told apart.
func (v statDirVerb) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	if err := fail("readdir", name); err != nil {
		return nil, nil, err
	}
	ents := fakeEntries(ctx)
	attrs := make([]mounts.Attr, len(ents))
	for i, e := range ents {
		attrs[i] = fakeAttr(ctx, mounts.Join(name, e.Name))
		attrs[i].Blocks = 77
	}
	return ents, attrs, nil
}

type describeVerb struct{ c *core }

func (v describeVerb) Describe() mounts.Description {
	return mounts.Description{Type: "fake", Source: v.c.label, External: true, IgnoreFiles: true}
}

type describeAtVerb struct{ c *core }

func (v describeAtVerb) DescribeAt(name string) mounts.Description {
	return mounts.Description{Type: "fake at", Source: v.c.label + ":" + name, Immutable: true}
}

type mountsVerb struct{ c *core }

func (v mountsVerb) Mounts() []mounts.MountInfo {
	return []mounts.MountInfo{
		{Prefix: "/fake", Description: mounts.Description{Type: "fake", Source: v.c.label}, Writable: true, Caps: mounts.CapMkdir},
		{Prefix: "/fake/ro", Description: mounts.Description{Type: "fake", Source: v.c.label, Immutable: true}},
	}
}

// offerVerb offers pages ([mounts.PageOfferer]) when the test says so
// (core.offer).
type offerVerb struct{ c *core }

func (v offerVerb) OfferPages(sink mounts.PageSink) bool {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	v.c.sink = sink
	return true
}

type reportsVerb struct{ c *core }

func (v reportsVerb) Capabilities() mounts.Capability { return *v.c.reported }

// fakePart is one optional part a fake may have.
type fakePart struct {
	name string
	caps mounts.Capability // what the part adds to the method set
}

// The parts, in the order fakes are named by. setxattr needs xattr
// (SetXattrFS embeds XattrFS), so the fakes with one part give it both.
var fakeParts = []fakePart{
	{"write", mounts.CapWrite}, {"truncate", mounts.CapTruncate}, {"mkdir", mounts.CapMkdir},
	{"remove", mounts.CapRemove}, {"rename", mounts.CapRename}, {"symlink", mounts.CapSymlink},
	{"link", mounts.CapLink}, {"mknod", mounts.CapMknod}, {"chmod", mounts.CapChmod},
	{"chown", mounts.CapChown}, {"chtimes", mounts.CapChtimes}, {"xattr", mounts.CapXattr},
	{"setxattr", mounts.CapSetXattr}, {"statfs", mounts.CapStatFS}, {"search", mounts.CapSearch},
	{"sync", 0}, {"statdir", 0}, {"describe", 0}, {"describeat", 0}, {"mounts", 0},
	{"offer", 0},
}

// newPartFake returns a fake with the read side and the one part named
// (plus xattr for setxattr); "" is the read side alone.
func newPartFake(c *core, part string) mounts.FS {
	b := base{c}
	switch part {
	case "":
		return b
	case "write":
		return struct {
			base
			writeVerb
		}{b, writeVerb{c}}
	case "truncate":
		return struct {
			base
			truncateVerb
		}{b, truncateVerb{c}}
	case "mkdir":
		return struct {
			base
			mkdirVerb
		}{b, mkdirVerb{c}}
	case "remove":
		return struct {
			base
			removeVerbs
		}{b, removeVerbs{c}}
	case "rename":
		return struct {
			base
			renameVerb
		}{b, renameVerb{c}}
	case "symlink":
		return struct {
			base
			symlinkVerb
		}{b, symlinkVerb{c}}
	case "link":
		return struct {
			base
			linkVerb
		}{b, linkVerb{c}}
	case "mknod":
		return struct {
			base
			mknodVerb
		}{b, mknodVerb{c}}
	case "chmod":
		return struct {
			base
			chmodVerb
		}{b, chmodVerb{c}}
	case "chown":
		return struct {
			base
			chownVerb
		}{b, chownVerb{c}}
	case "chtimes":
		return struct {
			base
			chtimesVerb
		}{b, chtimesVerb{c}}
	case "xattr":
		return struct {
			base
			xattrVerbs
		}{b, xattrVerbs{c}}
	case "setxattr":
		return struct {
			base
			xattrVerbs
			setXattrVerbs
		}{b, xattrVerbs{c}, setXattrVerbs{c}}
	case "statfs":
		return struct {
			base
			statFSVerb
		}{b, statFSVerb{c}}
	case "search":
		return struct {
			base
			searchVerb
		}{b, searchVerb{c}}
	case "sync":
		return struct {
			base
			syncVerb
		}{b, syncVerb{c}}
	case "statdir":
		return struct {
			base
			statDirVerb
		}{b, statDirVerb{c}}
	case "describe":
		return struct {
			base
			describeVerb
		}{b, describeVerb{c}}
	case "describeat":
		return struct {
			base
			describeAtVerb
		}{b, describeAtVerb{c}}
	case "mounts":
		return struct {
			base
			mountsVerb
		}{b, mountsVerb{c}}
	case "offer":
		return struct {
			base
			offerVerb
		}{b, offerVerb{c}}
	}
	panic("mountstest: no fake part " + part)
}

// fullFake has every part of the contract.
type fullFake struct {
	base
	writeVerb
	truncateVerb
	mkdirVerb
	removeVerbs
	renameVerb
	symlinkVerb
	linkVerb
	mknodVerb
	chmodVerb
	chownVerb
	chtimesVerb
	xattrVerbs
	setXattrVerbs
	statFSVerb
	searchVerb
	syncVerb
	statDirVerb
	describeVerb
	describeAtVerb
	mountsVerb
	offerVerb
}

func newFullFake(c *core) fullFake {
	return fullFake{base{c}, writeVerb{c}, truncateVerb{c}, mkdirVerb{c}, removeVerbs{c},
		renameVerb{c}, symlinkVerb{c}, linkVerb{c}, mknodVerb{c}, chmodVerb{c}, chownVerb{c},
		chtimesVerb{c}, xattrVerbs{c}, setXattrVerbs{c}, statFSVerb{c}, searchVerb{c}, syncVerb{c},
		statDirVerb{c}, describeVerb{c}, describeAtVerb{c}, mountsVerb{c}, offerVerb{c}}
}

// reportingFake has every part and reports the capabilities of c.reported.
type reportingFake struct {
	fullFake
	reportsVerb
}

// fakeFile is an open file of a fake. Files opened by the name "fd" offer
// a descriptor; files opened by "ferr" fail every call.
type fakeFile struct {
	c    *core
	name string
}

func newFakeFile(c *core, name string, writable bool) mounts.File {
	f := fakeFile{c, name}
	switch {
	case writable && name == "fd":
		return &fdWritableFakeFile{writableFakeFile{f}}
	case writable:
		return &writableFakeFile{f}
	case name == "fd":
		return &fdFakeFile{f}
	}
	return &f
}

func (f *fakeFile) err(op string) error {
	if f.name == "ferr" {
		return mounts.PathErr(op, f.name, errFake)
	}
	return nil
}

func (f *fakeFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.err("read"); err != nil {
		return 0, err
	}
	content := "content of " + f.name
	if off >= int64(len(content)) {
		return 0, io.EOF
	}
	n := copy(p, content[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *fakeFile) Stat() (mounts.Attr, error) {
	if err := f.err("stat"); err != nil {
		return mounts.Attr{}, err
	}
	a := fakeAttr(context.Background(), f.name)
	a.Blocks = 9
	return a, nil
}

func (f *fakeFile) Close() error {
	f.c.recordFile("close %s", f.name)
	return f.err("close")
}

type writableFakeFile struct{ fakeFile }

func (f *writableFakeFile) WriteAt(p []byte, off int64) (int, error) {
	f.c.recordFile("writeat %s %q %d", f.name, p, off)
	if err := f.err("write"); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *writableFakeFile) Truncate(size int64) error {
	f.c.recordFile("ftruncate %s %d", f.name, size)
	return f.err("truncate")
}

func (f *writableFakeFile) Sync() error {
	f.c.recordFile("fsync %s", f.name)
	return f.err("sync")
}

// fakeFd is the descriptor the "fd" files offer.
const fakeFd = 42

type fdFakeFile struct{ fakeFile }

func (*fdFakeFile) Fd() uintptr { return fakeFd }

type fdWritableFakeFile struct{ writableFakeFile }

func (*fdWritableFakeFile) Fd() uintptr { return fakeFd }
