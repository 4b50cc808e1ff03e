package remotefs

import "github.com/vfsmount/vfsmount/mounts"

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
