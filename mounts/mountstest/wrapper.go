package mountstest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"regexp/syntax"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vfsmount/vfsmount/mounts"
)

// WrapperOption describes the wrapper under test in [RunWrapper].
type WrapperOption func(*wrapperConfig)

type wrapperConfig struct {
	hidesFd bool
	refused mounts.Capability // Refuses; refusal nil: none
	refusal error
}

// HidesFd says no file the wrapper returns offers [mounts.FDFile] (it must
// see every read and write). Without it, a file offers a descriptor exactly
// when the wrapped mount's file does, and the same one.
func HidesFd() WrapperOption {
	return func(c *wrapperConfig) { c.hidesFd = true }
}

// Refuses says the wrapper answers every call of the verb families caps
// with an error wrapping err (a *fs.PathError), whatever the wrapped mount
// offers, without calling it: a wrapper that freezes the tree. It still
// reports the wrapped mount's capabilities.
func Refuses(caps mounts.Capability, err error) WrapperOption {
	return func(c *wrapperConfig) { c.refused, c.refusal = caps, err }
}

// RunWrapper checks that wrap returns a faithful forwarder: a wrapper (a
// decorator, an observer) that must offer exactly what it wraps. It wraps
// fakes having each capability subset and checks, for each:
//
//   - capabilities: [mounts.Capabilities] of the wrapper equals that of the
//     fake, for fakes whose capabilities are their method set (the read
//     side alone, each optional part alone, all of them) and for fakes that
//     report them through [mounts.CapabilityReporter] (every subset of the
//     capabilities);
//   - descriptions and the mount table: Describe, DescribeAt and
//     [mounts.Mounts] agree;
//   - forwarding: every verb of the contract, called through the helpers of
//     package mounts on the wrapper, makes the same calls of the fake (with
//     the same arguments and the same caller) as the helper called on the
//     fake itself, and returns the same results and the same errors (a
//     *fs.PathError naming what the caller passed, wrapping the fake's own
//     error or the helper's sentinel for a verb the fake lacks). That
//     includes the options of an open ([mounts.OpenWith]), StatDir, Sync
//     and the files it opens: reads, writes,
//     Truncate, Sync and Close of an open file, whether a file is
//     [mounts.WritableFile], and its host descriptor ([HidesFd]);
//   - [Refuses]: the refused families fail without reaching the fake.
//
// The forwarding checks run on the fakes with one part, on the full fake,
// on reporting fakes lacking one capability or having one, and on a fixed
// sample of other subsets. Adding a verb to the contract means adding it
// here, and every wrapper's test then checks it.
func RunWrapper(t *testing.T, wrap func(mounts.FS) mounts.FS, opts ...WrapperOption) {
	t.Helper()
	cfg := &wrapperConfig{}
	for _, o := range opts {
		o(cfg)
	}

	// Capabilities, for every subset: cheap, so all of them.
	all := mounts.Capability(0)
	for _, p := range fakeParts {
		all |= p.caps
	}
	t.Run("Capabilities", func(t *testing.T) {
		for sub := mounts.Capability(0); sub <= all; sub++ {
			if sub&^all != 0 {
				continue
			}
			c := &core{label: "reports " + sub.String(), reported: &sub}
			got := mounts.Capabilities(wrap(reportingFake{newFullFake(c), reportsVerb{c}}))
			if !assert.Equalf(t, sub, got, "wrapper of a mount reporting %v", sub) {
				return
			}
		}
		for _, p := range append([]fakePart{{name: ""}}, fakeParts...) {
			f := newPartFake(&core{label: p.name}, p.name)
			assert.Equalf(t, mounts.Capabilities(f), mounts.Capabilities(wrap(f)), "wrapper of a mount with %q", p.name)
		}
		f := newFullFake(&core{label: "full"})
		assert.Equal(t, mounts.Capabilities(f), mounts.Capabilities(wrap(f)), "wrapper of a mount with every part")
	})

	type fake struct {
		name string
		c    *core
		fsys mounts.FS
	}
	var fakes []fake
	for _, p := range append([]fakePart{{name: ""}}, fakeParts...) {
		c := &core{label: "only " + p.name}
		label := "only-" + p.name
		if p.name == "" {
			label = "read-side"
		}
		fakes = append(fakes, fake{label, c, newPartFake(c, p.name)})
	}
	c := &core{label: "full"}
	fakes = append(fakes, fake{"full", c, newFullFake(c)})
	var subsets []mounts.Capability
	for _, p := range fakeParts {
		if p.caps != 0 {
			subsets = append(subsets, p.caps, all&^p.caps)
		}
	}
	rnd := rand.New(rand.NewPCG(14, 2))
	for range 16 {
		subsets = append(subsets, mounts.Capability(rnd.Uint32())&all)
	}
	subsets = append(subsets, 0, mounts.CapMutating, all)
	for _, sub := range subsets {
		r := sub
		c := &core{label: "reports " + r.String(), reported: &r}
		fakes = append(fakes, fake{"reports-" + strings.ReplaceAll(r.String(), "|", "+"), c, reportingFake{newFullFake(c), reportsVerb{c}}})
	}

	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			w := wrap(f.fsys)
			assert.Equal(t, mounts.Describe(f.fsys), mounts.Describe(w), "Describe")
			for _, name := range []string{".", "a", "d/x"} {
				assert.Equalf(t, mounts.DescribeAt(f.fsys, name), mounts.DescribeAt(w, name), "DescribeAt(%q)", name)
			}
			assert.Equal(t, mounts.Mounts(f.fsys), mounts.Mounts(w), "mount table")
			checkOffers(t, f.c, f.fsys, w)
			caps := mounts.Capabilities(f.fsys)
			for _, s := range wrapperSteps {
				refused := cfg.refusal != nil && s.cap != 0 && cfg.refused.Has(s.cap)
				direct := &probe{ctx: probeCtx, fsys: f.fsys}
				s.run(direct)
				want := f.c.take()
				through := &probe{ctx: probeCtx, fsys: w}
				s.run(through)
				got := f.c.take()
				if refused {
					assert.Emptyf(t, got, "%s: a refused call reached the mount", s.name)
					for _, err := range through.errs {
						var pe *fs.PathError
						if assert.ErrorAsf(t, err, &pe, "%s: refusal %v is not a *fs.PathError", s.name, err) {
							assert.ErrorIsf(t, err, cfg.refusal, "%s: refusal", s.name)
						}
					}
					assert.NotEmptyf(t, through.errs, "%s: nothing was refused", s.name)
					continue
				}
				if s.cap != 0 && caps.Has(s.cap) && s.records {
					// The fake has the verb: the direct call reached it.
					assert.NotEmptyf(t, want, "%s: the fake recorded nothing (a broken check)", s.name)
				}
				assert.Equalf(t, want, got, "%s: calls that reached the mount", s.name)
				assert.Equalf(t, direct.out.String(), through.out.String(), "%s: results", s.name)
				wantFds := direct.fds
				if cfg.hidesFd && len(wantFds) > 0 {
					wantFds = make([]uintptr, len(direct.fds))
				}
				assert.Equalf(t, wantFds, through.fds, "%s: host descriptors of the files opened", s.name)
			}
		})
	}
}

