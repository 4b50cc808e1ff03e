package gitfs

import (
	"context"
	"io"
	"path"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/readpattern"
)

// walker works ahead of the programs reading the mount, in the background
// (see "Walks and scans" in the package doc). It warms what listing a
// directory with its attributes costs (StatDir: the sizes of its blobs,
// from their headers, and its subdirectories' trees, for their link
// counts) for the directories a walk is about to list; and while a scan
// is on, as the mount's read-pattern detector (package readpattern) tells,
// it decodes the small files the scan reads next and offers them to the
// page sink a face registered ([mounts.PageOfferer]).
//
// A walk is told from a lone listing by its shape: a directory listed with
// StatDir right after its parent was (find, tar, ls -R, grep -r all do
// this). The subdirectories of both are then queued, the newest listing's
// on top, so the worker follows a depth-first walker one step ahead. A walk
// that only lists (find, ls -R) decodes nothing. During a scan, two more
// kinds of work are queued on top: the files after the one that started a
// directory's scan, and the files of each directory listed.
type walker struct {
	f   *FS
	det *readpattern.Detector
	th  readpattern.Thresholds

	// sink receives the pages decoded ahead; nil when no face asked.
	sink atomic.Pointer[mounts.PageSink]

	mu     sync.Mutex
	cond   sync.Cond
	stack  []job // to do, the next at the end
	active int   // jobs the workers are doing
	closed bool
	wg     sync.WaitGroup

	// warmed counts the trees the workers warmed, decoded the blobs they
	// decoded ahead, offered the pages they offered, for tests.
	warmed, decoded, offered atomic.Int64
}

// job is one thing to do: a directory to warm, t the tree of the
// directory name, whose small files are decoded ahead during a scan, once
// per scan; or a file to decode ahead, e the entry of the file name, and
// to offer when the directory is listed or its scan started (a page is
// offered when the kernel knows its file: a directory warmed ahead is
// offered when the scan lists it).
// Files are jobs of their own so that the workers decode the files of one
// directory side by side, in the order the scan reads them.
type job struct {
	t     *tree
	e     *entry
	name  string
	offer bool
}

// walkStack bounds the jobs queued; past it the oldest are dropped (the
// walk has moved on, or they are listed on demand). walkWorkers is how
// many workers do them: during a scan they decode ahead of a reader that
// waits on each decode it meets first, and a cold pack is read from disk,
// so one is too few even on two CPUs; four were measured faster on a cold
// full read but slower (20 %) on a full read with the kernel cold and the
// content decoded, where they only compete with the reader for the CPUs.
const (
	walkStack   = 4096
	walkWorkers = 2
)

func newWalker(f *FS) *walker {
	w := &walker{f: f, det: readpattern.New(readpattern.Default, nil), th: readpattern.Default}
	w.cond.L = &w.mu
	for range walkWorkers {
		w.wg.Add(1)
		go w.work()
	}
	return w
}

// OfferPages registers the sink of the pages decoded ahead
// (mounts.PageOfferer). A git mount always offers them.
func (f *FS) OfferPages(sink mounts.PageSink) bool {
	if sink == nil {
		f.walk.sink.Store(nil)
	} else {
		f.walk.sink.Store(&sink)
	}
	return true
}

// listed is told that StatDir listed t, the directory name (whose
// subdirectories' trees are decoded, for their link counts). If t's parent
// was listed too, a walk is under way: the subdirectories of the parent
// and of t are queued. During a scan t's own files are queued on top: the
// scan reads them next.
func (w *walker) listed(name string, t *tree) {
	subs := w.subdirs(name, t)
	for _, c := range subs {
		c.t.parent.Store(t)
	}
	t.warm.Store(true) // StatDir did the work
	if p := t.parent.Load(); p != nil && name != "." {
		// The parent's tree by name, not by the pointer (a tree can
		// be at several names): its entries are offered by name.
		dir := path.Dir(name)
		if _, pt, err := w.f.dir(context.Background(), dir); err == nil && pt != nil && !pt.walked.Swap(true) {
			w.push(w.subdirs(dir, pt)...) // t's siblings, warmed after t's subdirectories
		}
		t.walked.Store(true)
		w.push(subs...)
	}
	if scan := w.det.Scan(); scan != 0 && t.offered.Swap(scan) != scan {
		w.push(w.files(name, t, "", true)...)
	}
}

