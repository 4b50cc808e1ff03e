package boltstore

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// applier applies mutations to one write transaction. Chunks changed by the
// batch are kept in dirty, owned and mutable, and put once at the end: a
// run of small appends to one chunk costs one put, not one per append.
type applier struct {
	tx                    *bolt.Tx
	inodes, entries, data *bolt.Bucket
	sizes                 map[uint64]int64
	dirty                 map[uint64]map[int64][]byte
}

// apply takes m's parts in the order memfs.Mutation prescribes.
func (a *applier) apply(m *memfs.Mutation) error {
	switch {
	case m.Checkpoint != nil:
		return a.saveCheckpoint(m.Checkpoint)
	case m.DropCheckpoint != nil:
		return a.dropCheckpoint(m.DropCheckpoint)
	}
	for _, ino := range m.Cleared {
		if err := a.cut(ino, 0); err != nil {
			return err
		}
		delete(a.dirty, ino)
		a.sizes[ino] = 0
	}
	for _, w := range m.Writes {
		a.write(w)
	}
	for i := range m.Inodes {
		r := &m.Inodes[i]
		if err := a.inodes.Put(inoKey(r.Ino), encodeInode(r)); err != nil {
			return err
		}
		if !r.Mode.IsRegular() {
			continue
		}
		if old, known := a.sizes[r.Ino]; !known || r.Size < old {
			if err := a.cut(r.Ino, r.Size); err != nil {
				return err
			}
		}
		a.sizes[r.Ino] = r.Size
	}
	for _, e := range m.Entries {
		var err error
		if e.Ino == 0 {
			err = a.entries.Delete(entryKey(e.Dir, e.Name))
		} else {
			err = a.entries.Put(entryKey(e.Dir, e.Name), inoKey(e.Ino))
		}
		if err != nil {
			return err
		}
	}
	for _, ino := range m.Freed {
		if err := a.cut(ino, 0); err != nil {
			return err
		}
		if err := a.inodes.Delete(inoKey(ino)); err != nil {
			return err
		}
		delete(a.sizes, ino)
		delete(a.dirty, ino)
	}
	return nil
}

// chunk returns chunk idx of ino for changing: the batch's copy, or a copy
// of what the file holds, or nil for a hole.
func (a *applier) chunk(ino uint64, idx int64) []byte {
	if c, ok := a.dirty[ino][idx]; ok {
		if err := unpin(a.tx, chunkKey(ino, idx), c); err != nil {
			panic(err) // write recovers it as the batch's error
		}
		return c
	}
	if v := a.data.Get(chunkKey(ino, idx)); v != nil {
		if err := unpin(a.tx, chunkKey(ino, idx), v); err != nil {
			panic(err)
		}
		c := make([]byte, len(v), chunkSize)
		copy(c, v)
		return c
	}
	return nil
}

func (a *applier) setChunk(ino uint64, idx int64, c []byte) {
	m := a.dirty[ino]
	if m == nil {
		m = map[int64][]byte{}
		a.dirty[ino] = m
	}
	m[idx] = c
}

func (a *applier) write(w memfs.WriteRecord) {
	p, off := w.Data, w.Off
	for len(p) > 0 {
		idx, in := off/chunkSize, int(off%chunkSize)
		n := min(len(p), chunkSize-in)
		c := a.chunk(w.Ino, idx)
		if len(c) < in+n {
			if cap(c) < in+n {
				c = append(make([]byte, 0, chunkSize), c...)
			}
			old := len(c)
			c = c[:in+n]
			clear(c[old:])
		}
		copy(c[in:], p[:n])
		a.setChunk(w.Ino, idx, c)
		p, off = p[n:], off+int64(n)
	}
}

// cut drops ino's data at and past size: whole chunks are deleted, the
// last one shortened.
func (a *applier) cut(ino uint64, size int64) error {
	first := (size + chunkSize - 1) / chunkSize // the first chunk wholly past size
	if keep := int(size % chunkSize); keep != 0 {
		idx := size / chunkSize
		if c := a.chunk(ino, idx); len(c) > keep {
			a.setChunk(ino, idx, c[:keep])
		}
	}
	for idx, c := range a.dirty[ino] {
		if idx >= first {
			if err := unpin(a.tx, chunkKey(ino, idx), c); err != nil {
				return err
			}
			delete(a.dirty[ino], idx)
		}
	}
	// Collect, then delete: deleting under a bbolt cursor skips keys.
	var doomed [][]byte
	prefix := inoKey(ino)
	c := a.data.Cursor()
	for k, _ := c.Seek(chunkKey(ino, first)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		doomed = append(doomed, bytes.Clone(k))
	}
	for _, k := range doomed {
		if err := unpin(a.tx, k, a.data.Get(k)); err != nil {
			return err
		}
		if err := a.data.Delete(k); err != nil {
			return fmt.Errorf("deleting a chunk: %w", err)
		}
	}
	return nil
}

// finish puts every chunk the batch changed.
func (a *applier) finish() error {
	for ino, chunks := range a.dirty {
		for idx, c := range chunks {
			if err := a.data.Put(chunkKey(ino, idx), c); err != nil {
				return err
			}
		}
	}
	return nil
}