// checkOffers checks that w forwards the pages fsys offers
// ([mounts.PageOfferer]) and the sink's removal. The names offered are
// ones no rule of RunWrapper's callers denies.
func checkOffers(t *testing.T, c *core, fsys, w mounts.FS) {
	t.Helper()
	var got []string
	offers := mounts.OfferPages(w, func(name string, data []byte) { got = append(got, name+": "+string(data)) })
	_, has := fsys.(mounts.PageOfferer)
	assert.Equal(t, has, offers, "OfferPages: the wrapper offers pages exactly when the mount does")
	if !has {
		return
	}
	c.offer("a")
	c.offer("d/x")
	assert.Equal(t, []string{"a: pages of a", "d/x: pages of d/x"}, got, "offered pages reach the sink")
	assert.True(t, mounts.OfferPages(w, nil))
	c.offer("a")
	assert.Len(t, got, 2, "no page reaches a sink once it is removed")
}

// probeCtx is the context every call of RunWrapper carries: the fakes
// record its caller, so a wrapper that drops the context is seen.
var probeCtx = mounts.WithCaller(context.Background(), mounts.Caller{Face: "tool", CallID: "mountstest", Uid: 7, Gid: 8})

// probe runs the calls of one step against one tree and writes down what
// came back.
type probe struct {
	ctx  context.Context
	fsys mounts.FS
	out  strings.Builder
	errs []error
	fds  []uintptr // per file opened: its descriptor, 0 for none
}

