package objstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

// gitObject is one object as git cat-file reports it.
type gitObject struct {
	hash    plumbing.Hash
	typ     plumbing.ObjectType
	content []byte
}

// catAll returns every object of the repository at dir, from
// git cat-file --batch-all-objects --batch.
func catAll(t testing.TB, dir string) []gitObject {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir = dir
	cmd.Env = gittest.Env(gittest.Time)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r := bufio.NewReaderSize(out, 1<<20)
	var objs []gitObject
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		f := strings.Fields(line)
		require.Len(t, f, 3, "cat-file header %q", line)
		typ, err := plumbing.ParseObjectType(f[1])
		require.NoError(t, err)
		n, err := strconv.Atoi(f[2])
		require.NoError(t, err)
		content := make([]byte, n+1)
		_, err = io.ReadFull(r, content)
		require.NoError(t, err)
		objs = append(objs, gitObject{hash: plumbing.NewHash(f[0]), typ: typ, content: content[:n]})
	}
	require.NoError(t, cmd.Wait())
	require.NotEmpty(t, objs)
	return objs
}

// openTestPacks maps the packs of the repository at dir (a worktree).
func openTestPacks(t testing.TB, dir string) *packs {
	t.Helper()
	ps, err := newPacks(filepath.Join(dir, ".git", "objects"))
	require.NoError(t, err)
	t.Cleanup(ps.close)
	return ps
}

// countTypes counts the pack object types of every indexed object.
func countTypes(t testing.TB, ps *packs) map[byte]int {
	t.Helper()
	counts := map[byte]int{}
	for _, p := range ps.list {
		for i := range p.idx.n {
			off, ok := p.idx.offset(i)
			require.True(t, ok)
			typ, _, _, err := p.header(off)
			require.NoError(t, err)
			counts[typ]++
		}
	}
	return counts
}

// refDeltaRepo makes a repository whose pack stores deltas as REF_DELTA.
func refDeltaRepo(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "repo")
	gittest.InitRepo(t, dir)
	var text strings.Builder
	for i := range 12 {
		for j := range 300 {
			fmt.Fprintf(&text, "revision %d line %d of a file that grows\n", i, j)
		}
		gittest.WriteFile(t, dir, "grow.txt", text.String(), 0o644)
		gittest.WriteFile(t, dir, fmt.Sprintf("d%d/small.txt", i%3), strings.Repeat("small\n", i+1), 0o644)
		gittest.CommitAll(t, dir, i, fmt.Sprintf("commit %d", i))
	}
	gittest.Git(t, dir, "-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq", "--window=50", "--depth=50")
	return dir
}

// checkAgainstGit decodes every object of objs through ps and compares it
// with what git says.
func checkAgainstGit(t *testing.T, ps *packs, objs []gitObject) {
	t.Helper()
	for _, o := range objs {
		n, ok, err := ps.size(o.hash)
		require.True(t, ok, "%s is packed", o.hash)
		require.NoError(t, err, o.hash)
		assert.Equal(t, int64(len(o.content)), n, "size of %s", o.hash)

		r, n, typ, ok, err := ps.open(o.hash)
		require.True(t, ok, o.hash)
		require.NoError(t, err, o.hash)
		got, err := io.ReadAll(r)
		require.NoError(t, err, o.hash)
		require.NoError(t, r.Close())
		assert.Equal(t, o.typ, typ, "type of %s", o.hash)
		assert.Equal(t, int64(len(o.content)), n, "open size of %s", o.hash)
		assert.True(t, bytes.Equal(o.content, got), "content of %s", o.hash)

		b, typ, ok, err := ps.bytes(o.hash)
		require.True(t, ok, o.hash)
		require.NoError(t, err, o.hash)
		assert.Equal(t, o.typ, typ)
		assert.True(t, bytes.Equal(o.content, b), "bytes of %s", o.hash)
	}
}

