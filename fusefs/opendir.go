package fusefs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// noOpendir lets the kernel open the directories of an immutable
// connection without asking, as it opens the files (see "# Immutable
// mounts" in the package doc): OPENDIR answers ENOSYS, after which the
// kernel sends no OPENDIR or RELEASEDIR on the connection again, caches
// listings as if every open had asked for FOPEN_CACHE_DIR, and reads
// directories with no handle. go-fuse's node layer lists a directory only
// through a handle, so a handle-less READDIR(PLUS) is served through one
// opened for that request alone and positioned at the request's offset
// (the listing of an immutable directory is the same every time).
type noOpendir struct {
	fuse.RawFileSystem
}

func (r noOpendir) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

func (r noOpendir) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.withHandle(cancel, in, func(in *fuse.ReadIn) fuse.Status {
		return r.RawFileSystem.ReadDir(cancel, in, out)
	})
}

func (r noOpendir) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.withHandle(cancel, in, func(in *fuse.ReadIn) fuse.Status {
		return r.RawFileSystem.ReadDirPlus(cancel, in, out)
	})
}

// withHandle runs read with a handle of the directory in.NodeId, opened for
// it when the request has none.
func (r noOpendir) withHandle(cancel <-chan struct{}, in *fuse.ReadIn, read func(*fuse.ReadIn) fuse.Status) fuse.Status {
	if in.Fh != 0 {
		return read(in)
	}
	open := fuse.OpenIn{InHeader: in.InHeader, Flags: syscall.O_RDONLY | syscall.O_DIRECTORY}
	var opened fuse.OpenOut
	if st := r.RawFileSystem.OpenDir(cancel, &open, &opened); st != fuse.OK {
		return st
	}
	defer r.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: in.InHeader, Fh: opened.Fh})
	with := *in
	with.Fh = opened.Fh
	return read(&with)
}
