package remotefs

import (
	"context"
	"slices"
	"time"

	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// prefetchChunk is the content one read-ahead request brings at most: a
// few tens of milliseconds of a fast link, so that the other requests on
// it are not held behind an answer for long.
const prefetchChunk = 2 << 20

// prefetchFirst is what the first request of a read-ahead brings at most;
// each next one brings twice the last, up to prefetchChunk.
const prefetchFirst = 256 << 10

// readAhead starts reading the subtree of dir ahead, in the order a
// program walking it reads it (wire.Prefetch), into the cache, if no
// read-ahead runs and none walked dir since it last changed. It is asked
// for when a small file is opened for reading and its content was not
// here: a program reading the files of a directory (tar, cp -r, a build)
// goes on to the next ones, and each would be a round trip.
//
// One runs at a time, as a chain of requests each bringing up to
// prefetchChunk bytes and continuing where the last stopped, until the
// subtree is read or it has brought half the cache. One asked for while
// another runs waits for it (the latest such only), and starts then if
// its directory was not walked meanwhile.
//
// from is the directory of the file whose open asked for it. Until the
// chain's first answer is in, another open of a small file there waits
// for it (awaitFirstAnswer) rather than asking the peer itself: a program
// reading a directory's files in order opens the next one at once, and
// the answer, asked for first and walking from there, brings it sooner
// than an open of its own would.
func (f *ReadOnlyFS) readAhead(dir, from string) {
	f.pmu.Lock()
	defer f.pmu.Unlock()
	if f.prefetching {
		f.nextAhead = dir
		return
	}
	if !f.cache.walk(dir) {
		return
	}
	f.prefetching = true
	f.firstFrom, f.firstIn = from, make(chan struct{})
	go f.readAheadChain(dir, f.firstIn)
}

// awaitFirstAnswer waits, when an open in dir started the read-ahead on
// its way and its first answer is not in yet, until it is; it reports
// whether it waited.
func (f *ReadOnlyFS) awaitFirstAnswer(ctx context.Context, dir string) (bool, error) {
	f.pmu.Lock()
	first := f.firstIn
	if f.firstFrom != dir {
		first = nil
	}
	f.pmu.Unlock()
	if first == nil {
		return false, nil
	}
	f.waitedFirst.Add(1)
	select {
	case <-first:
		return true, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// firstLanded closes first, the first answer of a chain being in (or the
// chain having asked nothing, or failed).
func (f *ReadOnlyFS) firstLanded(first chan struct{}) {
	f.pmu.Lock()
	if f.firstIn == first {
		f.firstIn = nil
	}
	f.pmu.Unlock()
	select {
	case <-first:
	default:
		close(first)
	}
}

func (f *ReadOnlyFS) readAheadChain(dir string, first chan struct{}) {
	for {
		f.readAheadFrom(dir, first)
		f.pmu.Lock()
		dir, f.nextAhead = f.nextAhead, ""
		if dir == "" || !f.cache.walk(dir) {
			f.prefetching = false
			f.pmu.Unlock()
			return
		}
		f.pmu.Unlock()
	}
}

// prefetchInFlight is how many read-ahead requests of a chain are asked
// at once, each for other directories: the link's round trip, the peer's
// reads and this side's decoding of the answers overlap. While chunks of
// a large file are asked for and not answered, one is: those come first.
const prefetchInFlight = 3

// aheadAnswer is a read-ahead request's answer, or why there is none.
type aheadAnswer struct {
	id    int
	size  int64 // asked for
	epoch uint64
	resp  *wire.Response
	err   error
}

// aheadItem is a directory of the walk not asked yet, or (id > 0) the
// place of a request in flight, where the directories its answer did not
// reach go.
type aheadItem struct {
	name string
	id   int
}

// readAheadFrom is one chain of read-ahead requests, from dir: up to
// prefetchInFlight at once, each for the next directories of the walk
// that no other has. The directories an answer did not reach take its
// request's place in the walk, before those after it.
func (f *ReadOnlyFS) readAheadFrom(dir string, first chan struct{}) {
	defer f.firstLanded(first) // whatever it asked
	var total int64
	t0 := time.Now()
	defer func() {
		f.log.Debug("remote: read ahead", "source", f.opts.Source, "dir", dir, "bytes", total, "took", time.Since(t0))
	}()
	limit := f.opts.CacheBytes / 2
	todo := []aheadItem{{name: dir}} // the walk from here on, in order
	answers := make(chan aheadAnswer, prefetchInFlight)
	inFlight, ids, failed := 0, 0, false
	var asked int64 // the sizes of the requests in flight
	// The first requests are smaller: the reader that started the
	// read-ahead waits for the files beside the one it opened, and an
	// answer of prefetchChunk bytes takes a while to make and send.
	size := int64(prefetchFirst)
	for {
		// While a large file's chunks are on their way (a reader, or a
		// file opened ahead, waits for them), one request at a time:
		// the link carries what is needed now before what may be.
		for !failed && inFlight < prefetchInFlight && total+asked < limit {
			chunks := f.chunksOut.Load() > 0
			if chunks && inFlight > 0 {
				break
			}
			names, at := nextAhead(todo, prefetchInFlight-inFlight)
			if names == nil {
				break
			}
			ids++
			todo = slices.Replace(todo, at, at+len(names), aheadItem{id: ids})
			req := &wire.Request{Op: wire.OpPrefetch, Name: names[0], Names: names, Size: min(size, limit-total-asked)}
			size = min(2*size, prefetchChunk)
			epoch, id := f.cache.epoch(), ids
			inFlight++
			if chunks {
				f.aheadBesideChunks.Store(max(f.aheadBesideChunks.Load(), int64(inFlight)))
			}
			asked += req.Size
			go func() {
				resp, err := f.do(context.Background(), req)
				answers <- aheadAnswer{id: id, size: req.Size, epoch: epoch, resp: resp, err: err}
			}()
		}
		if inFlight == 0 {
			return
		}
		a := <-answers
		inFlight--
		asked -= a.size
		at := slices.IndexFunc(todo, func(it aheadItem) bool { return it.id == a.id })
		if a.err != nil {
			failed = true // a peer without it, or the link gone: the opens ask
			todo = slices.Delete(todo, at, at+1)
		} else {
			total += f.takeAnswer(a)
			rest := make([]aheadItem, len(a.resp.Names))
			for i, n := range a.resp.Names {
				rest[i] = aheadItem{name: n}
			}
			todo = slices.Replace(todo, at, at+1, rest...)
		}
		f.firstLanded(first)
	}
}

// takeAnswer puts what a read-ahead answer brought into the cache, opens
// ahead the large files it lists, and returns the bytes of content it
// brought.
func (f *ReadOnlyFS) takeAnswer(a aheadAnswer) int64 {
	for _, d := range a.resp.Tree {
		ents, attrs := f.listing(d.Entries)
		f.cache.putDir(a.epoch, d.Name, ents, attrs)
		f.cache.walkedAt(a.epoch, d.Name)
	}
	f.openAhead(a.epoch, a.resp.Tree)
	var n int64
	for _, file := range a.resp.Files {
		f.cache.putFile(a.epoch, file.Name, f.attrOf(file.Attr), file.Data)
		n += int64(len(file.Data))
	}
	f.prefetches.Add(1)
	return n
}

// nextAhead returns the directories the next read-ahead request asks
// for, and where they are in todo: the first run of them not asked yet,
// or, when free requests may still go, this one's share of it.
func nextAhead(todo []aheadItem, free int) ([]string, int) {
	at := slices.IndexFunc(todo, func(it aheadItem) bool { return it.id == 0 })
	if at < 0 {
		return nil, 0
	}
	end := at
	for end < len(todo) && todo[end].id == 0 {
		end++
	}
	n := max(1, (end-at)/free)
	names := make([]string, n)
	for i := range names {
		names[i] = todo[at+i].name
	}
	return names, at
}