func TestPacksMatchGit(t *testing.T) {
	tests := []struct {
		name  string
		dir   func(t *testing.T) string
		delta byte // the delta type the pack must hold
	}{
		{"ofs-delta", func(t *testing.T) string { return gittest.MainFixture(t).Dir }, objOfsDelta},
		{"ref-delta", func(t *testing.T) string { return refDeltaRepo(t) }, objRefDelta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir(t)
			ps := openTestPacks(t, dir)
			require.NotEmpty(t, ps.list)
			counts := countTypes(t, ps)
			require.Positive(t, counts[tt.delta], "the pack holds deltas of type %d: %v", tt.delta, counts)
			checkAgainstGit(t, ps, catAll(t, dir))
			assert.Positive(t, ps.bases.lru.Cost(), "delta bases were cached")
		})
	}
}

func TestPacksAnswerNotFoundForLooseObjects(t *testing.T) {
	dir, head := gittest.SmallRepo(t, map[string]string{"a.txt": "loose\n"})
	ps := openTestPacks(t, dir)
	h := plumbing.NewHash(head)
	_, ok, err := ps.size(h)
	assert.False(t, ok)
	assert.NoError(t, err)
	_, _, _, ok, err = ps.open(h)
	assert.False(t, ok)
	assert.NoError(t, err)
	_, _, ok, err = ps.bytes(h)
	assert.False(t, ok)
	assert.NoError(t, err)

	// The store reads it from its file.
	o, err := Open(dir)
	require.NoError(t, err)
	defer o.Close()
	blob := plumbing.NewHash(gittest.Git(t, dir, "rev-parse", "HEAD:a.txt"))
	n, err := o.Size(blob)
	require.NoError(t, err)
	assert.Equal(t, int64(len("loose\n")), n)
	b, err := o.Bytes(plumbing.BlobObject, blob)
	require.NoError(t, err)
	assert.Equal(t, "loose\n", string(b))
	_, err = o.Bytes(plumbing.TreeObject, blob)
	assert.ErrorIs(t, err, plumbing.ErrObjectNotFound, "a blob is not a tree")
}

func TestPacksDecodeConcurrently(t *testing.T) {
	fx := gittest.MainFixture(t)
	objs := catAll(t, fx.Dir)
	ps := openTestPacks(t, fx.Dir)
	sums := make(map[plumbing.Hash][sha1.Size]byte, len(objs))
	for _, o := range objs {
		sums[o.hash] = sha1.Sum(o.content)
	}
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			// Each worker starts elsewhere so that they share chains at
			// different times.
			for i := range objs {
				o := objs[(i+w*len(objs)/workers)%len(objs)]
				b, _, ok, err := ps.bytes(o.hash)
				if !ok || err != nil {
					errs <- fmt.Errorf("%s: ok=%v err=%v", o.hash, ok, err)
					return
				}
				if sha1.Sum(b) != sums[o.hash] {
					errs <- fmt.Errorf("%s: wrong content", o.hash)
					return
				}
			}
		})
	}
	// Reloads run alongside: the packs stay mapped while they are used.
	wg.Go(func() {
		for range 20 {
			if err := ps.reload(); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

func TestRetiredPackStaysMappedWhileStreaming(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	gittest.InitRepo(t, dir)
	big := gittest.BigContent(3 << 20)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644))
	gittest.CommitAll(t, dir, 0, "big")
	gittest.Git(t, dir, "repack", "-adq")
	h := plumbing.NewHash(gittest.Git(t, dir, "rev-parse", "HEAD:big.bin"))

	ps := openTestPacks(t, dir)
	r, n, _, ok, err := ps.open(h)
	require.True(t, ok)
	require.NoError(t, err)
	require.IsType(t, &packReader{}, r, "a whole object streams")
	old := r.(*packReader).p
	head := make([]byte, 1<<20)
	_, err = io.ReadFull(r, head)
	require.NoError(t, err)

	// A new commit and a full repack replace the pack.
	gittest.WriteFile(t, dir, "other.txt", "other\n", 0o644)
	gittest.CommitAll(t, dir, 1, "other")
	gittest.Git(t, dir, "repack", "-adq")
	require.NoError(t, ps.reload())
	require.Len(t, ps.list, 1)
	require.NotSame(t, old, ps.list[0], "the old pack is retired")

	rest, err := io.ReadAll(r)
	require.NoError(t, err, "the retired mapping is still readable")
	assert.Equal(t, n, int64(len(head)+len(rest)))
	assert.True(t, bytes.Equal(big, append(head, rest...)))
	assert.Equal(t, int64(1), old.refs.Load(), "only the stream holds the old pack")
	require.NoError(t, r.Close())
	assert.Zero(t, old.refs.Load(), "unmapped on the stream's close")

	got, _, ok, err := ps.bytes(h)
	require.True(t, ok, "found in the new pack")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(big, got))
}

