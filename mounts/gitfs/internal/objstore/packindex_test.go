package objstore

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-git/go-git/v5/plumbing"
)

// rawIndex builds a version 2 index of the given (sorted) ids at offsets.
func rawIndex(ids []plumbing.Hash, offs []uint32, off64 []uint64) []byte {
	raw := []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}
	for b := range 256 {
		k := 0
		for _, h := range ids {
			if int(h[0]) <= b {
				k++
			}
		}
		raw = binary.BigEndian.AppendUint32(raw, uint32(k))
	}
	for _, h := range ids {
		raw = append(raw, h[:]...)
	}
	raw = append(raw, make([]byte, 4*len(ids))...)
	for _, o := range offs {
		raw = binary.BigEndian.AppendUint32(raw, o)
	}
	for _, o := range off64 {
		raw = binary.BigEndian.AppendUint64(raw, o)
	}
	return append(raw, make([]byte, idxTrailerLen)...)
}

func TestPackIndex(t *testing.T) {
	ids := []plumbing.Hash{
		plumbing.NewHash("0000000000000000000000000000000000000001"),
		plumbing.NewHash("00ff000000000000000000000000000000000000"),
		plumbing.NewHash("7f00000000000000000000000000000000000000"),
		plumbing.NewHash("ff00000000000000000000000000000000000000"),
		plumbing.NewHash("ffffffffffffffffffffffffffffffffffffffff"),
	}
	// The fourth object is past 4 GiB: its entry points into the 64-bit table.
	x, err := parseIndex(rawIndex(ids, []uint32{12, 40, 99, 1 << 31, 7}, []uint64{5 << 30}))
	require.NoError(t, err)
	require.Equal(t, 5, x.n)
	for i, want := range []int64{12, 40, 99, 5 << 30, 7} {
		off, ok := x.find(ids[i])
		assert.True(t, ok, ids[i].String())
		assert.Equal(t, want, off, ids[i].String())
	}
	for _, h := range []string{
		"0000000000000000000000000000000000000000",
		"0000000000000000000000000000000000000002",
		"8000000000000000000000000000000000000000",
		"fffffffffffffffffffffffffffffffffffffffe",
	} {
		_, ok := x.find(plumbing.NewHash(h))
		assert.False(t, ok, h)
	}

	good := rawIndex(ids, []uint32{12, 40, 99, 1 << 31, 7}, []uint64{5 << 30})
	corrupt := map[string][]byte{
		"too short":  good[:100],
		"magic":      append([]byte{'P', 'A', 'C', 'K'}, good[4:]...),
		"version 3":  append(append([]byte{}, good[:7]...), append([]byte{3}, good[8:]...)...),
		"truncated":  good[:len(good)-9],
		"misaligned": append(append([]byte{}, good...), 0),
	}
	unsorted := append([]byte{}, good...)
	binary.BigEndian.PutUint32(unsorted[idxHeaderLen+4*0x10:], 4) // more below 0x10 than below 0x7f
	corrupt["fanout not sorted"] = unsorted
	huge := append([]byte{}, good...)
	for b := 0xff; b < 256; b++ {
		binary.BigEndian.PutUint32(huge[idxHeaderLen+4*b:], 1<<30)
	}
	corrupt["more objects than bytes"] = huge
	for name, data := range corrupt {
		_, err := parseIndex(data)
		assert.ErrorIs(t, err, errCorruptPack, name)
	}

	// An entry pointing past the 64-bit table is not found, not a panic.
	x, err = parseIndex(rawIndex(ids[:1], []uint32{1<<31 | 3}, nil))
	require.NoError(t, err)
	_, ok := x.find(ids[0])
	assert.False(t, ok)
}
