package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// chunkSize is the unit of file data in the "data" bucket: the same as
// memfs's pages, so a restore copies whole pages.
const chunkSize = 64 << 10

// The version byte that starts every inode value, so the encoding can
// change within a format version. Codec 2 is codec 1 with a device number
// at the end; it is written for devices only, so a store that holds none
// stays readable by a binary that knows codec 1 alone.
const (
	inodeCodec       = 1
	inodeCodecDevice = 2
)

func inoKey(ino uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), ino) }

// chunkKey is inode then chunk index, big endian, so one inode's chunks are
// adjacent and in order.
func chunkKey(ino uint64, idx int64) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 16), ino)
	return binary.BigEndian.AppendUint64(k, uint64(idx))
}

func entryKey(dir uint64, name string) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(name)), dir)
	return append(k, name...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t.Unix()))
	return binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

func appendBytes(b []byte, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// encodeInode renders a record: codec, mode, uid, gid, nlink, size, atime,
// mtime, ctime, target, the extended attributes as name/value pairs, and
// with codec 2 the device number.
func encodeInode(r *memfs.InodeRecord) []byte {
	b := make([]byte, 0, 64+len(r.Target))
	codec := byte(inodeCodec)
	if r.Rdev != 0 {
		codec = inodeCodecDevice
	}
	b = append(b, codec)
	b = binary.BigEndian.AppendUint32(b, uint32(r.Mode))
	b = binary.BigEndian.AppendUint32(b, r.Uid)
	b = binary.BigEndian.AppendUint32(b, r.Gid)
	b = binary.BigEndian.AppendUint32(b, r.Nlink)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Size))
	b = appendTime(b, r.Atime)
	b = appendTime(b, r.Mtime)
	b = appendTime(b, r.Ctime)
	b = appendBytes(b, []byte(r.Target))
	b = binary.AppendUvarint(b, uint64(len(r.Xattrs)))
	for k, v := range r.Xattrs {
		b = appendBytes(b, []byte(k))
		b = appendBytes(b, v)
	}
	if codec == inodeCodecDevice {
		b = binary.BigEndian.AppendUint32(b, r.Rdev)
	}
	return b
}

var errShort = errors.New("truncated value")

// decoder reads a value; the first failure sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errShort
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) time() time.Time {
	sec, nsec := int64(d.u64()), d.u32()
	if nsec >= 1e9 {
		d.err = errors.New("bad time")
	}
	return time.Unix(sec, int64(nsec))
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns a copy: values live in bbolt's read-only map.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errShort
		return nil
	}
	return append([]byte(nil), d.take(int(n))...)
}

func decodeInode(ino uint64, v []byte) (memfs.InodeRecord, error) {
	d := &decoder{b: v}
	var codec byte
	if c := d.take(1); d.err == nil {
		codec = c[0]
		if codec != inodeCodec && codec != inodeCodecDevice {
			return memfs.InodeRecord{}, fmt.Errorf("inode %d: unknown encoding %d", ino, codec)
		}
	}
	r := memfs.InodeRecord{Ino: ino}
	r.Mode = fs.FileMode(d.u32())
	r.Uid, r.Gid, r.Nlink = d.u32(), d.u32(), d.u32()
	r.Size = int64(d.u64())
	r.Atime, r.Mtime, r.Ctime = d.time(), d.time(), d.time()
	r.Target = string(d.bytes())
	if nx := d.uvarint(); nx > 0 && d.err == nil {
		if nx > uint64(len(d.b)) {
			d.err = errShort
		}
		r.Xattrs = make(map[string][]byte)
		for i := uint64(0); i < nx && d.err == nil; i++ {
			k := string(d.bytes())
			r.Xattrs[k] = d.bytes()
		}
	}
	if codec == inodeCodecDevice {
		r.Rdev = d.u32()
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return memfs.InodeRecord{}, fmt.Errorf("inode %d: %w", ino, d.err)
	}
	return r, nil
}
