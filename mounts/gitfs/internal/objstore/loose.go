package objstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// looseObjects reads loose objects — objects/ab/cdef…, each a zlib stream
// of "<type> <size>\x00<content>" — straight from their files, without
// go-git and its lock: a repository nobody has packed yet (a fresh clone
// of a few commits, a working repository between gc runs) is all loose
// objects, and go-git serves them one at a time. Files over maxLooseFile
// (compressed) are left to go-git, which streams them.
type looseObjects struct {
	dir string // the objects directory on the host; never in an error
}

// maxLooseFile is the largest loose object file read whole.
const maxLooseFile = 1 << 20

// maxLooseHeader bounds "<type> <size>\x00": "commit" and 20 digits.
const maxLooseHeader = 32

// load returns the type and size of loose object h and, when whole is set,
// its content. ok is false when h is not a loose object this reader takes
// (no such file, or, for the content, one over maxLooseFile).
func (l looseObjects) load(h plumbing.Hash, whole bool) (typ plumbing.ObjectType, size int64, content []byte, ok bool, err error) {
	hex := h.String()
	f, err := os.Open(filepath.Join(l.dir, hex[:2], hex[2:]))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, 0, nil, false, nil
		}
		return 0, 0, nil, true, unwrapPath(err)
	}
	defer f.Close()
	if !whole {
		// The header starts the stream: a prefix of the file is
		// enough (see headPrefix), whatever the file's size.
		var prefix [headPrefix]byte
		n, err := io.ReadFull(f, prefix[:])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return 0, 0, nil, true, unwrapPath(err)
		}
		typ, size, _, err = parseLoose(prefix[:n], false)
		if err == nil || n < len(prefix) {
			return typ, size, nil, true, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, 0, nil, true, unwrapPath(err)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxLooseFile+1))
	if err != nil {
		return 0, 0, nil, true, unwrapPath(err)
	}
	if len(data) > maxLooseFile {
		return 0, 0, nil, false, nil
	}
	typ, size, content, err = parseLoose(data, whole)
	return typ, size, content, true, err
}

// parseLoose inflates a loose object file: its header, and its content
// when whole is set (checked against the header's size and the stream's
// checksum).
func parseLoose(data []byte, whole bool) (plumbing.ObjectType, int64, []byte, error) {
	bad := func(what string) error { return fmt.Errorf("%w: loose object: %s", errCorruptPack, what) }
	z, err := getInflater(data)
	if err != nil {
		return 0, 0, nil, err
	}
	defer putInflater(z)
	var head [maxLooseHeader]byte
	n, nul := 0, -1
	for nul < 0 && n < len(head) {
		k, err := z.z.Read(head[n:])
		nul = bytes.IndexByte(head[n:n+k], 0)
		if nul >= 0 {
			nul += n
		}
		n += k
		if err != nil && nul < 0 {
			return 0, 0, nil, bad("no header")
		}
	}
	if nul < 0 {
		return 0, 0, nil, bad("header too long")
	}
	name, num, found := bytes.Cut(head[:nul], []byte{' '})
	typ, terr := plumbing.ParseObjectType(string(name))
	size, serr := strconv.ParseInt(string(num), 10, 64)
	switch typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	default:
		terr = fmt.Errorf("type %q", name)
	}
	if !found || terr != nil || serr != nil || size < 0 {
		return 0, 0, nil, bad(fmt.Sprintf("bad header %q", head[:nul]))
	}
	if !whole {
		return typ, size, nil, nil
	}
	if size/maxDeflateRatio > int64(len(data)) {
		return 0, 0, nil, bad("size does not fit the file")
	}
	content := make([]byte, size)
	got := copy(content, head[nul+1:n])
	if int64(n-nul-1) > size {
		return 0, 0, nil, fmt.Errorf("%w: %w: more data than the header says", errCorruptPack, ErrSizeMismatch)
	}
	if _, err := io.ReadFull(z.z, content[got:]); err != nil {
		return 0, 0, nil, corrupt(err)
	}
	if err := atEnd(z.z); err != nil {
		return 0, 0, nil, err
	}
	return typ, size, content, nil
}

// fastObjects reads objects without go-git: packed ones through the pack
// reader, loose ones from their files. ok is false when neither has the
// object (an alternate's, a large loose one, a REF_DELTA across packs).
type fastObjects struct {
	packs *packs
	loose looseObjects
}

func (f fastObjects) size(h plumbing.Hash) (int64, bool, error) {
	if n, ok, err := f.packs.size(h); ok {
		return n, ok, err
	}
	_, n, _, ok, err := f.loose.load(h, false)
	return n, ok, err
}

// bytes returns the whole content; it may be shared with the pack
// reader's base cache, so callers must not modify it.
func (f fastObjects) bytes(h plumbing.Hash) ([]byte, plumbing.ObjectType, bool, error) {
	if b, typ, ok, err := f.packs.bytes(h); ok {
		return b, typ, ok, err
	}
	typ, _, b, ok, err := f.loose.load(h, true)
	return b, typ, ok, err
}

func (f fastObjects) open(h plumbing.Hash) (io.ReadCloser, int64, plumbing.ObjectType, bool, error) {
	if r, n, typ, ok, err := f.packs.open(h); ok {
		return r, n, typ, ok, err
	}
	typ, n, b, ok, err := f.loose.load(h, true)
	if !ok || err != nil {
		return nil, 0, 0, ok, err
	}
	return io.NopCloser(bytes.NewReader(b)), n, typ, true, nil
}