// opened is told of every file opened. The detector decides whether it is
// part of a scan; when it starts one in its directory, the files after it
// there are queued on top, if ahead: a scan whose reader reads side by
// side itself (mounts.OpenOptions.Scan) is only counted, so that the
// index build keeps out of its way.
func (w *walker) opened(name string, ahead bool) {
	if !w.det.Opened(name).Started || !ahead {
		return
	}
	dir := path.Dir(name)
	if _, t, err := w.f.dir(context.Background(), dir); err == nil && t != nil {
		js := w.files(dir, t, path.Base(name), true)
		w.prefetch(name, t, js)
		w.push(js...)
	}
}

// prefetch fetches, in a partial clone, the file name (in t) whose scan
// starts and the files js the scan reads ahead, in one batch, without
// waiting: the reads that come next wait for it rather than fetching one
// by one. Not for the files a search named (FS.prefetchNames has them in
// a batch of their own): a search reads those and no others.
func (w *walker) prefetch(name string, t *tree, js []job) {
	f := w.f
	if f.obj.Promisor() == "" {
		return
	}
	if c := f.candidates.Load(); c != nil && (*c)[name] {
		return
	}
	var hs []plumbing.Hash
	if e := t.find(path.Base(name)); e != nil {
		hs = append(hs, e.hash)
	}
	for _, j := range js {
		hs = append(hs, j.e.hash)
	}
	f.obj.PrefetchAsync(hs)
}

// files returns the jobs of the regular files of t (the directory name)
// whose names sort after after, in name order: with after set, within the
// thresholds' bounds of what one directory's scan reads ahead (sizes not
// known yet count for nothing: a file job checks its size itself). offer
// says the jobs offer the pages they decode: the kernel knows the files
// (it listed them, or read one after which they come), or is about to.
func (w *walker) files(name string, t *tree, after string, offer bool) []job {
	var js []job
	n, bytes := w.th.DirFiles, w.th.DirBytes
	for i := range t.entries {
		e := &t.entries[i]
		if (e.kind != kindFile && e.kind != kindExec) || e.name <= after {
			continue
		}
		size := e.loadSize()
		if size > w.th.FileMax {
			continue
		}
		if after != "" {
			if n == 0 || size > bytes {
				break
			}
			n, bytes = n-1, bytes-max(size, 0)
		}
		js = append(js, job{e: e, name: mounts.Join(name, e.name), offer: offer})
	}
	return js
}

// subdirs returns the jobs of t's subdirectories (t is the directory name)
// whose trees are in the tree cache.
func (w *walker) subdirs(name string, t *tree) []job {
	var subs []job
	for i := range t.entries {
		if e := &t.entries[i]; e.kind == kindDir {
			if c := w.f.trees.get(e.hash); c != nil {
				subs = append(subs, job{t: c, name: mounts.Join(name, e.name)})
			}
		}
	}
	return subs
}

// push queues js so that js[0] is done first. A tree that is warm is
// queued only when a scan is on that has not had its files.
func (w *walker) push(js ...job) {
	if len(js) == 0 {
		return
	}
	scan := w.det.Scan()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	for i := len(js) - 1; i >= 0; i-- {
		j := js[i]
		if j.e != nil || !j.t.warm.Load() || (scan != 0 && j.t.decoded.Load() != scan) {
			w.stack = append(w.stack, j)
		}
	}
	if over := len(w.stack) - walkStack; over > 0 {
		w.stack = append(w.stack[:0], w.stack[over:]...)
	}
	w.cond.Signal()
}

