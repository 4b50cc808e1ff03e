package gitfs

import (
	"context"
	"io"
	"path"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// walker warms, in the background, what listing a directory with its
// attributes costs (StatDir: the sizes of its blobs, from their headers,
// and its subdirectories' trees, for their link counts) for the directories
// a walk is about to list. See "Walks" in the package doc.
//
// A walk is told from a lone listing by its shape: a directory listed with
// StatDir right after its parent was (find, tar, ls -R, grep -r all do
// this). The subdirectories of both are then queued, the newest listing's
// on top, so the worker follows a depth-first walker one step ahead. Blob
// content is read ahead only while a scan reads the files it walks (see
// opened): a walk that only lists (find, ls -R) decodes nothing.
type walker struct {
	f *FS

	mu     sync.Mutex
	cond   sync.Cond
	stack  []*tree // to warm, the next at the end
	closed bool
	wg     sync.WaitGroup

	// lastDir is the directory of the file opened last; scanUntil (Unix
	// nanoseconds) is when the last scan seen stops counting.
	lastDir   atomic.Pointer[string]
	scanUntil atomic.Int64

	// warmed counts the trees the workers warmed, decoded the blobs they
	// decoded ahead or found decoded, for tests.
	warmed, decoded atomic.Int64
}

// walkStack bounds the trees queued; past it the oldest are dropped (the
// walk has moved on, or they are listed on demand). During a scan, files
// up to decodeAheadMax are decoded ahead; scanWindow is how long a scan
// counts after its last sign.
const (
	walkStack      = 4096
	decodeAheadMax = 1 << 20
	scanWindow     = time.Second
)

func newWalker(f *FS) *walker {
	w := &walker{f: f}
	w.cond.L = &w.mu
	// A worker per CPU but one, which the walking program and the kernel
	// need; at most four.
	for range max(1, min(4, runtime.GOMAXPROCS(0)-1)) {
		w.wg.Add(1)
		go w.work()
	}
	return w
}

// listed is told that StatDir listed t (whose subdirectories' trees are
// decoded, for their link counts). If t's parent was listed too, a walk is
// under way: the subdirectories of the parent and of t are queued.
func (w *walker) listed(t *tree) {
	subs := w.subdirs(t)
	for _, c := range subs {
		c.parent.Store(t)
	}
	t.warm.Store(true) // StatDir did the work
	p := t.parent.Load()
	if p == nil {
		return
	}
	if !p.walked.Swap(true) {
		w.push(w.subdirs(p)) // t's siblings, warmed after t's subdirectories
	}
	t.walked.Store(true)
	w.push(subs)
}

// subdirs returns the decoded trees of t's subdirectories that are in the
// tree cache.
func (w *walker) subdirs(t *tree) []*tree {
	var subs []*tree
	for i := range t.entries {
		if e := &t.entries[i]; e.kind == kindDir {
			if c := w.f.trees.get(e.hash); c != nil {
				subs = append(subs, c)
			}
		}
	}
	return subs
}

// push queues ts so that ts[0] is warmed first.
func (w *walker) push(ts []*tree) {
	if len(ts) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	for i := len(ts) - 1; i >= 0; i-- {
		if !ts[i].warm.Load() {
			w.stack = append(w.stack, ts[i])
		}
	}
	if over := len(w.stack) - walkStack; over > 0 {
		w.stack = append(w.stack[:0], w.stack[over:]...)
	}
	w.cond.Signal()
}

func (w *walker) work() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		for len(w.stack) == 0 && !w.closed {
			w.cond.Wait()
		}
		if w.closed {
			w.mu.Unlock()
			return
		}
		t := w.stack[len(w.stack)-1]
		w.stack[len(w.stack)-1] = nil
		w.stack = w.stack[:len(w.stack)-1]
		w.mu.Unlock()
		w.warm(t)
	}
}

// warm reads what StatDir of t needs and, while files are being read in
// a scan, decodes t's small files into the blob cache. Errors are left
// for StatDir and Open to meet and report.
func (w *walker) warm(t *tree) {
	if !t.warm.Load() {
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
	if !w.scanning() || t.decoded.Swap(true) {
		return
	}
	for i := range t.entries {
		if w.f.closed.Load() || !w.scanning() {
			t.decoded.Store(false)
			return
		}
		e := &t.entries[i]
		if (e.kind != kindFile && e.kind != kindExec) || e.loadSize() < 0 || e.loadSize() > decodeAheadMax {
			continue
		}
		h := e.hash
		b, err := w.f.blobs.acquire(context.Background(), h, func(context.Context) (io.ReadCloser, int64, error) {
			return w.f.obj.Reader(plumbing.BlobObject, h)
		})
		if err == nil {
			w.f.blobs.release(b)
			w.decoded.Add(1)
		}
	}
}

// opened is told of every file opened. A file opened in the directory of
// the one opened before it is a scan (tar, cp -r, a build reading its
// sources): for scanWindow after it, the walk decodes ahead too.
func (w *walker) opened(name string) {
	dir := path.Dir(name)
	if prev := w.lastDir.Swap(&dir); prev != nil && *prev == dir {
		w.scanUntil.Store(time.Now().Add(scanWindow).UnixNano())
	}
}

func (w *walker) scanning() bool { return time.Now().UnixNano() < w.scanUntil.Load() }

// close stops the workers and waits for them; what is queued is dropped.
func (w *walker) close() {
	w.mu.Lock()
	w.closed = true
	w.stack = nil
	w.cond.Broadcast()
	w.mu.Unlock()
	w.wg.Wait()
}
