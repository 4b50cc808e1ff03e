package remotefs

import (
	"slices"

	"github.com/vfsmount/vfsmount/mounts"
)

// ReadAheadDone reports whether fsys has no read-ahead running, and how
// many read-ahead requests it had answered.
func ReadAheadDone(fsys mounts.FS) (bool, int64) {
	f := fsys.(*FS)
	f.pmu.Lock()
	defer f.pmu.Unlock()
	return !f.prefetching, f.prefetches.Load()
}

// Requests is how many requests fsys sent and waited for an answer to
// (the writes pipelined on open files, and closes not waited for, aside).
func Requests(fsys mounts.FS) int64 {
	switch f := fsys.(type) {
	case *FS:
		return f.requests.Load()
	case *ReadOnlyFS:
		return f.requests.Load()
	}
	panic("not a remote mount")
}

// ChunksAsked returns the offsets of the chunks a file open for reading
// on the peer has asked for and keeps, in order.
func ChunksAsked(f mounts.File) []int64 {
	r := remoteOf(f)
	r.mu.Lock()
	defer r.mu.Unlock()
	var offs []int64
	for _, c := range r.chunks {
		offs = append(offs, c.off)
	}
	slices.Sort(offs)
	return offs
}

// ChunkAsks is how many chunks a file open for reading on the peer asked
// for in all.
func ChunkAsks(f mounts.File) int {
	r := remoteOf(f)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asks
}

// AheadBesideChunks is the most read-ahead requests fsys had in flight
// while chunks of a large file were asked for and not answered.
func AheadBesideChunks(fsys mounts.FS) int64 { return fsys.(*FS).aheadBesideChunks.Load() }

// ReadAheadSize is the size of a chunk of a large file.
const ReadAheadSize = readAhead

// remoteOf is the file open on the peer behind f.
func remoteOf(f mounts.File) *remoteFile {
	if l, ok := f.(*lazyFile); ok {
		l.mu.Lock()
		f = l.open
		l.mu.Unlock()
	}
	return f.(*remoteFile)
}

// WaitedFirst is how many opens of fsys waited for a read-ahead's first
// answer.
func WaitedFirst(fsys mounts.FS) int64 { return fsys.(*FS).waitedFirst.Load() }

// ChunksOut is how many chunks of large files fsys asked for and has not
// had answered.
func ChunksOut(fsys mounts.FS) int64 { return fsys.(*FS).chunksOut.Load() }

// OpenedAhead is how many files fsys holds opened ahead, their opens
// answered.
func OpenedAhead(fsys mounts.FS) int {
	f := fsys.(*FS)
	f.amu.Lock()
	defer f.amu.Unlock()
	n := 0
	for _, o := range f.ahead {
		select {
		case <-o.ready:
			if o.r != nil {
				n++
			}
		default:
		}
	}
	return n
}

// BackWaiting is how many callers of fsys wait to know whether the link
// carries connections back.
func BackWaiting(fsys mounts.FS) int64 {
	f := fsys.(*FS)
	f.mu.Lock()
	s := f.sess
	f.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.backWaiting.Load()
}

// Posted is how many changes fsys posted: sent without a caller waiting
// for their answers (write-behind).
func Posted(fsys mounts.FS) int64 { return fsys.(*FS).postedN.Load() }

// InoLocal is the bit of the numbers given to files created here before
// the peer answered.
const InoLocal = inoLocal
