package objstore

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/adler32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

func TestLooseObjects(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, map[string]string{"a.txt": "loose\n", "empty": "", "d/b.go": "package b\n"})
	objs := catAll(t, dir)
	fast := fastObjects{packs: openTestPacks(t, dir), loose: looseObjects{dir: filepath.Join(dir, ".git", "objects")}}
	require.Empty(t, fast.packs.list, "no pack: every object is loose")
	for _, o := range objs {
		n, ok, err := fast.size(o.hash)
		require.True(t, ok, o.hash.String())
		require.NoError(t, err)
		assert.Equal(t, int64(len(o.content)), n)
		b, typ, ok, err := fast.bytes(o.hash)
		require.True(t, ok)
		require.NoError(t, err)
		assert.Equal(t, o.typ, typ)
		assert.Equal(t, o.content, b, o.hash.String())
		r, n, typ, ok, err := fast.open(o.hash)
		require.True(t, ok)
		require.NoError(t, err)
		got, err := io.ReadAll(r)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		assert.Equal(t, o.content, got)
		assert.Equal(t, int64(len(o.content)), n)
		assert.Equal(t, o.typ, typ)
	}
	_, ok, err := fast.size(plumbing.NewHash("0123456789012345678901234567890123456789"))
	assert.False(t, ok, "no such object")
	assert.NoError(t, err)
}

func TestLargeLooseObjectGoesToGoGit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, maxLooseFile+4096) // random: does not compress
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	dir, _ := gittest.SmallRepo(t, map[string]string{"big.bin": string(big)})
	h := plumbing.NewHash(gittest.Git(t, dir, "rev-parse", "HEAD:big.bin"))
	_, _, _, ok, err := looseObjects{dir: filepath.Join(dir, ".git", "objects")}.load(h, true)
	assert.False(t, ok)
	assert.NoError(t, err)
	o, err := Open(dir)
	require.NoError(t, err)
	defer o.Close()
	b, err := o.Bytes(plumbing.BlobObject, h)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(big, b), "served by go-git")
}

func TestCorruptLooseObjects(t *testing.T) {
	deflate := func(s string) []byte {
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	good := deflate("blob 5\x00hello")
	for name, data := range map[string][]byte{
		"not zlib":          []byte("blob 5\x00hello"),
		"truncated":         good[:len(good)-6],
		"bad checksum":      append(append([]byte{}, good[:len(good)-1]...), good[len(good)-1]^1),
		"no NUL":            deflate("blob 5"),
		"header too long":   deflate("blob " + strings.Repeat("1", 40) + "\x00x"),
		"unknown type":      deflate("ofs-delta 5\x00hello"),
		"bad size":          deflate("blob -5\x00hello"),
		"no size":           deflate("blob\x00hello"),
		"less data":         deflate("blob 9\x00hello"),
		"more data":         deflate("blob 3\x00hello"),
		"absurd size":       deflate("blob 99999999999\x00hello"),
		"empty":             {},
		"more data in head": deflate("blob 1\x00he"),
	} {
		_, _, _, err := parseLoose(data, true)
		assert.ErrorIs(t, err, errCorruptPack, name)
	}
	typ, n, b, err := parseLoose(good, true)
	require.NoError(t, err)
	assert.Equal(t, plumbing.BlobObject, typ)
	assert.Equal(t, int64(5), n)
	assert.Equal(t, "hello", string(b))

	// Through the file system: EIO material, never a panic.
	objs, h := looseFile(t, deflate("tree 5\x00hel"))
	_, _, _, ok, err := looseObjects{dir: objs}.load(h, true)
	assert.True(t, ok)
	assert.ErrorIs(t, err, errCorruptPack)
	assert.NotContains(t, err.Error(), objs, "no host path in the error")
}

// paddedZlib is a valid zlib stream of data that starts with empties
// empty stored blocks: its first byte of output comes 5*empties bytes in.
func paddedZlib(data []byte, empties int) []byte {
	b := []byte{0x78, 0x01}
	for range empties {
		b = append(b, 0x00, 0x00, 0x00, 0xff, 0xff) // not final, stored, empty
	}
	b = append(b, 0x01) // final, stored
	b = binary.LittleEndian.AppendUint16(b, uint16(len(data)))
	b = binary.LittleEndian.AppendUint16(b, ^uint16(len(data)))
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, adler32.Checksum(data))
}

func TestHeadersPastThePrefix(t *testing.T) {
	obj := []byte("blob 11\x00hello world")
	for _, empties := range []int{0, 2 * headPrefix / 5} {
		stream := paddedZlib(obj, empties)
		head, err := inflateHead(stream, 8)
		require.NoError(t, err, "%d empty blocks", empties)
		assert.Equal(t, "blob 11\x00", string(head))

		objs, h := looseFile(t, stream)
		typ, n, _, ok, err := looseObjects{dir: objs}.load(h, false)
		require.True(t, ok)
		require.NoError(t, err, "%d empty blocks", empties)
		assert.Equal(t, plumbing.BlobObject, typ)
		assert.Equal(t, int64(11), n)
	}

	// An empty file is corrupt, not an I/O error.
	objs, h := looseFile(t, nil)
	_, _, _, ok, err := looseObjects{dir: objs}.load(h, false)
	assert.True(t, ok)
	assert.ErrorIs(t, err, errCorruptPack)
}

// looseFile writes data as the file of a loose object in a new objects
// directory and returns the directory and the object's id.
func looseFile(t *testing.T, data []byte) (string, plumbing.Hash) {
	t.Helper()
	objs := t.TempDir()
	h := plumbing.NewHash("ab00000000000000000000000000000000000001")
	require.NoError(t, os.MkdirAll(filepath.Join(objs, "ab"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(objs, "ab", h.String()[2:]), data, 0o644))
	return objs, h
}
