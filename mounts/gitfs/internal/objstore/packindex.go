package objstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// packIndex is a version 2 pack index (gitformat-pack) read in place: a
// lookup is a binary search of the mapped name table, bounded by the fanout
// table, so an index costs neither decoding at mount nor memory beyond the
// pages a lookup touches. go-git's idxfile decoder copies every table and
// checks the index's SHA-1 first, work proportional to the number of
// objects before the first ls. The checksum is not verified here: a
// corrupt index gives offsets that fail to decode (EIO for that file), as
// a corrupt pack does.
//
// Layout: magic "\\377tOc", version 2, fanout (256 x uint32: objects whose
// first byte is <= i), names (n x 20 bytes, sorted), CRC-32s (n x 4),
// offsets (n x 4; the top bit set means an index into the next table),
// 64-bit offsets (k x 8), the pack's checksum, the index's checksum.
type packIndex struct {
	fanout []byte
	n      int
	names  []byte
	off32  []byte
	off64  []byte
	pack   []byte // the pack's checksum
}

const (
	idxHeaderLen  = 8
	idxFanoutLen  = 256 * 4
	idxTrailerLen = 2 * 20
)

var idxMagic = []byte{0xff, 't', 'O', 'c'}

// parseIndex checks the shape of a mapped index and slices its tables.
func parseIndex(data []byte) (*packIndex, error) {
	bad := func(what string) (*packIndex, error) {
		return nil, fmt.Errorf("%w: index: %s", errCorruptPack, what)
	}
	if len(data) < idxHeaderLen+idxFanoutLen+idxTrailerLen {
		return bad("too short")
	}
	if !bytes.Equal(data[:4], idxMagic) || binary.BigEndian.Uint32(data[4:8]) != 2 {
		return bad("not a version 2 index")
	}
	fanout := data[idxHeaderLen : idxHeaderLen+idxFanoutLen]
	prev := uint32(0)
	for i := range 256 {
		v := binary.BigEndian.Uint32(fanout[i*4:])
		if v < prev {
			return bad("fanout table not sorted")
		}
		prev = v
	}
	n := int(prev)
	tables := idxHeaderLen + idxFanoutLen
	rest := len(data) - tables - idxTrailerLen
	if n < 0 || uint64(n)*28 > uint64(rest) || (rest-n*28)%8 != 0 {
		return bad(fmt.Sprintf("%d objects do not fit in %d bytes", n, len(data)))
	}
	names := data[tables : tables+n*20]
	off32 := data[tables+n*24 : tables+n*28]
	off64 := data[tables+n*28 : len(data)-idxTrailerLen]
	return &packIndex{fanout: fanout, n: n, names: names, off32: off32, off64: off64,
		pack: data[len(data)-idxTrailerLen : len(data)-20]}, nil
}

func (x *packIndex) packChecksum() []byte { return x.pack }

// find returns the offset of h in the pack.
func (x *packIndex) find(h plumbing.Hash) (int64, bool) {
	lo := 0
	if h[0] > 0 {
		lo = int(binary.BigEndian.Uint32(x.fanout[(int(h[0])-1)*4:]))
	}
	hi := int(binary.BigEndian.Uint32(x.fanout[int(h[0])*4:]))
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(x.names[mid*20:mid*20+20], h[:]); {
		case c < 0:
			lo = mid + 1
		case c > 0:
			hi = mid
		default:
			return x.offset(mid)
		}
	}
	return 0, false
}

// offset returns the pack offset of the i-th object.
func (x *packIndex) offset(i int) (int64, bool) {
	off := uint64(binary.BigEndian.Uint32(x.off32[i*4:]))
	if off&(1<<31) != 0 {
		// Past 2 GiB: the entry indexes the 64-bit offset table.
		j := (off &^ (1 << 31)) * 8
		if j+8 > uint64(len(x.off64)) {
			return 0, false
		}
		off = binary.BigEndian.Uint64(x.off64[j:])
	}
	return int64(off), off < 1<<62
}
