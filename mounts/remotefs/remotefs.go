// Package remotefs is a mount whose files are on another machine: a
// directory served there by a peer (package peer, `vfsmount peer DIR`)
// over one byte stream (an ssh channel, `kubectl exec -i`, a pipe).
//
// It sends the peer coarse requests (package wire), not system calls: a
// listing comes with the attributes of every entry in one round trip, a
// small file comes whole with its open, writes are pipelined and
// acknowledged in order, and a content search runs on the peer. What it
// learns (attributes, listings, small files' content) it keeps until the
// peer's change stream (inotify on the remote directory: its own writes
// and anyone else's) says a name changed, so a warm stat costs no round
// trip at all.
//
// When the link drops, every operation fails within Options.Timeout with
// an EIO that says so (never a hang), files opened before fail alike, and
// the mount dials again with backoff; once connected it serves again,
// with nothing cached from before.
package remotefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// Dialer opens a new byte stream to a peer that serves the directory and
// sends first on it, as early as the stream can carry it: before the peer
// is known to have started, where it can (the daemon's hello and first
// request then travel with the start of the peer). The peer's hello is
// read by the mount.
type Dialer func(ctx context.Context, first []byte) (io.ReadWriteCloser, error)

// StreamDialer makes a Dialer of dial, which opens a stream that carries
// bytes at once (a pipe, a socket, a command's stdio): first is written
// as the peer reads it, and before anything else written to the stream.
// The stream it returns is a wrapper: one with a back link (BackLink)
// needs a Dialer of its own.
func StreamDialer(dial func(ctx context.Context) (io.ReadWriteCloser, error)) Dialer {
	return func(ctx context.Context, first []byte) (io.ReadWriteCloser, error) {
		rwc, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		s := &firstStream{ReadWriteCloser: rwc, sent: make(chan struct{})}
		go func() {
			// Not here: a stream without a buffer takes first only
			// once the peer reads, after its own hello is read.
			defer close(s.sent)
			_, s.err = rwc.Write(first)
		}()
		return s, nil
	}
}

// firstStream is a stream whose first bytes are being written.
type firstStream struct {
	io.ReadWriteCloser
	sent chan struct{}
	err  error // writing first; read once sent is closed
}

func (s *firstStream) Write(p []byte) (int, error) {
	<-s.sent
	if s.err != nil {
		return 0, s.err
	}
	return s.ReadWriteCloser.Write(p)
}

// Options configure a remote mount.
type Options struct {
	// Dial connects to the peer; called again after the link drops.
	Dial Dialer
	// Source describes the mount for the mount table and the model:
	// "ssh://dev-box". It never holds a secret.
	Source string
	// ReadOnly offers no write capability at all (EROFS).
	ReadOnly bool
	// Timeout bounds how long an operation waits for a link that is
	// down, and how long a link may stay silent with requests pending
	// before it is declared lost. Default 5s.
	Timeout time.Duration
	// Build is this binary's version, sent in the hello.
	Build string
	// Logger gets the link's state changes.
	Logger *slog.Logger
	// CacheBytes bounds the content of small files kept here; default
	// 64 MiB.
	CacheBytes int64
}

// FS is a writable remote mount; ReadOnlyFS is the read side.
type FS struct{ *ReadOnlyFS }

