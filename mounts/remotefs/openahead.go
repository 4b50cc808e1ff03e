package remotefs

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// Files too large to come whole with a read-ahead's answer (over
// peer.WholeFile) are opened ahead instead: as an answer lists the first
// ones the walk passes, each is opened on the peer and its first chunks
// asked for, as a reader in order would, and the open file waits here for
// the reader that opens the name (lazyFile claims it at its first read).
// A program reading a tree in order (tar, cp -r) then finds a large file's
// content on its way, rather than paying a round trip for the open and
// another for the first chunk, one large file after another, while the
// read-ahead brings the small files behind them.
//
// At most openAheadMax files wait at once; one nobody claims within
// openAheadFor is closed. A file is handed over only if nothing about its
// name changed since it was opened (the change stream says so), on the
// session it was opened on: otherwise it is closed and the reader opens
// the name itself.

// openAheadMax is how many files opened ahead may wait at once: each
// holds a handle on the peer and up to aheadChunks chunks.
const openAheadMax = 2

// openAheadFor is how long a file opened ahead waits for its reader.
const openAheadFor = 10 * time.Second

// openedAhead is a file opened ahead: ready is closed once the open was
// answered (r set, or err).
type openedAhead struct {
	epoch uint64
	ready chan struct{}
	r     *remoteFile
	err   error
}

// openAheadQueue is how many large files the walk passed may wait to be
// opened ahead, in the walk's order, while openAheadMax are open.
const openAheadQueue = 8

// aheadCandidate is a large file a read-ahead's listing showed, to open
// ahead when a place is free.
type aheadCandidate struct {
	name  string
	epoch uint64
}

// openAhead queues the large files of an answer's listings to be opened
// ahead, in the walk's order, and opens the first while places are free.
func (f *ReadOnlyFS) openAhead(epoch uint64, dirs []wire.Dir) {
	f.amu.Lock()
	for _, d := range dirs {
		for _, e := range d.Entries {
			a := f.attrOf(e.Attr)
			if !a.Mode.IsRegular() || a.Size <= peer.WholeFile || len(f.aheadQ) >= openAheadQueue {
				continue
			}
			name := mounts.Join(d.Name, e.Name)
			if _, ok := f.ahead[name]; !ok {
				f.aheadQ = append(f.aheadQ, aheadCandidate{name: name, epoch: epoch})
			}
		}
	}
	f.amu.Unlock()
	f.pumpAhead()
}

// pumpAhead opens the next queued files while fewer than openAheadMax are
// open ahead; those whose name changed since they were listed are passed.
func (f *ReadOnlyFS) pumpAhead() {
	f.amu.Lock()
	defer f.amu.Unlock()
	for !f.closedAhead && len(f.ahead) < openAheadMax && len(f.aheadQ) > 0 {
		c := f.aheadQ[0]
		f.aheadQ = f.aheadQ[1:]
		if _, ok := f.ahead[c.name]; ok || f.cache.changedSince(c.name, c.epoch) {
			continue
		}
		o := &openedAhead{epoch: c.epoch, ready: make(chan struct{})}
		f.ahead[c.name] = o
		go f.openOneAhead(c.name, o)
	}
}

func (f *ReadOnlyFS) openOneAhead(name string, o *openedAhead) {
	defer close(o.ready)
	// Quiet: a file opened ahead that no program reads keeps its access
	// time, as what the read-ahead reads does.
	resp, s, err := f.doOn(context.Background(), &wire.Request{Op: wire.OpOpen, Name: name, Flag: os.O_RDONLY, Quiet: true})
	switch {
	case err != nil:
		o.err = err
	case resp.EOF:
		// It shrank to a small file, whole in the answer: the reader's
		// own open brings it.
		f.closeHandle(s, resp.Handle)
		o.err = os.ErrInvalid
	default:
		o.r = &remoteFile{f: f, s: s, name: name, h: resp.Handle, a: f.attrOf(resp.Attr)}
		o.r.chunkAt(0) // and the chunks after it: a reader reads on
	}
	if o.err != nil {
		f.dropAhead(name, o)
		return
	}
	time.AfterFunc(openAheadFor, func() {
		if f.dropAhead(name, o) {
			o.r.Close()
		}
	})
}

// dropAhead forgets the file opened ahead for name if it is still o, and
// reports whether it was.
func (f *ReadOnlyFS) dropAhead(name string, o *openedAhead) bool {
	f.amu.Lock()
	mine := f.ahead[name] == o
	if mine {
		delete(f.ahead, name)
	}
	f.amu.Unlock()
	if mine {
		f.pumpAhead()
	}
	return mine
}

// claimAhead hands over the file opened ahead for name, whose attributes
// the reader was given as a, waiting for its open if it is on its way;
// nil when there is none, or it is not the file the name now has.
func (f *ReadOnlyFS) claimAhead(name string, a mounts.Attr) *remoteFile {
	f.amu.Lock()
	o := f.ahead[name]
	delete(f.ahead, name)
	// Not to be opened ahead any more: the reader is here.
	f.aheadQ = slices.DeleteFunc(f.aheadQ, func(c aheadCandidate) bool { return c.name == name })
	f.amu.Unlock()
	if o == nil {
		return nil
	}
	f.pumpAhead()
	<-o.ready
	if o.err != nil {
		return nil
	}
	if o.r.s.alive() != nil || f.cache.changedSince(name, o.epoch) || o.r.a.Ino != a.Ino || o.r.a.Size != a.Size {
		o.r.Close()
		return nil
	}
	return o.r
}

// closeAhead closes every file opened ahead (the mount closes).
func (f *ReadOnlyFS) closeAhead() {
	f.amu.Lock()
	all := f.ahead
	f.ahead, f.aheadQ = map[string]*openedAhead{}, nil
	f.closedAhead = true
	f.amu.Unlock()
	for _, o := range all {
		go func() {
			<-o.ready
			if o.r != nil {
				o.r.Close()
			}
		}()
	}
}
