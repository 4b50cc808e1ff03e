package store

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"time"
)

// Format is the version of the manifests, heads and leases this build
// writes and the newest it reads. An object of a newer format is refused
// (ErrNewerFormat) and left as it is.
//
// Format 2 added packs (Manifest.Packs): a build of format 1 would not
// find a packed chunk, so it is refused such a manifest.
const Format = 2

// Layers: what a mount's tree in a manifest is.
const (
	// LayerMemory: the whole tree of a memory mount.
	LayerMemory = "memory"
	// LayerUpper: the upper layer of a copy-on-write overlay over
	// Commit (a writable git mount): its changes, whiteouts and
	// bookkeeping, never the commit's files.
	LayerUpper = "upper"
)

// Manifest is one checkpoint of a workspace in the store.
type Manifest struct {
	Format    int    `json:"format"`
	Workspace string `json:"workspace"`
	// Checkpoint is the id the checkpoint had where it was taken.
	Checkpoint string    `json:"checkpoint"`
	Name       string    `json:"name,omitempty"`
	Time       time.Time `json:"time"`
	// Parent is the manifest of the checkpoint pushed before it ("" for
	// the first).
	Parent    string          `json:"parent,omitempty"`
	ChunkSize int64           `json:"chunk_size"`
	Mounts    []MountManifest `json:"mounts"`
	// Packs say where the chunks that are not objects of their own are
	// (see the package doc); each lists only chunks this manifest names.
	Packs []Pack `json:"packs,omitempty"`
}

// Pack is an object holding small chunks end to end.
type Pack struct {
	Hash   string        `json:"hash"`
	Chunks []PackedChunk `json:"chunks"`
}

// PackedChunk is one chunk of a pack: its hash, offset and length.
type PackedChunk struct {
	Hash string `json:"hash"`
	Off  int64  `json:"off"`
	Len  int64  `json:"len"`
}

// packed is where a packed chunk is.
type packed struct {
	pack     string
	off, len int64
}

// packIndex maps every packed chunk m names to where it is.
func (m *Manifest) packIndex() map[string]packed {
	out := map[string]packed{}
	for _, p := range m.Packs {
		for _, c := range p.Chunks {
			out[c.Hash] = packed{pack: p.Hash, off: c.Off, len: c.Len}
		}
	}
	return out
}

// setPacks lists in m.Packs where each of its chunks that loc knows is,
// packs and chunks in a stable order.
func (m *Manifest) setPacks(loc map[string]packed) {
	byPack := map[string][]PackedChunk{}
	for h := range m.chunks() {
		if l, ok := loc[h]; ok {
			byPack[l.pack] = append(byPack[l.pack], PackedChunk{Hash: h, Off: l.off, Len: l.len})
		}
	}
	m.Packs = nil
	for _, h := range slices.Sorted(maps.Keys(byPack)) {
		cs := byPack[h]
		slices.SortFunc(cs, func(a, b PackedChunk) int { return cmp.Compare(a.Off, b.Off) })
		m.Packs = append(m.Packs, Pack{Hash: h, Chunks: cs})
	}
}

// MountManifest is one mount of a checkpoint.
type MountManifest struct {
	Prefix   string `json:"prefix"`
	Type     string `json:"type"`
	Source   string `json:"source"`
	Commit   string `json:"commit,omitempty"`
	Coverage string `json:"coverage"`
	// Layer is LayerMemory or LayerUpper for a frozen mount, "" for
	// one the checkpoint does not hold (a git commit, a host directory).
	Layer string `json:"layer,omitempty"`
	Tree  *Tree  `json:"tree,omitempty"`
}

// Tree is a memory tree: its inodes (by number) and the names binding
// them, as memfs keeps them.
type Tree struct {
	Inodes  []Inode `json:"inodes"`
	Entries []Entry `json:"entries"`
}