// TestPackTruncatedInPlaceFailsWithoutACrash: git never truncates a pack,
// but if something does, reading the mapping past the new end faults; the
// fault becomes an error.
func TestPackTruncatedInPlaceFailsWithoutACrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	gittest.InitRepo(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.bin"), gittest.BigContent(3<<20), 0o644))
	gittest.CommitAll(t, dir, 0, "big")
	gittest.Git(t, dir, "repack", "-adq")
	h := plumbing.NewHash(gittest.Git(t, dir, "rev-parse", "HEAD:big.bin"))
	packFiles, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	require.NoError(t, err)
	require.Len(t, packFiles, 1)

	ps := openTestPacks(t, dir)
	r, _, _, ok, err := ps.open(h)
	require.True(t, ok)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, os.Truncate(packFiles[0], 4096))

	_, err = io.Copy(io.Discard, r)
	assert.ErrorIs(t, err, errCorruptPack, "the stream")
	_, _, ok, err = ps.bytes(h)
	assert.True(t, ok)
	assert.ErrorIs(t, err, errCorruptPack, "the whole decode")
}

// TestCorruptPacksGiveErrors decodes every object of damaged copies of the
// fixture's pack (the trailer kept, so the pack still matches its index):
// every answer is the right content or an error, never a panic.
func TestCorruptPacksGiveErrors(t *testing.T) {
	dir := refDeltaRepo(t)
	objs := catAll(t, dir)
	srcs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.pack"))
	require.NoError(t, err)
	require.Len(t, srcs, 1)
	orig, err := os.ReadFile(srcs[0])
	require.NoError(t, err)
	idx, err := os.ReadFile(strings.TrimSuffix(srcs[0], ".pack") + ".idx")
	require.NoError(t, err)
	body, trailer := orig[:len(orig)-packTrailerLen], orig[len(orig)-packTrailerLen:]

	tests := []struct {
		name   string
		seeds  uint64 // damage is random: tried with seeds 0..seeds-1
		damage func(rng *rand.Rand) []byte
	}{
		{"truncated", 1, func(*rand.Rand) []byte {
			return append(bytes.Clone(body[:len(body)/2]), trailer...)
		}},
		{"flipped bytes", 5, func(rng *rand.Rand) []byte {
			b := bytes.Clone(orig)
			for range 40 {
				b[packHeaderLen+rng.IntN(len(body)-packHeaderLen)] ^= byte(1 + rng.IntN(255))
			}
			return b
		}},
		{"zeroed range", 5, func(rng *rand.Rand) []byte {
			b := bytes.Clone(orig)
			at := packHeaderLen + rng.IntN(len(body)/2)
			clear(b[at : at+len(body)/4])
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range tt.seeds {
				objDir := filepath.Join(t.TempDir(), "objects")
				packDir := filepath.Join(objDir, "pack")
				require.NoError(t, os.MkdirAll(packDir, 0o755))
				base := filepath.Join(packDir, filepath.Base(strings.TrimSuffix(srcs[0], ".pack")))
				require.NoError(t, os.WriteFile(base+".pack", tt.damage(rand.New(rand.NewPCG(seed, 1))), 0o644))
				require.NoError(t, os.WriteFile(base+".idx", idx, 0o644))
				ps, err := newPacks(objDir)
				require.NoError(t, err)
				failed := 0
				for _, o := range objs {
					n, ok, err := ps.size(o.hash)
					require.True(t, ok)
					if err == nil && n != int64(len(o.content)) {
						failed++ // a damaged header may still parse
					}
					b, _, ok, err := ps.bytes(o.hash)
					if ok && err == nil {
						assert.True(t, bytes.Equal(o.content, b), "%s decodes right or fails", o.hash)
					}
					if err != nil {
						failed++
						assert.ErrorIs(t, err, errCorruptPack, o.hash)
						assert.NotContains(t, err.Error(), "runtime error", "every read is bounds-checked")
						assert.NotContains(t, err.Error(), objDir, "no host path")
					}
					r, _, _, ok, err := ps.open(o.hash)
					if ok && err == nil {
						_, err = io.Copy(io.Discard, r)
						r.Close()
					}
					if err != nil {
						assert.ErrorIs(t, err, errCorruptPack, o.hash)
						assert.NotContains(t, err.Error(), "runtime error", "every read is bounds-checked")
					}
				}
				assert.Positive(t, failed, "seed %d: the damage is noticed", seed)
				ps.close()
			}
		})
	}
}

