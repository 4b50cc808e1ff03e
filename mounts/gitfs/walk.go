package gitfs

import (
	"context"
	"io"
	"path"
	"runtime"
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
	closed bool
	wg     sync.WaitGroup

	// warmed counts the trees the workers warmed, decoded the blobs they
	// decoded ahead, offered the pages they offered, for tests.
	warmed, decoded, offered atomic.Int64
}

// job is one directory to work on: t, the tree of the directory name.
// With after set, it is the rest of a directory whose scan started at
// the file after (whose files after it are decoded and offered, within
// the thresholds' per-directory bounds); otherwise t is warmed, and during
// a scan its small files are decoded and offered, once per scan.
type job struct {
	t     *tree
	name  string
	after string
}

// walkStack bounds the jobs queued; past it the oldest are dropped (the
// walk has moved on, or they are listed on demand).
const walkStack = 4096

func newWalker(f *FS) *walker {
	w := &walker{f: f, det: readpattern.New(readpattern.Default, nil), th: readpattern.Default}
	w.cond.L = &w.mu
	// A worker per CPU but one, which the walking program and the kernel
	// need; at most four.
	for range max(1, min(4, runtime.GOMAXPROCS(0)-1)) {
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
	if scan := w.det.Scan(); scan != 0 && t.offered.Load() != scan {
		w.push(job{t: t, name: name})
	}
}

// opened is told of every file opened. The detector decides whether it is
// part of a scan; when it starts one in its directory, the files after it
// there are queued on top.
func (w *walker) opened(name string) {
	if !w.det.Opened(name).Started {
		return
	}
	dir := path.Dir(name)
	if _, t, err := w.f.dir(context.Background(), dir); err == nil && t != nil {
		w.push(job{t: t, name: dir, after: path.Base(name)})
	}
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
		if j.after != "" || !j.t.warm.Load() || (scan != 0 && j.t.offered.Load() != scan) {
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
		w.mu.Unlock()
		w.do(j, buf)
	}
}

// do is one job: it reads what StatDir of j.t needs and, while a scan is
// on, decodes j's small files into the blob cache and offers them. Errors
// are left for StatDir and Open to meet and report.
func (w *walker) do(j job, buf []byte) {
	t := j.t
	if j.after == "" && !t.warm.Load() {
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
	scan := w.det.Scan()
	if scan == 0 || (j.after == "" && t.offered.Swap(scan) == scan) {
		return
	}
	files, bytes := w.th.DirFiles, w.th.DirBytes
	for i := range t.entries {
		e := &t.entries[i]
		if j.after != "" && e.name <= j.after {
			continue
		}
		if w.f.closed.Load() || w.det.Scan() != scan {
			if j.after == "" {
				t.offered.CompareAndSwap(scan, 0) // not all of them: again
			}
			return
		}
		if e.kind != kindFile && e.kind != kindExec {
			continue
		}
		size := e.loadSize()
		if size < 0 {
			// Not listed yet (a scan started by opens alone): the
			// header says.
			s, err := w.f.obj.Size(e.hash)
			if err != nil {
				continue
			}
			e.storeSize(s)
			size = s
		}
		if size > w.th.FileMax {
			continue
		}
		if j.after != "" {
			if files == 0 || size > bytes {
				return
			}
			files, bytes = files-1, bytes-size
		}
		w.ahead(mounts.Join(j.name, e.name), e.hash, buf)
	}
}

// ahead decodes the blob h of the file name into the blob cache, unless
// it is there, and offers its content to the sink.
func (w *walker) ahead(name string, h plumbing.Hash, buf []byte) {
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
	defer w.f.blobs.release(b)
	sink := w.sink.Load()
	if sink == nil {
		return
	}
	data := b.mem
	if b.file != nil || int64(len(data)) != b.size {
		n, err := b.readAt(buf[:b.size], 0)
		if err != nil && err != io.EOF {
			return
		}
		data = buf[:n]
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
