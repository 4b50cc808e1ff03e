package mounts

import (
	"context"
	"os"
)

// Observe wraps fsys so that fn learns the names changed by every successful
// mutation made through the wrapper. The names are fsys-relative, io/fs
// style. It is how one face of the workspace tells the other to drop its
// caches: the tool face writes through Observe, the kernel face invalidates
// the names it is given.
//
// What fires, and with which names:
//
//   - OpenFile with O_CREATE or O_TRUNC: the name, once the open succeeded
//     (the file may have been created or emptied; O_CREATE on an existing
//     file reports a name that did not change, which costs a redundant
//     invalidation and misses nothing).
//   - A file opened for writing: the name on Close, and on Sync, when a
//     WriteAt (of at least one byte) or Truncate on it succeeded since the
//     last report. Not after every WriteAt: a file being written is not
//     worth caching anyway, and the tool face writes with one WriteAt and a
//     Close. Close reports even when the close itself fails, because the
//     content has already changed.
//   - Truncate, Mkdir, Unlink, Rmdir, Symlink, Mknod, Chmod, Chown, Chtimes,
//     SetXattr, RemoveXattr: the name.
//   - Rename and Link: both names (a link changes the old name's link
//     count).
//
// Failed calls report nothing. fn may be called from several goroutines at
// once, and while no lock of the wrapper is held. A nil fn returns fsys
// unchanged.
//
// The wrapper declares every capability interface, forwards each call through
// the helpers of this package (so a missing verb fails as it would on fsys),
// and reports fsys's real capabilities, description and per-path
// descriptions. It is a [Watch] wrapper, so it also forwards the mount
// table, and no file it returns offers [FDFile].
func Observe(fsys FS, fn func(names ...string)) FS {
	if fn == nil {
		return fsys
	}
	return Watch(fsys, Watcher{Done: func(_ context.Context, c Call, err error) { observed(fn, c, err) }})
}

// observed reports the names c changed, by the rules of Observe.
func observed(fn func(names ...string), c Call, err error) {
	switch c.Op {
	case OpFileSync, OpFileClose:
		// The content changed whether or not the sync or close worked.
		if c.Changed {
			fn(c.Name)
		}
		return
	}
	if err != nil {
		return
	}
	switch c.Op {
	case OpOpenFile:
		if c.Flag&(os.O_CREATE|os.O_TRUNC) != 0 {
			fn(c.Name)
		}
	case OpTruncate, OpMkdir, OpUnlink, OpRmdir, OpSymlink, OpMknod, OpChmod,
		OpChown, OpChtimes, OpSetXattr, OpRemoveXattr:
		fn(c.Name)
	case OpRename, OpLink:
		fn(c.Name, c.NewName)
	}
}