// res writes down the result of one call and reports whether it succeeded.
func (p *probe) res(what string, v any, err error) bool {
	if err != nil {
		p.errs = append(p.errs, err)
		fmt.Fprintf(&p.out, "%s: %s\n", what, describeErr(err))
		return false
	}
	fmt.Fprintf(&p.out, "%s: %#v\n", what, v)
	return true
}

// sentinels are the errors describeErr checks a result against with
// errors.Is, so that a wrapper that replaced an error by one with the same
// text is seen.
var sentinels = []error{errFake, mounts.ErrReadOnly, mounts.ErrNotSupported, mounts.ErrDenied,
	fs.ErrNotExist, fs.ErrInvalid, fs.ErrPermission, fs.ErrExist}

func describeErr(err error) string {
	var b strings.Builder
	if pe, ok := err.(*fs.PathError); ok {
		fmt.Fprintf(&b, "*fs.PathError{Op: %q, Path: %q} ", pe.Op, pe.Path)
	} else {
		fmt.Fprintf(&b, "%T ", err)
	}
	b.WriteString(err.Error())
	for _, s := range sentinels {
		if errors.Is(err, s) {
			fmt.Fprintf(&b, " [is %v]", s)
		}
	}
	return b.String()
}

// file writes down what an open file is, then exercises it: read, stat,
// and for a writable file write, truncate and sync, then close twice.
func (p *probe) file(what string, f mounts.File) {
	var fd uintptr
	if d, ok := f.(mounts.FDFile); ok {
		fd = d.Fd()
	}
	p.fds = append(p.fds, fd)
	w, writable := f.(mounts.WritableFile)
	fmt.Fprintf(&p.out, "%s: writable=%v\n", what, writable)
	if writable {
		n, err := w.WriteAt([]byte("xyz"), 1)
		p.res(what+" WriteAt", n, err)
		p.res(what+" Truncate", nil, w.Truncate(2))
		p.res(what+" Sync", nil, w.Sync())
	}
	buf := make([]byte, 8)
	n, err := f.ReadAt(buf, 3)
	p.res(what+" ReadAt", fmt.Sprintf("%d %q", n, buf[:n]), err)
	a, err := f.Stat()
	p.res(what+" Stat", a, err)
	p.res(what+" Close", nil, f.Close())
	p.res(what+" Close again", nil, f.Close())
}

// wrapperStep is one verb family's calls. cap is the family (0: the read
// side and the parts that are not capabilities); records says a call of
// the family, when the fake has it, reaches the fake's record.
type wrapperStep struct {
	name    string
	cap     mounts.Capability
	records bool
	run     func(p *probe)
}