// ReadOnlyFS is a remote mount without write capabilities.
type ReadOnlyFS struct {
	opts  Options
	log   *slog.Logger
	cache *cache

	mu       sync.Mutex
	sess     *session
	up       chan struct{} // closed when a session is up (replaced when it goes down)
	lastErr  error
	closed   bool
	redial   chan struct{}
	stop     chan struct{}
	done     chan struct{}
	watching bool
	onChange []func(names ...string)
	execs    map[uint64]*remoteExec
	execID   uint64

	nmu      sync.Mutex // the change notices not yet delivered
	nqueue   []string
	nrunning bool

	// writes counts the bytes of writes sent and not yet answered, over
	// every open file: any other request waits for them first (barrier),
	// so a write is seen by whatever follows it, through any handle.
	wmu    sync.Mutex
	wcond  *sync.Cond
	writes int64
	posted int // changes posted and not yet answered (behind.go)

	bh behind // write-behind (behind.go)

	pmu         sync.Mutex
	prefetching bool         // a read-ahead runs (readAhead)
	offering    atomic.Int64 // offers of pages under way (offer)
	nextAhead   string       // the one to run after it
	// firstIn, until closed, is the first answer of the running chain,
	// asked for by an open in firstFrom (readAhead).
	firstIn    chan struct{}
	firstFrom  string
	prefetches atomic.Int64 // read-ahead requests answered, for tests
	chunksOut  atomic.Int64 // chunks of large files asked for and not answered
	// waitedFirst counts the opens that waited for a read-ahead's first
	// answer, for tests.
	waitedFirst atomic.Int64
	// aheadBesideChunks is the most read-ahead requests in flight while
	// chunks were out, for tests.
	aheadBesideChunks atomic.Int64
	requests          atomic.Int64 // requests sent that wait for an answer, for tests
	postedN           atomic.Int64 // changes posted (behind.go), for tests

	amu         sync.Mutex
	ahead       map[string]*openedAhead // large files opened ahead (openahead.go)
	aheadQ      []aheadCandidate        // and those to open next
	closedAhead bool                    // the mount closed: none more

	sink atomic.Pointer[mounts.PageSink] // where the content read ahead is offered (OfferPages)

	back   atomic.Pointer[back] // what the peer's commands are shown (ShowWorkspace)
	backUp atomic.Bool          // the last link carries it (ShowsWorkspace)
}

// barrier waits until every write sent, and every change posted, has
// been answered.
func (f *ReadOnlyFS) barrier() {
	f.wmu.Lock()
	for f.writes > 0 || f.posted > 0 {
		f.wcond.Wait()
	}
	f.wmu.Unlock()
}

// wrote accounts for n bytes of writes sent (n > 0) or answered (n < 0).
func (f *ReadOnlyFS) wrote(n int64) {
	f.wmu.Lock()
	f.writes += n
	if f.writes == 0 && f.posted == 0 {
		f.wcond.Broadcast()
	}
	f.wmu.Unlock()
}

