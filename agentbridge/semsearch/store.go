package semsearch

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The cache directory (Config.CacheDir):
//
//	semsearch/
//	  <model>/blobs/<oid[:2]>/<oid>   the chunks of one blob and their vectors
//	  trees/<commit>/<tree>           the files of one commit's tree: oid size path
//
// <model> is the first 12 hex digits of the sha256 of the model's name:
// vectors of one model are never mixed with another's. <tree> is the
// git id of the tree the mount serves (a commit's root, or a subtree). A
// blob entry is:
//
//	"vfsmount-semsearch-blob 1\n"
//	uint32 chunks, uint32 dimensions               (little-endian)
//	per chunk: uint32 start line, uint32 end line, dimensions float32 (unit length)
//	sha256 of everything before it
//
// Every file is written to a temporary name and renamed into place; one
// that is short, corrupt or of another format is recomputed.

const blobMagic = "vfsmount-semsearch-blob 1\n"

// entry is one blob's chunks and their vectors (unit length).
type entry struct {
	dim    int
	ranges [][2]uint32 // start, end line of each chunk
	vecs   []float32   // len(ranges)*dim
}

func (e *entry) vec(i int) []float32 { return e.vecs[i*e.dim : (i+1)*e.dim] }

func (e *entry) bytes() int { return len(e.vecs)*4 + len(e.ranges)*8 + 64 }

func encodeEntry(e *entry) []byte {
	var b bytes.Buffer
	b.WriteString(blobMagic)
	var u [4]byte
	put := func(v uint32) {
		binary.LittleEndian.PutUint32(u[:], v)
		b.Write(u[:])
	}
	put(uint32(len(e.ranges)))
	put(uint32(e.dim))
	for i, r := range e.ranges {
		put(r[0])
		put(r[1])
		for _, f := range e.vec(i) {
			put(math.Float32bits(f))
		}
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

var errCorrupt = errors.New("corrupt cache entry")

func decodeEntry(data []byte) (*entry, error) {
	if len(data) < len(blobMagic)+8+sha256.Size || string(data[:len(blobMagic)]) != blobMagic {
		return nil, errCorrupt
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, errCorrupt
	}
	p := body[len(blobMagic):]
	n, dim := int(binary.LittleEndian.Uint32(p)), int(binary.LittleEndian.Uint32(p[4:]))
	p = p[8:]
	if n > 0 && dim == 0 || len(p) != n*(8+4*dim) {
		return nil, errCorrupt
	}
	e := &entry{dim: dim, ranges: make([][2]uint32, n), vecs: make([]float32, n*dim)}
	for i := range n {
		e.ranges[i] = [2]uint32{binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])}
		p = p[8:]
		for j := range dim {
			e.vecs[i*dim+j] = math.Float32frombits(binary.LittleEndian.Uint32(p))
			p = p[4:]
		}
	}
	return e, nil
}

// store is the cache directory of one model.
type store struct {
	root  string // CacheDir/semsearch
	model string // root/<model>
}

func newStore(cacheDir, model string) *store {
	root := filepath.Join(cacheDir, "semsearch")
	sum := sha256.Sum256([]byte(model))
	return &store{root: root, model: filepath.Join(root, fmt.Sprintf("%x", sum[:6]))}
}

func validOID(oid string) bool {
	if len(oid) != 40 && len(oid) != 64 {
		return false
	}
	for _, c := range oid {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *store) blobPath(oid string) string {
	return filepath.Join(s.model, "blobs", oid[:2], oid)
}

// load reads oid's entry: nil, nil when there is none or it is corrupt
// (then it is recomputed and overwritten).
func (s *store) load(oid string) (*entry, error) {
	data, err := os.ReadFile(s.blobPath(oid))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e, err := decodeEntry(data)
	if err != nil {
		return nil, nil
	}
	return e, nil
}

func (s *store) save(oid string, e *entry) error {
	return writeAtomic(s.blobPath(oid), encodeEntry(e))
}

// writeAtomic writes data to path by way of a temporary file in its
// directory, so a reader sees the old file, the new one or none.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// TreeFile is a file of an immutable tree: its path below the tree's root
// (slash-separated), its git blob id and its size.
type TreeFile struct {
	Path string
	OID  string
	Size int64
}

const treeMagic = "vfsmount-semsearch-tree 1"

func (s *store) treePath(commit, tree string) string {
	return filepath.Join(s.root, "trees", commit, tree)
}

// loadTree reads a tree's list: ok false when there is none or it is
// corrupt.
func (s *store) loadTree(commit, tree string) ([]TreeFile, bool) {
	data, err := os.ReadFile(s.treePath(commit, tree))
	if err != nil {
		return nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() || sc.Text() != treeMagic {
		return nil, false
	}
	var out []TreeFile
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "end "); ok {
			if c, err := strconv.Atoi(n); err != nil || c != len(out) || sc.Scan() {
				return nil, false
			}
			return out, true
		}
		oid, rest, ok1 := strings.Cut(line, " ")
		size, path, ok2 := strings.Cut(rest, " ")
		n, err := strconv.ParseInt(size, 10, 64)
		if !ok1 || !ok2 || err != nil || !validOID(oid) || path == "" {
			return nil, false
		}
		p, err := strconv.Unquote(path)
		if err != nil {
			return nil, false
		}
		out = append(out, TreeFile{Path: p, OID: oid, Size: n})
	}
	return nil, false // no end line: cut short
}

func (s *store) saveTree(commit, tree string, files []TreeFile) error {
	var b bytes.Buffer
	b.WriteString(treeMagic + "\n")
	for _, f := range files {
		fmt.Fprintf(&b, "%s %d %s\n", f.OID, f.Size, strconv.Quote(f.Path))
	}
	fmt.Fprintf(&b, "end %d\n", len(files))
	return writeAtomic(s.treePath(commit, tree), b.Bytes())
}