// Hand-made packs for the cases git never writes.

func zlibOf(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func objHeader(typ byte, size int64) []byte {
	c := typ<<4 | byte(size&15)
	size >>= 4
	var out []byte
	for size > 0 {
		out = append(out, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(out, c)
}

func ofsDistance(rel int64) []byte {
	out := []byte{byte(rel & 0x7f)}
	for rel >>= 7; rel > 0; rel >>= 7 {
		rel--
		out = append([]byte{0x80 | byte(rel&0x7f)}, out...)
	}
	return out
}

// handPack assembles a pack of raw objects (headers included) and returns
// it with each object's offset. Its index maps ids to offsets, ids[i] to
// the i-th object when given; refs is high so that nothing unmaps the heap
// slice.
func handPack(t testing.TB, objs [][]byte, ids []plumbing.Hash) (*pack, []int64) {
	data := []byte("PACK\x00\x00\x00\x02")
	data = binary.BigEndian.AppendUint32(data, uint32(len(objs)))
	offs := make([]int64, len(objs))
	for i, o := range objs {
		offs[i] = int64(len(data))
		data = append(data, o...)
	}
	data = append(data, make([]byte, packTrailerLen)...)
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(ids[a][:], ids[b][:]) })
	sorted := make([]plumbing.Hash, len(ids))
	sortedOffs := make([]uint32, len(ids))
	for k, i := range order {
		sorted[k], sortedOffs[k] = ids[i], uint32(offs[i])
	}
	raw := rawIndex(sorted, sortedOffs, nil)
	idx, err := parseIndex(raw)
	require.NoError(t, err)
	p := &pack{id: 1, name: "pack-test.pack", data: data, idx: idx}
	p.refs.Store(1 << 30)
	return p, offs
}

func TestHandMadePacks(t *testing.T) {
	hello := []byte("hello, pack\n")
	blob := func(size int64, content []byte) []byte {
		return append(objHeader(objBlob, size), zlibOf(t, content)...)
	}
	badSum := blob(int64(len(hello)), hello)
	badSum[len(badSum)-1] ^= 0xff
	// A delta of hello: source size, target size, copy 5 bytes from 0.
	delta := []byte{byte(len(hello)), 5, 0x90, 5}
	idA, idB := plumbing.Hash{0xaa}, plumbing.Hash{0xbb}

	tests := []struct {
		name    string
		objs    [][]byte
		ids     []plumbing.Hash
		at      int // the object read
		want    string
		size    int64 // from size(); -1 when it fails too
		wantErr error
		absent  bool // resolve answers ok=false: go-git's to serve
	}{
		{name: "whole", objs: [][]byte{blob(int64(len(hello)), hello)}, want: string(hello), size: int64(len(hello))},
		{name: "empty", objs: [][]byte{blob(0, nil)}, want: "", size: 0},
		{name: "short header", objs: [][]byte{blob(5, hello)}, size: 5, wantErr: ErrSizeMismatch},
		{name: "long header", objs: [][]byte{blob(20, hello)}, size: 20, wantErr: ErrSizeMismatch},
		{name: "bad checksum", objs: [][]byte{badSum}, size: int64(len(hello)), wantErr: errCorruptPack},
		{name: "absurd size", objs: [][]byte{blob(1<<50, hello)}, size: 1 << 50, wantErr: ErrSizeMismatch},
		{name: "not zlib", objs: [][]byte{append(objHeader(objBlob, 3), "abc"...)}, size: 3, wantErr: errCorruptPack},
		{name: "type 5", objs: [][]byte{append(objHeader(5, 3), zlibOf(t, []byte("abc"))...)}, size: -1, wantErr: errCorruptPack},
		{name: "header past end", objs: [][]byte{{0xb3, 0x80, 0x80}}, size: -1, wantErr: errCorruptPack},
		{name: "ofs delta", at: 1, objs: [][]byte{
			blob(int64(len(hello)), hello),
			append(append(objHeader(objOfsDelta, int64(len(delta))), ofsDistance(int64(len(blob(int64(len(hello)), hello))))...), zlibOf(t, delta)...),
		}, want: "hello", size: 5},
		{name: "ofs delta to itself", objs: [][]byte{
			append(append(objHeader(objOfsDelta, int64(len(delta))), 0), zlibOf(t, delta)...),
		}, size: -1, wantErr: errCorruptPack},
		{name: "ofs delta before the pack", objs: [][]byte{
			append(append(objHeader(objOfsDelta, int64(len(delta))), ofsDistance(100)...), zlibOf(t, delta)...),
		}, size: -1, wantErr: errCorruptPack},
		{name: "ref delta cycle", ids: []plumbing.Hash{idA, idB}, objs: [][]byte{
			append(append(objHeader(objRefDelta, int64(len(delta))), idB[:]...), zlibOf(t, delta)...),
			append(append(objHeader(objRefDelta, int64(len(delta))), idA[:]...), zlibOf(t, delta)...),
		}, size: 5, wantErr: errCorruptPack},
		{name: "ref delta to another pack", ids: []plumbing.Hash{idA}, objs: [][]byte{
			append(append(objHeader(objRefDelta, int64(len(delta))), idB[:]...), zlibOf(t, delta)...),
		}, size: 5, absent: true},
		{name: "delta that does not fit its base", objs: [][]byte{
			blob(int64(len(hello)), hello),
			append(append(objHeader(objOfsDelta, 4), ofsDistance(int64(len(blob(int64(len(hello)), hello))))...), zlibOf(t, []byte{3, 5, 0x90, 5})...),
		}, at: 1, size: 5, wantErr: errCorruptPack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, offs := handPack(t, tt.objs, tt.ids)
			off := offs[tt.at]
			n, err := p.size(off)
			if tt.size < 0 {
				assert.ErrorIs(t, err, errCorruptPack)
			} else if assert.NoError(t, err) {
				assert.Equal(t, tt.size, n)
			}
			got, _, ok, err := p.resolve(newBaseCache(1<<20), off)
			assert.Equal(t, !tt.absent, ok)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
			} else if assert.NoError(t, err) {
				assert.Equal(t, tt.want, string(got))
			}
			if typ, size, pos, err := p.header(off); err == nil && wholeType(typ) != plumbing.InvalidObject {
				// The stream checks the same as the whole decode.
				z, err := getInflater(p.stream(pos))
				if err == nil {
					r := &packReader{p: p, z: z, off: off, size: size}
					var b []byte
					b, err = io.ReadAll(r)
					r.Close()
					if tt.wantErr == nil {
						assert.Equal(t, tt.want, string(b))
					}
				}
				if tt.wantErr != nil {
					assert.ErrorIs(t, err, tt.wantErr, "streamed")
				} else {
					assert.NoError(t, err, "streamed")
				}
			}
		})
	}
}