// Inode is one inode of a tree. A regular file's content is Chunks: the
// hashes of its ChunkSize pieces, in order (the last one shorter).
type Inode struct {
	Ino    uint64            `json:"ino"`
	Mode   fs.FileMode       `json:"mode"`
	Uid    uint32            `json:"uid,omitempty"`
	Gid    uint32            `json:"gid,omitempty"`
	Size   int64             `json:"size,omitempty"`
	Atime  time.Time         `json:"atime"`
	Mtime  time.Time         `json:"mtime"`
	Ctime  time.Time         `json:"ctime"`
	Target string            `json:"target,omitempty"`
	Rdev   uint32            `json:"rdev,omitempty"`
	Xattrs map[string][]byte `json:"xattrs,omitempty"`
	Chunks []string          `json:"chunks,omitempty"`
}

// Entry binds Name in directory Dir to inode Ino.
type Entry struct {
	Dir  uint64 `json:"dir"`
	Name string `json:"name"`
	Ino  uint64 `json:"ino"`
}

// chunks are every chunk hash m names.
func (m *Manifest) chunks() map[string]struct{} {
	out := map[string]struct{}{}
	for _, mm := range m.Mounts {
		if mm.Tree == nil {
			continue
		}
		for _, in := range mm.Tree.Inodes {
			for _, h := range in.Chunks {
				out[h] = struct{}{}
			}
		}
	}
	return out
}

// checkFormat refuses data of a newer format than this build's.
func (s *Store) checkFormat(key string, data []byte) error {
	var v struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("store %s: %s: %w: %v", s.url, key, ErrCorrupt, err)
	}
	if v.Format > Format {
		return fmt.Errorf("store %s: %s: %w (format %d; this vfsmount reads up to %d)", s.url, key, ErrNewerFormat, v.Format, Format)
	}
	if v.Format < 1 {
		return fmt.Errorf("store %s: %s: %w: no format", s.url, key, ErrCorrupt)
	}
	return nil
}

// putManifest writes m (created once: its name is its hash) and returns
// its hash and size.
func (s *Store) putManifest(ctx context.Context, m *Manifest) (string, int64, error) {
	m.Format = Format
	raw, err := json.Marshal(m)
	if err != nil {
		return "", 0, err
	}
	// Stored gzip-compressed: a manifest lists every inode of the
	// memory trees, and repeats itself (names, times, hashes' hex). At
	// the fastest level: a sync loop writes one every interval, and the
	// best level cost 5x the CPU for a manifest 13% smaller.
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := zw.Write(raw); err != nil {
		return "", 0, err
	}
	if err := zw.Close(); err != nil {
		return "", 0, err
	}
	data := buf.Bytes()
	h := sum(data)
	n, err := s.putChunkLike(ctx, s.key(manifestKeyPart(h)), data)
	return h, n, err
}

// putChunkLike creates key with data unless it is there.
func (s *Store) putChunkLike(ctx context.Context, key string, data []byte) (int64, error) {
	_, err := s.put(ctx, key, data, cond{ifNoneMatch: true})
	if err != nil {
		if isConflict(err) {
			return 0, nil
		}
		return 0, err
	}
	return int64(len(data)), nil
}

// Manifest reads manifest h, checked against its hash.
func (s *Store) Manifest(ctx context.Context, h string) (*Manifest, error) {
	key := s.key(manifestKeyPart(h))
	o, err := s.get(ctx, key)
	if err != nil {
		return nil, err
	}
	if sum(o.data) != h {
		s.log.Error("store: corrupt manifest", "store", s.url, "manifest", key)
		return nil, fmt.Errorf("store %s: manifest %s: %w: its bytes hash to %s", s.url, key, ErrCorrupt, sum(o.data))
	}
	data := o.data
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err == nil {
			data, err = io.ReadAll(io.LimitReader(zr, 1<<30))
		}
		if err != nil {
			return nil, fmt.Errorf("store %s: manifest %s: %w: %v", s.url, key, ErrCorrupt, err)
		}
	}
	if err := s.checkFormat(key, data); err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("store %s: manifest %s: %w: %v", s.url, key, ErrCorrupt, err)
	}
	return &m, nil
}