var wrapperSteps = []wrapperStep{
	{"Stat", 0, false, func(p *probe) {
		for _, n := range []string{".", "a", "fail"} {
			a, err := p.fsys.Stat(p.ctx, n)
			p.res("Stat "+n, a, err)
		}
	}},
	{"ReadDir", 0, false, func(p *probe) {
		for _, n := range []string{".", "fail"} {
			e, err := p.fsys.ReadDir(p.ctx, n)
			p.res("ReadDir "+n, e, err)
		}
	}},
	{"StatDir", 0, false, func(p *probe) {
		for _, n := range []string{".", "fail"} {
			e, a, err := mounts.StatDir(p.ctx, p.fsys, n)
			p.res("StatDir "+n, []any{e, a}, err)
		}
	}},
	{"Open", 0, true, func(p *probe) {
		for _, n := range []string{"a", "fd", "ferr", "fail"} {
			if f, err := p.fsys.Open(p.ctx, n); p.res("Open "+n, nil, err) {
				p.file("Open "+n, f)
			}
		}
		// Read-only flags are Open, through OpenFile too.
		if f, err := mounts.OpenFile(p.ctx, p.fsys, "a", os.O_RDONLY, 0); p.res("OpenFile a O_RDONLY", nil, err) {
			p.file("OpenFile a O_RDONLY", f)
		}
		// The options of an open reach the mount.
		for _, o := range []mounts.OpenOptions{{PagesKept: true}, {InCase: true}, {PagesKept: true, InCase: true}} {
			what := fmt.Sprintf("OpenWith a %+v", o)
			if f, err := mounts.OpenWith(p.ctx, p.fsys, "a", o); p.res(what, nil, err) {
				p.file(what, f)
			}
		}
	}},
	{"ReadLink", 0, false, func(p *probe) {
		for _, n := range []string{"l", "fail"} {
			s, err := p.fsys.ReadLink(p.ctx, n)
			p.res("ReadLink "+n, s, err)
		}
	}},
	{"OpenFile", mounts.CapWrite, true, func(p *probe) {
		for _, o := range []struct {
			name string
			flag int
		}{
			{"a", os.O_RDWR | os.O_CREATE | os.O_TRUNC},
			{"a", os.O_WRONLY | os.O_APPEND},
			{"fd", os.O_WRONLY},
			{"ro", os.O_WRONLY},
			{"ferr", os.O_RDWR},
			{"fail", os.O_WRONLY | os.O_CREATE | os.O_EXCL},
		} {
			what := fmt.Sprintf("OpenFile %s %#x", o.name, o.flag)
			if f, err := mounts.OpenFile(p.ctx, p.fsys, o.name, o.flag, 0o640); p.res(what, nil, err) {
				p.file(what, f)
			}
		}
		p.res("WriteFile a", nil, mounts.WriteFile(p.ctx, p.fsys, "a", []byte("data"), 0o600))
		p.res("Mknod regular f", nil, mounts.Mknod(p.ctx, p.fsys, "f", 0o600, 0))
	}},
	{"Truncate", mounts.CapTruncate, true, func(p *probe) {
		p.res("Truncate a", nil, mounts.Truncate(p.ctx, p.fsys, "a", 3))
		p.res("Truncate fail", nil, mounts.Truncate(p.ctx, p.fsys, "fail", 0))
	}},
	{"Mkdir", mounts.CapMkdir, true, func(p *probe) {
		p.res("Mkdir d", nil, mounts.Mkdir(p.ctx, p.fsys, "d", 0o750|fs.ModeSetgid))
		p.res("Mkdir fail", nil, mounts.Mkdir(p.ctx, p.fsys, "fail", 0o755))
	}},
	{"Remove", mounts.CapRemove, true, func(p *probe) {
		p.res("Unlink a", nil, mounts.Unlink(p.ctx, p.fsys, "a"))
		p.res("Unlink fail", nil, mounts.Unlink(p.ctx, p.fsys, "fail"))
		p.res("Rmdir d", nil, mounts.Rmdir(p.ctx, p.fsys, "d"))
		p.res("Rmdir fail", nil, mounts.Rmdir(p.ctx, p.fsys, "fail"))
	}},
	{"Rename", mounts.CapRename, true, func(p *probe) {
		p.res("Rename a b", nil, mounts.Rename(p.ctx, p.fsys, "a", "b", mounts.RenameNoReplace))
		p.res("Rename exchange", nil, mounts.Rename(p.ctx, p.fsys, "a", "b", mounts.RenameExchange))
		p.res("Rename fail", nil, mounts.Rename(p.ctx, p.fsys, "fail", "b", 0))
	}},
	{"Symlink", mounts.CapSymlink, true, func(p *probe) {
		p.res("Symlink l", nil, mounts.Symlink(p.ctx, p.fsys, "../t", "l"))
		p.res("Symlink fail", nil, mounts.Symlink(p.ctx, p.fsys, "t", "fail"))
	}},
	{"Link", mounts.CapLink, true, func(p *probe) {
		p.res("Link a b", nil, mounts.Link(p.ctx, p.fsys, "a", "b"))
		p.res("Link fail", nil, mounts.Link(p.ctx, p.fsys, "fail", "b"))
	}},
	{"Mknod", mounts.CapMknod, true, func(p *probe) {
		p.res("Mknod fifo", nil, mounts.Mknod(p.ctx, p.fsys, "p", fs.ModeNamedPipe|0o640, 0))
		p.res("Mknod device", nil, mounts.Mknod(p.ctx, p.fsys, "null", fs.ModeDevice|fs.ModeCharDevice|0o666, mounts.MakeDev(1, 3)))
		p.res("Mknod fail", nil, mounts.Mknod(p.ctx, p.fsys, "fail", fs.ModeSocket|0o600, 0))
	}},
	{"Chmod", mounts.CapChmod, true, func(p *probe) {
		p.res("Chmod a", nil, mounts.Chmod(p.ctx, p.fsys, "a", 0o4711))
		p.res("Chmod fail", nil, mounts.Chmod(p.ctx, p.fsys, "fail", 0))
	}},
	{"Chown", mounts.CapChown, true, func(p *probe) {
		p.res("Chown a", nil, mounts.Chown(p.ctx, p.fsys, "a", 5, -1))
		p.res("Chown fail", nil, mounts.Chown(p.ctx, p.fsys, "fail", 0, 0))
	}},
	{"Chtimes", mounts.CapChtimes, true, func(p *probe) {
		p.res("Chtimes a", nil, mounts.Chtimes(p.ctx, p.fsys, "a", time.Time{}, fakeTime))
		p.res("Chtimes fail", nil, mounts.Chtimes(p.ctx, p.fsys, "fail", fakeTime, fakeTime))
	}},
	{"Xattr", mounts.CapXattr, false, func(p *probe) {
		for _, n := range []string{"a", "fail"} {
			v, err := mounts.GetXattr(p.ctx, p.fsys, n, "user.k")
			p.res("GetXattr "+n, v, err)
			l, err := mounts.ListXattr(p.ctx, p.fsys, n)
			p.res("ListXattr "+n, l, err)
		}
	}},
	{"SetXattr", mounts.CapSetXattr, true, func(p *probe) {
		p.res("SetXattr a", nil, mounts.SetXattr(p.ctx, p.fsys, "a", "user.k", []byte("v"), mounts.XattrCreate))
		p.res("SetXattr fail", nil, mounts.SetXattr(p.ctx, p.fsys, "fail", "user.k", nil, 0))
		p.res("RemoveXattr a", nil, mounts.RemoveXattr(p.ctx, p.fsys, "a", "user.k"))
		p.res("RemoveXattr fail", nil, mounts.RemoveXattr(p.ctx, p.fsys, "fail", "user.k"))
	}},
	{"StatFS", mounts.CapStatFS, false, func(p *probe) {
		st, err := mounts.StatFS(p.ctx, p.fsys)
		p.res("StatFS", st, err)
	}},
	{"Search", mounts.CapSearch, true, func(p *probe) {
		re := syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune("abc")}
		for _, d := range []string{".", "d", "fail"} {
			names, complete, err := mounts.Candidates(p.ctx, p.fsys, d, &re)
			p.res("Candidates "+d, fmt.Sprint(names, complete), err)
		}
	}},
	{"Sync", 0, false, func(p *probe) {
		for _, n := range []string{".", "a", "fail"} {
			p.res("Sync "+n, nil, mounts.Sync(p.ctx, p.fsys, n))
		}
	}},
}
