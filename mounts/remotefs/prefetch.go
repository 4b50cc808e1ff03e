package remotefs

import (
	"context"
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
func (f *ReadOnlyFS) readAhead(dir string) {
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
	go f.readAheadChain(dir)
}

func (f *ReadOnlyFS) readAheadChain(dir string) {
	for {
		f.readAheadFrom(dir)
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

// readAheadFrom is one chain of read-ahead requests, from dir.
func (f *ReadOnlyFS) readAheadFrom(dir string) {
	names, total, t0 := []string{dir}, int64(0), time.Now()
	defer func() {
		f.log.Debug("remote: read ahead", "source", f.opts.Source, "dir", dir, "bytes", total, "took", time.Since(t0))
	}()
	// The first requests are smaller: the reader that started the
	// read-ahead waits for the files beside the one it opened, and an
	// answer of prefetchChunk bytes takes a while to make and send.
	size := int64(prefetchFirst)
	for len(names) > 0 && total < f.opts.CacheBytes/2 {
		epoch := f.cache.epoch()
		resp, err := f.do(context.Background(), &wire.Request{Op: wire.OpPrefetch, Name: names[0], Names: names,
			Size: min(size, f.opts.CacheBytes/2-total)})
		size = min(2*size, prefetchChunk)
		if err != nil {
			return // a peer without it, or the link gone: the opens ask
		}
		for _, d := range resp.Tree {
			ents, attrs := listing(d.Entries)
			f.cache.putDir(epoch, d.Name, ents, attrs)
			f.cache.walkedAt(epoch, d.Name)
		}
		for _, file := range resp.Files {
			f.cache.putFile(epoch, file.Name, file.Attr.Mounts(), file.Data)
			total += int64(len(file.Data))
		}
		f.prefetches.Add(1)
		names = resp.Names
	}
}