// Open dials the peer and returns a *FS, or a *ReadOnlyFS with
// opts.ReadOnly. The first dial's failure is returned as it is (the
// caller names the mount): nothing is mounted.
func Open(ctx context.Context, opts Options) (mounts.FS, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 64 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f := &ReadOnlyFS{opts: opts, log: opts.Logger, cache: newCache(opts.CacheBytes), ahead: map[string]*openedAhead{},
		up: make(chan struct{}), redial: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	f.wcond = sync.NewCond(&f.wmu)
	f.bh = behind{alias: map[uint64]uint64{}, pend: map[string]int{}, own: map[string]mounts.Attr{}, fresh: map[uint64]bool{}}
	if err := f.connect(ctx); err != nil {
		return nil, err
	}
	go f.keep()
	if opts.ReadOnly {
		return f, nil
	}
	return &FS{f}, nil
}

// connect dials, exchanges the hellos and starts the session. The hello
// and the change stream's request go with the dial (over ssh, with the
// start of the peer), and the answer brings the root's attributes and
// listing: a mount and its first ls are served once the peer's first
// bytes have come, with no round trip of their own.
func (f *ReadOnlyFS) connect(ctx context.Context) error {
	s := newSession(f.opts.Build, f.events, f.cache.flush) // nothing cached outlives its session
	f.cache.flush()                                        // nothing seen before this session can be trusted
	epoch := f.cache.epoch()
	// The change stream is the first request: it goes with the hello and
	// the start of the peer, which answers it once its own hello is out.
	watch, err := s.start(&wire.Request{Op: wire.OpWatch})
	if err != nil {
		return err
	}
	rwc, err := f.opts.Dial(ctx, s.first())
	if err != nil {
		return err
	}
	s.attach(rwc)
	hello := make(chan error, 1)
	go func() {
		_, err := wire.ReadHello(rwc)
		hello <- err
	}()
	select {
	case err = <-hello:
	case <-time.After(f.opts.Timeout * 4):
		err = fmt.Errorf("the peer sent no hello within %v", f.opts.Timeout*4)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		rwc.Close()
		return err
	}
	go s.read() // what follows the hello is the session's
	// The back link comes up beside the change stream; what needs it (a
	// command, the brief) waits for it, the mount does not.
	go func() {
		defer close(s.backSettled)
		var l net.Listener
		if bl, ok := rwc.(BackLink); ok {
			l = bl.BackListener()
		}
		f.backUp.Store(l != nil)
		if l != nil {
			go f.serveBack(l)
		}
	}()
	f.mu.Lock()
	f.sess = s
	close(f.up)
	f.mu.Unlock()
	// The change stream: without it, cached answers live one second.
	resp, err := s.wait(ctx, watch)
	f.mu.Lock()
	f.watching = err == nil && resp.Err == nil
	f.mu.Unlock()
	f.cache.setWatching(f.watching)
	f.bh.mu.Lock()
	f.bh.owner = nil
	if f.watching {
		f.bh.owner = resp.Owner // a peer that says whose files it makes: changes may be posted
	}
	f.bh.mu.Unlock()
	if !f.watching {
		f.log.Warn("remote: the peer has no change stream; cached answers live one second", "source", f.opts.Source)
	} else {
		f.warmRoot(epoch, resp)
	}
	go f.monitor(s)
	return nil
}

// warmRoot caches the root's attributes and listing that the change
// stream's answer brings (asked at epoch, so that a change the stream
// reported meanwhile wins): what a mount and its first ls ask next.
func (f *ReadOnlyFS) warmRoot(epoch uint64, resp *wire.Response) {
	if resp.Attr.Mode != 0 {
		f.cache.putAttr(epoch, ".", f.attrOf(resp.Attr))
	}
	for _, d := range resp.Tree {
		if d.Name == "." {
			ents, attrs := f.listing(d.Entries)
			f.cache.putDir(epoch, ".", ents, attrs)
		}
	}
}

// monitor declares the session lost when the peer stays silent for
// Timeout with requests pending: a ping (a stat of the root) is sent
// when nothing came for a quarter of it.
func (f *ReadOnlyFS) monitor(s *session) {
	tick := time.NewTicker(f.opts.Timeout / 4)
	defer tick.Stop()
	for {
		select {
		case <-s.dead:
			f.down(s)
			return
		case <-f.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		busy := len(s.pending) > 0 || len(s.posted) > 0
		s.mu.Unlock()
		stuck := s.codec.Stuck()
		silent := time.Since(time.Unix(0, s.lastRecv.Load()))
		switch {
		case stuck > f.opts.Timeout:
			s.fail(fmt.Errorf("the link took no bytes for %v", stuck.Round(time.Millisecond)))
		case !busy && stuck == 0:
		case silent > f.opts.Timeout:
			s.fail(fmt.Errorf("no answer for %v", silent.Round(time.Millisecond)))
		case silent > f.opts.Timeout/4 && stuck == 0:
			go func() { _, _ = s.start(&wire.Request{Op: wire.OpStat, Name: "."}) }()
		}
	}
}

// down notes that s died and asks keep to dial again.
func (f *ReadOnlyFS) down(s *session) {
	f.mu.Lock()
	if f.sess == s {
		f.sess = nil
		f.lastErr = s.alive()
		f.up = make(chan struct{})
		f.log.Warn("remote: link lost", "source", f.opts.Source, "err", f.lastErr)
	}
	f.mu.Unlock()
	f.cache.flush()
	f.notify(".") // every name may have changed while the link was down
	select {
	case f.redial <- struct{}{}:
	default:
	}
}

// keep dials again, with backoff, whenever the link is down.
func (f *ReadOnlyFS) keep() {
	defer close(f.done)
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-f.stop:
			return
		case <-f.redial:
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 4*f.opts.Timeout)
			err := f.connect(ctx)
			cancel()
			if err == nil {
				f.log.Info("remote: link up again", "source", f.opts.Source)
				backoff = 100 * time.Millisecond
				break
			}
			f.mu.Lock()
			f.lastErr = err
			f.mu.Unlock()
			f.log.Debug("remote: dial failed", "source", f.opts.Source, "err", err, "retry", backoff)
			jitter := time.Duration(rand.Int64N(int64(backoff / 4)))
			select {
			case <-f.stop:
				return
			case <-time.After(backoff + jitter):
			}
			backoff = min(backoff*2, 5*time.Second)
		}
	}
}

