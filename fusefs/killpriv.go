package fusefs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// killPriv drops a file's setuid and setgid bits where the kernel marks
// a request for it. The connection negotiates CAP_HANDLE_KILLPRIV_V2, so
// the kernel no longer asks for a file's attributes before a chown or
// truncate to work out the bits it would clear (a GETATTR a file of
// tar -x or sed -i paid), and leaves the clearing to the file system, as
// a local one does it in its own write, truncate and chown:
//
//   - a WRITE (WRITE_KILL_SUIDGID) or a SETATTR of the size
//     (FATTR_KILL_SUIDGID: a truncate, an open with O_TRUNC, which the
//     kernel sends as one since the connection does not take
//     ATOMIC_O_TRUNC), marked when the caller lacks CAP_FSETID, drops
//     setuid, and setgid when group execute is on, before it is served;
//   - a chown (FATTR_UID, FATTR_GID) of anything but a directory drops
//     them too, whoever asks, and so does a SETATTR that sets nothing,
//     which is how the kernel passes on a chown that changes neither
//     owner nor group.
//
// Setgid without group execute stays, as the kernel kept it before: the
// rule that drops it for a caller outside the file's group needs the
// caller's supplementary groups, which FUSE does not pass.
//
// The bits are dropped by a SETATTR of the mode on the caller's behalf,
// the request the kernel sent for it before. File capabilities are still
// the kernel's to drop: it asks for security.capability before a write
// or a chown and removes it, as it did.
type killPriv struct {
	fuse.RawFileSystem
}

// drop clears the privileges of the file h names.
func (k killPriv) drop(cancel <-chan struct{}, h *fuse.InHeader) fuse.Status {
	var out fuse.AttrOut
	if st := k.RawFileSystem.GetAttr(cancel, &fuse.GetAttrIn{InHeader: *h}, &out); !st.Ok() {
		return st
	}
	mode := out.Mode
	if mode&syscall.S_IFMT == syscall.S_IFDIR {
		return fuse.OK
	}
	kill := mode & syscall.S_ISUID
	if mode&(syscall.S_ISGID|syscall.S_IXGRP) == syscall.S_ISGID|syscall.S_IXGRP {
		kill |= syscall.S_ISGID
	}
	if kill != 0 {
		in := &fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: *h, Valid: fuse.FATTR_MODE, Mode: mode &^ kill}}
		if st := k.RawFileSystem.SetAttr(cancel, in, &out); !st.Ok() {
			return st
		}
	}
	return fuse.OK
}

// beforeWrite drops the bits where the kernel marked the write for it.
func (k killPriv) beforeWrite(cancel <-chan struct{}, in *fuse.WriteIn) fuse.Status {
	if in.WriteFlags&fuse.WRITE_KILL_SUIDGID == 0 {
		return fuse.OK
	}
	return k.drop(cancel, &in.InHeader)
}

// Write is go-fuse's fallback when Writev answers ENOSYS (a WRITE in
// several slices): the bits went at the Writev, and drop finds none.
func (k killPriv) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if st := k.beforeWrite(cancel, in); !st.Ok() {
		return 0, st
	}
	return k.RawFileSystem.Write(cancel, in, data)
}

// Writev is how go-fuse serves a WRITE first.
func (k killPriv) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if st := k.beforeWrite(cancel, in); !st.Ok() {
		return 0, st
	}
	return k.RawFileSystem.Writev(cancel, in, data)
}

// SetAttr drops the bits for a truncate or a chown, and for a SETATTR
// that sets nothing: the kernel's word, since it leaves the clearing to
// us, for a chown that changes neither owner nor group (chown(2) drops
// them all the same) and for the drop a write makes.
func (k killPriv) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	kill := in.Valid&(fuse.FATTR_KILL_SUIDGID|fuse.FATTR_UID|fuse.FATTR_GID) != 0 ||
		in.Valid&^(fuse.FATTR_FH|fuse.FATTR_LOCKOWNER) == 0
	if kill {
		if st := k.drop(cancel, &in.InHeader); !st.Ok() {
			return st
		}
	}
	return k.RawFileSystem.SetAttr(cancel, in, out)
}