func (w *walker) work() {
	defer w.wg.Done()
	buf := make([]byte, w.th.FileMax)
	for {
		w.mu.Lock()
		for len(w.stack) == 0 && !w.closed {
			w.cond.Wait()
		}
		if w.closed {
			w.mu.Unlock()
			return
		}
		j := w.stack[len(w.stack)-1]
		w.stack[len(w.stack)-1] = job{}
		w.stack = w.stack[:len(w.stack)-1]
		w.active++
		w.mu.Unlock()
		w.do(j, buf)
		w.mu.Lock()
		w.active--
		w.mu.Unlock()
	}
}

// do is one job: for a directory, it reads what StatDir of j.t needs and,
// while a scan is on, queues its small files; for a file, while the scan
// is on, it decodes the file into the blob cache and offers it. Errors
// are left for StatDir and Open to meet and report.
func (w *walker) do(j job, buf []byte) {
	if w.f.closed.Load() {
		return
	}
	if e := j.e; e != nil {
		if w.det.Scan() == 0 {
			return // the scan is over
		}
		if w.f.obj.WouldFetch(e.hash) {
			// A partial clone's file no batch brings: one fetch
			// each is not reading ahead (see prefetch).
			return
		}
		size := e.loadSize()
		if size < 0 {
			// Not listed yet (a scan started by opens alone): the
			// header says.
			s, err := w.f.obj.Size(e.hash)
			if err != nil {
				return
			}
			e.storeSize(s)
			size = s
		}
		if size <= w.th.FileMax {
			w.ahead(j.name, e.hash, buf, j.offer)
		}
		return
	}
	t := j.t
	if !t.warm.Load() {
		if err := w.f.prefetchDir(context.Background(), t, "", true); err != nil {
			// Offline, or the remote down: the sizes are left for
			// StatDir to fail on, rather than tried one by one here.
			return
		}
		for i := range t.entries {
			if w.f.closed.Load() {
				return
			}
			e := &t.entries[i]
			switch {
			case e.kind == kindDir:
				_, _ = w.f.tree(e.hash)
			case e.kind == kindGitlink || e.loadSize() >= 0:
			default:
				if s, err := w.f.obj.Size(e.hash); err == nil {
					e.storeSize(s)
				}
			}
		}
		t.warm.Store(true)
		w.warmed.Add(1)
	}
	if scan := w.det.Scan(); scan != 0 && t.decoded.Swap(scan) != scan {
		w.push(w.files(j.name, t, "", false)...)
	}
}

// ahead decodes the blob h of the file name into the blob cache, unless
// it is there, and with offer set offers its content to the sink.
func (w *walker) ahead(name string, h plumbing.Hash, buf []byte, offer bool) {
	b, err := w.f.blobs.pin(h)
	if b == nil && err == nil {
		b, err = w.f.blobs.acquire(context.Background(), h, func(context.Context) (io.ReadCloser, int64, error) {
			return w.f.obj.Reader(plumbing.BlobObject, h)
		})
		if err == nil {
			w.decoded.Add(1)
		}
	}
	if err != nil {
		return
	}
	sink := w.sink.Load()
	if sink == nil || !offer {
		w.f.blobs.release(b)
		return
	}
	// Offered whole: from here on the page cache has it (or, should the
	// face drop the offer, the kernel reads it on demand and it is
	// decoded again).
	defer w.f.blobs.releaseKept(b, true)
	data, err := b.bytes(buf)
	if err != nil {
		return
	}
	(*sink)(name, data)
	w.offered.Add(1)
}

// scanning reports whether a scan is on.
func (w *walker) scanning() bool { return w.det.Scan() != 0 }

// close stops the workers and waits for them; what is queued is dropped.
func (w *walker) close() {
	w.mu.Lock()
	w.closed = true
	w.stack = nil
	w.cond.Broadcast()
	w.mu.Unlock()
	w.wg.Wait()
}