// Close ends the session and stops dialing.
func (f *ReadOnlyFS) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	s := f.sess
	close(f.stop)
	f.mu.Unlock()
	// Writes in flight reach the peer before the link closes (each is
	// answered, or fails when the link is declared lost).
	f.barrier()
	f.closeAhead()
	if s != nil {
		s.fail(errors.New("the mount is closed"))
	}
	<-f.done
	return nil
}

// session returns the live session, waiting up to Timeout for one.
func (f *ReadOnlyFS) session(ctx context.Context) (*session, error) {
	f.mu.Lock()
	s, up, closed := f.sess, f.up, f.closed
	f.mu.Unlock()
	if closed {
		return nil, &linkError{what: "the remote mount " + f.opts.Source + " is closed"}
	}
	if s != nil {
		return s, nil
	}
	t := time.NewTimer(f.opts.Timeout)
	defer t.Stop()
	select {
	case <-up:
		f.mu.Lock()
		s = f.sess
		f.mu.Unlock()
		if s != nil {
			return s, nil
		}
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.mu.Lock()
	cause := f.lastErr
	f.mu.Unlock()
	return nil, &linkError{what: "the link to " + f.opts.Source + " is down", cause: cause}
}

// callOn sends req on s and waits for its answer. The error is the
// link's; the peer's own error is resp.Err.
func (f *ReadOnlyFS) callOn(ctx context.Context, s *session, req *wire.Request) (*wire.Response, error) {
	f.requests.Add(1)
	ch, err := s.start(req)
	if err != nil {
		return nil, &linkError{what: "the link to " + f.opts.Source + " was lost", cause: err}
	}
	resp, err := s.wait(ctx, ch)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &linkError{what: "the link to " + f.opts.Source + " was lost", cause: err}
	}
	return resp, nil
}

// do calls and folds both kinds of failure into one *fs.PathError: a
// failure of the link comes with a nil response, the peer's own error
// with its response.
func (f *ReadOnlyFS) do(ctx context.Context, req *wire.Request) (*wire.Response, error) {
	resp, _, err := f.doOn(ctx, req)
	return resp, err
}

// doOn is do, also returning the session that answered (the one a handle
// it opened belongs to).
func (f *ReadOnlyFS) doOn(ctx context.Context, req *wire.Request) (*wire.Response, *session, error) {
	op := req.Op.String()
	if err := mounts.CheckPath(op, req.Name); err != nil {
		return nil, nil, err
	}
	if req.Name2 != "" {
		if err := mounts.CheckPath(op, req.Name2); err != nil {
			return nil, nil, err
		}
	}
	if !wire.Changes(req) {
		f.barrier() // a change is applied on the peer after those before it
	}
	s, err := f.session(ctx)
	if err != nil {
		return nil, nil, mounts.PathErr(op, req.Name, err)
	}
	resp, err := f.callOn(ctx, s, req)
	if err != nil {
		return nil, nil, mounts.PathErr(op, req.Name, err)
	}
	if resp.Err != nil {
		return resp, s, resp.Err.Err(op, req.Name)
	}
	return resp, s, nil
}

