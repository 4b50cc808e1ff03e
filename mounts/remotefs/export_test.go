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
