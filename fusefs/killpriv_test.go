package fusefs

import (
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
)

// privFS is a raw file system of one setuid file whose GETATTR and mode
// SETATTR fail as told, recording what reached it.
type privFS struct {
	fuse.RawFileSystem
	getErr, chmodErr fuse.Status
	mode             uint32
	wrote, set       int
}

func (p *privFS) GetAttr(_ <-chan struct{}, _ *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	out.Mode = p.mode
	return p.getErr
}

func (p *privFS) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, _ *fuse.AttrOut) fuse.Status {
	if in.Valid == fuse.FATTR_MODE {
		if !p.chmodErr.Ok() {
			return p.chmodErr
		}
		p.mode = syscall.S_IFREG | in.Mode
		return fuse.OK
	}
	p.set++
	return fuse.OK
}

func (p *privFS) Writev(_ <-chan struct{}, _ *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	p.wrote++
	return uint32(len(data[0])), fuse.OK
}

// A request whose bits cannot be dropped (the file's attributes cannot be
// read, or the mode change is refused) fails with that error and is not
// served: a write never lands in a file that kept its setuid bit.
func TestKillPrivDropFails(t *testing.T) {
	for _, tc := range []struct {
		name             string
		getErr, chmodErr fuse.Status
		want             fuse.Status
	}{
		{"dropped", fuse.OK, fuse.OK, fuse.OK},
		{"no attributes", fuse.ENOENT, fuse.OK, fuse.ENOENT},
		{"mode change refused", fuse.OK, fuse.EPERM, fuse.EPERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &privFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), getErr: tc.getErr, chmodErr: tc.chmodErr,
				mode: syscall.S_IFREG | syscall.S_ISUID | syscall.S_ISGID | 0o775}
			k := killPriv{p}
			_, st := k.Writev(nil, &fuse.WriteIn{WriteFlags: fuse.WRITE_KILL_SUIDGID}, [][]byte{[]byte("x")})
			assert.Equal(t, tc.want, st, "the write")
			st = k.SetAttr(nil, &fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{Valid: fuse.FATTR_UID, Owner: fuse.Owner{Uid: 7}}}, &fuse.AttrOut{})
			assert.Equal(t, tc.want, st, "the chown")
			if tc.want.Ok() {
				assert.Equal(t, 1, p.wrote)
				assert.Equal(t, 1, p.set)
				assert.EqualValues(t, syscall.S_IFREG|0o775, p.mode, "setuid and setgid (group execute on) dropped")
			} else {
				assert.Zero(t, p.wrote, "the write was not served")
				assert.Zero(t, p.set, "the chown was not served")
			}
		})
	}
}