// events applies the peer's change stream to the cache and passes the
// names on.
func (f *ReadOnlyFS) events(evs []wire.Event) {
	var names []string
	for _, ev := range evs {
		switch ev.Kind {
		case wire.EventChanged:
			if f.reported(ev) {
				names = append(names, ev.Name)
			}
		case wire.EventOverflow:
			f.cache.flush()
			names = append(names, ".")
		case wire.EventStdout, wire.EventStderr, wire.EventExit:
			f.execEvent(ev)
		}
	}
	if len(names) > 0 {
		f.notify(names...)
	}
}

// reported applies a change stream report of a name to the cache, and
// reports whether the kernel face is to be told of it. It decides and
// applies under f.bh.mu: a change posted meanwhile (its guess put in the
// cache and its names counted pending, at once, in post) comes wholly
// before or after. Checked apart, a report of the state the last answer
// gave a directory could be found pending-free, then compared with the
// guess of a create tar posted in it a moment later, and so drop the
// directory's whole subtree.
func (f *ReadOnlyFS) reported(ev wire.Event) bool {
	f.bh.mu.Lock()
	defer f.bh.mu.Unlock()
	if f.bh.pend[ev.Name] > 0 {
		// A change posted here, coming back: its answer says what the
		// name is then (settle), and the kernel face is told if that
		// is not what it was answered.
		return false
	}
	a := f.attrOfLocked(ev.Attr)
	if ev.State == wire.StateExists && f.cache.sameAs(ev.Name, a) {
		// As known: nothing to forget but content a rewrite within
		// the clock's granularity may have changed (or a directory's
		// entries made before the peer watched it), unless this is a
		// change made here coming back.
		if f.ownStateLocked(ev.Name, a) {
			return false
		}
		f.cache.dropContent(ev.Name)
		return true
	}
	if ev.State == wire.StateMissing {
		if _, err, ok := f.cache.stat(ev.Name); ok && errors.Is(err, fs.ErrNotExist) {
			// Known missing (a lock file made and removed here,
			// reported late): nothing to forget, and nothing to
			// tell the kernel face, which may know a file made
			// under the name since.
			return false
		}
	}
	single := ev.State == wire.StateMissing ||
		ev.State == wire.StateExists && (ev.Attr.Nlink < 2 || ev.Attr.Mode.IsDir())
	f.cache.invalidateAs(ev.Name, single)
	f.learn(ev.Name, ev.State, a)
	return true
}

// learn keeps the state a report carries of name (wire.Event.State), as
// a stat's answer would be kept: the kernel face, told the name changed,
// looks it up again and is answered from here, without a round trip.
// Not while writes of this daemon are unanswered: their files'
// attributes are asked for after them (barrier), and an event sent
// before a write's answer may show the file as it was before the write.
func (f *ReadOnlyFS) learn(name string, state wire.State, a mounts.Attr) {
	if state == wire.StateUnknown || !mounts.ValidPath(name) {
		return
	}
	f.wmu.Lock()
	writing := f.writes > 0 || f.posted > 0
	f.wmu.Unlock()
	if writing {
		return
	}
	epoch := f.cache.epoch() // after the invalidation: the state is newer
	switch state {
	case wire.StateExists:
		f.cache.putAttr(epoch, name, a)
	case wire.StateMissing:
		f.cache.putMissing(epoch, name)
	}
}

// OnChange registers fn to learn the names the peer reports changed, by
// anyone ("." when anything may have): the kernel face drops its caches
// of them. It implements mounts.ChangeNotifier.
func (f *ReadOnlyFS) OnChange(fn func(names ...string)) {
	f.mu.Lock()
	f.onChange = append(f.onChange, fn)
	f.mu.Unlock()
}