func TestSharedChainsDecodeOnce(t *testing.T) {
	fx := gittest.MainFixture(t)
	ps := openTestPacks(t, fx.Dir)
	// Git deltifies older versions against newer ones: the chain of
	// commit 4's src/gen.txt runs through commit 5's, and on.
	var want [2][]byte
	var hs [2]plumbing.Hash
	for i, c := range []string{fx.Commits[5], fx.Commits[4]} {
		hs[i] = plumbing.NewHash(gittest.Git(t, fx.Dir, "rev-parse", c+":src/gen.txt"))
		want[i] = []byte(gittest.GitAt(t, fx.Dir, gittest.Time, nil, "cat-file", "blob", hs[i].String()) + "\n")
	}
	p, off, ok := ps.pin(hs[1])
	require.True(t, ok)
	typ, _, _, err := p.header(off)
	p.release()
	require.NoError(t, err)
	require.Equal(t, byte(objOfsDelta), typ, "the older version is a delta")

	got, _, ok, err := ps.bytes(hs[0])
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, want[0], got)
	assert.Zero(t, ps.bases.hits.Load())
	got, _, ok, err = ps.bytes(hs[1])
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, want[1], got)
	assert.Equal(t, int64(1), ps.bases.hits.Load(), "the second chain stops at the first's cached base")
}

func TestBaseCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newBaseCache(100)
	c.put(1, 10, make([]byte, 20), plumbing.BlobObject)
	c.put(1, 20, make([]byte, 20), plumbing.BlobObject)
	c.put(1, 30, make([]byte, 26), plumbing.BlobObject) // over a quarter: not kept
	_, ok := c.get(1, 30)
	assert.False(t, ok, "a base over a quarter of the cache is not kept")
	_, ok = c.get(1, 10) // 10 is now the most recent
	require.True(t, ok)
	for off := int64(40); off <= 80; off += 10 {
		c.put(1, off, make([]byte, 20), plumbing.BlobObject)
	}
	_, ok = c.get(1, 20)
	assert.False(t, ok, "the least recently used went first")
	_, ok = c.get(2, 40)
	assert.False(t, ok, "keyed by pack too")
	assert.LessOrEqual(t, c.lru.Cost(), int64(100))

	// The bound is on what is held: a grown buffer's capacity.
	c = newBaseCache(100)
	c.put(1, 10, make([]byte, 10, 20), plumbing.BlobObject)
	c.put(1, 20, make([]byte, 10, 26), plumbing.BlobObject)
	_, ok = c.get(1, 20)
	assert.False(t, ok, "a base whose buffer is over a quarter of the cache is not kept")
	for off := int64(30); off <= 80; off += 10 {
		c.put(1, off, make([]byte, 10, 20), plumbing.BlobObject)
	}
	assert.Equal(t, int64(100), c.lru.Cost(), "five buffers of 20")
	assert.Equal(t, 5, c.lru.Len())
}

// BenchmarkDecodeHead decodes every blob of HEAD of $GITFS_BENCH_REPO (a
// worktree; the main fixture when unset) through the pack reader, on one
// and two goroutines, and through go-git's storage as the mount did
// before.
func BenchmarkDecodeHead(b *testing.B) {
	dir := os.Getenv("GITFS_BENCH_REPO")
	if dir == "" {
		dir = gittest.MainFixture(b).Dir
	}
	var hs []plumbing.Hash
	for _, line := range strings.Split(gittest.Git(b, dir, "ls-tree", "-r", "HEAD"), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == "blob" {
			hs = append(hs, plumbing.NewHash(f[2]))
		}
	}
	require.NotEmpty(b, hs)
	decode := func(b *testing.B, workers int, cache bool) {
		o, err := Open(dir)
		require.NoError(b, err)
		defer o.Close()
		if !cache {
			o.dirs[0].fast.packs.bases = newBaseCache(0)
		}
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := w; i < len(hs); i += workers {
						r, n, err := o.Reader(plumbing.BlobObject, hs[i])
						if err == nil {
							_, err = io.CopyN(io.Discard, r, n)
							r.Close()
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("packs/%d", workers), func(b *testing.B) { decode(b, workers, true) })
	}
	b.Run("packs-nocache/1", func(b *testing.B) { decode(b, 1, false) })
	b.Run("go-git/1", func(b *testing.B) {
		o, err := Open(dir)
		require.NoError(b, err)
		defer o.Close()
		o.dirs[0].fast.packs.close() // every read falls back to go-git
		b.ResetTimer()
		for range b.N {
			for _, h := range hs {
				r, n, err := o.Reader(plumbing.BlobObject, h)
				require.NoError(b, err)
				_, err = io.CopyN(io.Discard, r, n)
				require.NoError(b, err)
				r.Close()
			}
		}
	})
}

// A pack's mapping leaves the process every trimEvery bytes read, and
// every object still reads right after, concurrent readers included.
func TestPackPagesLeaveTheProcessAsItIsRead(t *testing.T) {
	old := trimEvery
	trimEvery = 4 << 10
	t.Cleanup(func() { trimEvery = old })
	fx := gittest.MainFixture(t)
	objs := catAll(t, fx.Dir)
	objs = objs[:min(len(objs), 60)]
	ps := openTestPacks(t, fx.Dir)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { checkAgainstGit(t, ps, objs) })
	}
	wg.Wait()
	var trims int64
	for _, p := range ps.list {
		trims += p.trims.Load()
	}
	assert.Greater(t, trims, int64(4), "trimmed as it was read")
}