// notify queues names for the OnChange functions, which run on a
// goroutine of their own: they may block (the kernel face's invalidation
// waits for the inode a request of ours holds), and the session's reader,
// which delivers that request's answer, must not wait for them.
func (f *ReadOnlyFS) notify(names ...string) {
	f.nmu.Lock()
	f.nqueue = append(f.nqueue, names...)
	start := !f.nrunning
	f.nrunning = true
	f.nmu.Unlock()
	if start {
		go f.deliver()
	}
}

// deliver runs the OnChange functions until the queue is empty.
func (f *ReadOnlyFS) deliver() {
	for {
		f.nmu.Lock()
		names := f.nqueue
		f.nqueue = nil
		if len(names) == 0 {
			f.nrunning = false
			f.nmu.Unlock()
			return
		}
		f.nmu.Unlock()
		f.mu.Lock()
		fns := f.onChange
		f.mu.Unlock()
		for _, fn := range fns {
			fn(names...)
		}
	}
}

// Describe implements mounts.Describer. Others change the remote
// directory, but with the change stream up every change is told
// (OnChange, relayed to the kernel face): the kernel may then cache as
// for content only this process changes, and open directories without
// asking (Notified). Without it (a peer that could
// not watch) the kernel face keeps its caches short, as for a host
// directory. The description is read when the tree is built, after the
// first connection.
func (f *ReadOnlyFS) Describe() mounts.Description {
	f.mu.Lock()
	watching := f.watching
	f.mu.Unlock()
	return mounts.Description{Type: "remote", Source: f.opts.Source, External: !watching, Notified: watching}
}

// Stat implements mounts.FS.
func (f *ReadOnlyFS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	if err := mounts.CheckPath("stat", name); err != nil {
		return mounts.Attr{}, err
	}
	if a, err, ok := f.cache.stat(name); ok {
		if err != nil {
			return mounts.Attr{}, mounts.PathErr("stat", name, err)
		}
		return a, nil
	}
	epoch := f.cache.epoch()
	resp, err := f.do(ctx, &wire.Request{Op: wire.OpStat, Name: name})
	if resp == nil { // the link's error
		return mounts.Attr{}, err
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			f.cache.putMissing(epoch, name)
		}
		return mounts.Attr{}, err
	}
	a := f.attrOf(resp.Attr)
	f.cache.putAttr(epoch, name, a)
	return a, nil
}

// StatDir implements mounts.StatDirFS: one round trip for a listing and
// every entry's attributes.
func (f *ReadOnlyFS) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	if err := mounts.CheckPath("readdir", name); err != nil {
		return nil, nil, err
	}
	if ents, attrs, ok := f.cache.dir(name); ok {
		f.offerListed(name)
		return ents, attrs, nil
	}
	epoch := f.cache.epoch()
	resp, err := f.do(ctx, &wire.Request{Op: wire.OpStatDir, Name: name})
	if err != nil {
		return nil, nil, err
	}
	ents, attrs := f.listing(resp.Entries)
	f.cache.putDir(epoch, name, ents, attrs)
	return ents, attrs, nil
}

// OfferPages implements mounts.PageOfferer: when a directory whose
// files' content was read ahead is listed, and again when the first of
// them is opened, that content is offered (a program walking the tree
// reads them next), so that the kernel face can put it in the page
// cache, and their reads cost no request at all. The kernel knows their
// names at the open: the program listed the directory to find the file.
func (f *ReadOnlyFS) OfferPages(sink mounts.PageSink) bool {
	if sink == nil {
		f.sink.Store(nil)
	} else {
		f.sink.Store(&sink)
	}
	return true
}

// offerListed offers the content read ahead of the files of dir, which
// is being listed (a program walking the tree lists a directory, then
// reads its files): the kernel face keeps what arrives before it knows
// the files' names for a moment, and puts it in once it does. Offered
// before the listing is answered, so that it is there when the kernel
// face sees the listing taken in. Not marked offered: the first open
// among them offers what did not make it (offerBeside).
func (f *ReadOnlyFS) offerListed(dir string) { f.offer(dir, false) }

// offerBeside offers the content read ahead of dir's files, the first
// time one of them is opened since dir was listed, from a goroutine of
// its own: the kernel face may store them at once, and the open that
// asks is not held up meanwhile.
func (f *ReadOnlyFS) offerBeside(dir string) { f.offer(dir, true) }

// offer hands dir's pages read ahead to the sink: at once, or, beside an
// open, marked offered and from a goroutine.
func (f *ReadOnlyFS) offer(dir string, beside bool) {
	sink := f.sink.Load()
	if sink == nil {
		return
	}
	pages := f.cache.pagesOf(dir, beside)
	hand := func() {
		for _, p := range pages {
			(*sink)(p.name, p.data)
		}
	}
	if !beside {
		hand()
		return
	}
	if len(pages) == 0 {
		return
	}
	f.offering.Add(1)
	go func() {
		defer f.offering.Add(-1)
		hand()
	}()
}

// Idle reports whether no read-ahead runs and every page offered has
// been handed to the sink: what a caller that counts requests waits for.
func (f *ReadOnlyFS) Idle() bool {
	f.pmu.Lock()
	running := f.prefetching
	f.pmu.Unlock()
	return !running && f.offering.Load() == 0
}

// listing is a listing from the wire, as the contract has it.
func (f *ReadOnlyFS) listing(entries []wire.Entry) ([]mounts.DirEntry, []mounts.Attr) {
	ents := make([]mounts.DirEntry, len(entries))
	attrs := make([]mounts.Attr, len(entries))
	f.bh.mu.Lock() // once for the listing: a read-ahead's answers hold thousands
	defer f.bh.mu.Unlock()
	for i, e := range entries {
		attrs[i] = f.attrOfLocked(e.Attr)
		ents[i] = mounts.DirEntry{Name: e.Name, Type: attrs[i].Mode.Type(), Ino: attrs[i].Ino}
	}
	return ents, attrs
}

// ReadDir implements mounts.FS.
func (f *ReadOnlyFS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	ents, _, err := f.StatDir(ctx, name)
	return ents, err
}

// ReadLink implements mounts.FS.
func (f *ReadOnlyFS) ReadLink(ctx context.Context, name string) (string, error) {
	if t, ok := f.cache.link(name); ok {
		return t, nil
	}
	epoch := f.cache.epoch()
	resp, err := f.do(ctx, &wire.Request{Op: wire.OpReadLink, Name: name})
	if err != nil {
		return "", err
	}
	f.cache.putLink(epoch, name, resp.Target)
	return resp.Target, nil
}

// StatFS implements mounts.StatFSer.
func (f *ReadOnlyFS) StatFS(ctx context.Context) (mounts.FSStat, error) {
	resp, err := f.do(ctx, &wire.Request{Op: wire.OpStatFS, Name: "."})
	if err != nil {
		return mounts.FSStat{}, err
	}
	return resp.StatFS, nil
}

// GetXattr implements mounts.XattrFS. A file created here with no
// attribute set since has no security.capability (which the kernel asks
// before each write that follows a change of the file's attributes).
func (f *ReadOnlyFS) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	if attr == "security.capability" {
		if a, err, ok := f.cache.stat(name); ok && err == nil && f.freshFile(a) {
			return nil, mounts.PathErr("getxattr", name, errNoData)
		}
	}
	resp, err := f.do(ctx, &wire.Request{Op: wire.OpGetXattr, Name: name, Xattr: attr})
	if err != nil {
		return nil, err
	}
	return resp.Data, nil
}

// ListXattr implements mounts.XattrFS.
func (f *ReadOnlyFS) ListXattr(ctx context.Context, name string) ([]string, error) {
	resp, err := f.do(ctx, &wire.Request{Op: wire.OpListXattr, Name: name})
	if err != nil {
		return nil, err
	}
	return resp.Names, nil
}
