package boltstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// Checkpoints of the tree ([memfs.Mutation.Checkpoint]) live in the same
// file, in three more buckets:
//
//   - "checkpoints" holds one nested bucket per checkpoint, named by its
//     id: "m" (its order, time and name), "i"+inode (metadata of an inode
//     it froze), "x"+inode (an inode absent from it), "e"+dir+name (the
//     names of a directory it froze), "p"+inode+chunk index (the
//     SHA-256 of that chunk of a file it froze) and "n"+name (a name
//     changed since the checkpoint before);
//   - "checkpoint chunks" maps a SHA-256 to the chunk's bytes, and
//     "checkpoint refs" to how many checkpoint chunks name it. A chunk is
//     stored once however many checkpoints hold it; the last to let go of
//     it deletes it.
//
// Saving a checkpoint takes the chunks of the files it froze (those that
// changed since the previous checkpoint) from the live data, in the
// transaction of the batch it comes in, so it holds exactly what the tree
// held. It does not copy them: a chunk it shares with the live data is
// pinned ("checkpoint live chunks" maps its SHA-256 to the live chunk,
// "checkpoint pins" the live chunk to its SHA-256), and copied out to
// "checkpoint chunks" in the transaction that first changes or drops the
// live chunk. Unchanged data is therefore stored once: shared by the live
// tree and every checkpoint that holds it.

var (
	bucketCkpts  = []byte("checkpoints")
	bucketChunks = []byte("checkpoint chunks")
	bucketRefs   = []byte("checkpoint refs")
	// bucketLive maps the SHA-256 of a checkpoint chunk still held by
	// the live data to where (inode and index); bucketPins maps that
	// live chunk back to the SHA-256. The live chunk is copied out to
	// bucketChunks before it changes.
	bucketLive = []byte("checkpoint live chunks")
	bucketPins = []byte("checkpoint pins")
)

var keyCkptMeta = []byte("m")

// saveCheckpoint applies a checkpoint record.
func (a *applier) saveCheckpoint(r *memfs.CheckpointRecord) error {
	ckpts, chunks, refs, err := ckptBuckets(a.tx)
	if err != nil {
		return err
	}
	b, err := ckpts.CreateBucket([]byte(r.ID))
	if err != nil {
		return fmt.Errorf("checkpoint %q: %w", r.ID, err)
	}
	seq, err := ckpts.NextSequence()
	if err != nil {
		return err
	}
	meta := binary.BigEndian.AppendUint64(nil, seq)
	meta = appendTime(meta, r.Time)
	meta = appendBytes(meta, []byte(r.Name))
	if err := b.Put(keyCkptMeta, meta); err != nil {
		return err
	}
	for i := range r.Inodes {
		rec := &r.Inodes[i]
		if err := b.Put(append([]byte("i"), inoKey(rec.Ino)...), encodeInode(rec)); err != nil {
			return err
		}
		if !rec.Mode.IsRegular() {
			continue
		}
		live, pins, err := liveBuckets(a.tx)
		if err != nil {
			return err
		}
		err = a.liveChunks(rec.Ino, func(idx int64, data []byte) error {
			sum := sha256.Sum256(data)
			if chunks.Get(sum[:]) == nil && live.Get(sum[:]) == nil {
				// Shared with the live data: pinned, not copied.
				key := chunkKey(rec.Ino, idx)
				if err := live.Put(sum[:], key); err != nil {
					return err
				}
				if err := pins.Put(key, sum[:]); err != nil {
					return err
				}
			}
			if err := addRef(refs, sum[:], 1); err != nil {
				return err
			}
			return b.Put(append([]byte("p"), chunkKey(rec.Ino, idx)...), sum[:])
		})
		if err != nil {
			return err
		}
	}
	for _, e := range r.Entries {
		if err := b.Put(append([]byte("e"), entryKey(e.Dir, e.Name)...), inoKey(e.Ino)); err != nil {
			return err
		}
	}
	for _, ino := range r.Absent {
		if err := b.Put(append([]byte("x"), inoKey(ino)...), nil); err != nil {
			return err
		}
	}
	for _, n := range r.Names {
		if err := b.Put(append([]byte("n"), n...), nil); err != nil {
			return err
		}
	}
	return nil
}

// liveChunks calls fn with every chunk ino holds now, in this batch.
func (a *applier) liveChunks(ino uint64, fn func(idx int64, data []byte) error) error {
	seen := map[int64]bool{}
	prefix := inoKey(ino)
	c := a.data.Cursor()
	type kv struct {
		idx  int64
		data []byte
	}
	var stored []kv
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		stored = append(stored, kv{int64(binary.BigEndian.Uint64(k[8:])), v})
	}
	for idx, data := range a.dirty[ino] {
		seen[idx] = true
		if err := fn(idx, data); err != nil {
			return err
		}
	}
	for _, s := range stored {
		if !seen[s.idx] {
			if err := fn(s.idx, s.data); err != nil {
				return err
			}
		}
	}
	return nil
}

func ckptBuckets(tx *bolt.Tx) (ckpts, chunks, refs *bolt.Bucket, err error) {
	if ckpts, err = tx.CreateBucketIfNotExists(bucketCkpts); err != nil {
		return
	}
	if chunks, err = tx.CreateBucketIfNotExists(bucketChunks); err != nil {
		return
	}
	refs, err = tx.CreateBucketIfNotExists(bucketRefs)
	return
}

func liveBuckets(tx *bolt.Tx) (live, pins *bolt.Bucket, err error) {
	if live, err = tx.CreateBucketIfNotExists(bucketLive); err != nil {
		return
	}
	pins, err = tx.CreateBucketIfNotExists(bucketPins)
	return
}

// unpin copies the live chunk key out to the checkpoint chunks if a
// checkpoint holds it, before it changes or goes; current is its content
// now (in this batch).
func unpin(tx *bolt.Tx, key, current []byte) error {
	pins := tx.Bucket(bucketPins)
	if pins == nil {
		return nil
	}
	sum := pins.Get(key)
	if sum == nil {
		return nil
	}
	sum = bytes.Clone(sum)
	if err := tx.Bucket(bucketChunks).Put(sum, bytes.Clone(current)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketLive).Delete(sum); err != nil {
		return err
	}
	return pins.Delete(key)
}

// addRef adds delta to the count of chunk sum, deleting the chunk when
// none is left.
func addRef(refs *bolt.Bucket, sum []byte, delta int64) error {
	var n int64
	if v := refs.Get(sum); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	n += delta
	if n > 0 {
		return refs.Put(sum, binary.BigEndian.AppendUint64(nil, uint64(n)))
	}
	if err := refs.Delete(sum); err != nil {
		return err
	}
	tx := refs.Tx()
	if live := tx.Bucket(bucketLive); live != nil {
		if key := live.Get(sum); key != nil {
			if err := tx.Bucket(bucketPins).Delete(bytes.Clone(key)); err != nil {
				return err
			}
			if err := live.Delete(sum); err != nil {
				return err
			}
		}
	}
	return tx.Bucket(bucketChunks).Delete(sum)
}

// keyIno is the inode a checkpoint key is about.
func keyIno(k []byte) (uint64, bool) {
	if len(k) < 9 {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[1:9]), true
}

// dropCheckpoint applies a checkpoint deletion.
func (a *applier) dropCheckpoint(d *memfs.CheckpointDrop) error {
	ckpts, _, refs, err := ckptBuckets(a.tx)
	if err != nil {
		return err
	}
	b := ckpts.Bucket([]byte(d.ID))
	if b == nil {
		return nil // saved by a store that failed, or never: nothing to drop
	}
	var into *bolt.Bucket
	if d.Into != "" {
		into = ckpts.Bucket([]byte(d.Into))
	}
	// What into records itself it does not take (as into is before
	// anything moves).
	recorded := map[uint64]bool{}
	if into != nil {
		err := into.ForEach(func(k, v []byte) error {
			if ino, ok := keyIno(k); ok && (k[0] == 'i' || k[0] == 'x') {
				recorded[ino] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	has := func(ino uint64) bool { return into == nil || recorded[ino] }
	type kv struct{ k, v []byte }
	var keys []kv
	err = b.ForEach(func(k, v []byte) error {
		keys = append(keys, kv{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range keys {
		if e.k[0] == 'n' {
			if into != nil {
				if err := into.Put(e.k, nil); err != nil {
					return err
				}
			}
			continue
		}
		ino, ok := keyIno(e.k)
		if !ok {
			continue // the meta key
		}
		keep := !has(ino) && !(e.k[0] == 'x' && d.Oldest)
		switch {
		case keep:
			if err := into.Put(e.k, e.v); err != nil {
				return err
			}
		case e.k[0] == 'p':
			if err := addRef(refs, e.v, -1); err != nil {
				return err
			}
		}
	}
	return ckpts.DeleteBucket([]byte(d.ID))
}

// readCheckpoints reads the saved checkpoints, oldest first. Chunks of the
// same content come back as one slice.
func readCheckpoints(tx *bolt.Tx) ([]memfs.CheckpointImage, error) {
	ckpts := tx.Bucket(bucketCkpts)
	if ckpts == nil {
		return nil, nil
	}
	chunks, live, liveData := tx.Bucket(bucketChunks), tx.Bucket(bucketLive), tx.Bucket(bucketData)
	type loaded struct {
		seq uint64
		img memfs.CheckpointImage
	}
	var out []loaded
	shared := map[[32]byte][]byte{}
	err := ckpts.ForEach(func(name, v []byte) error {
		if v != nil {
			return fmt.Errorf("checkpoints: %q is not a bucket", name)
		}
		b := ckpts.Bucket(name)
		meta := b.Get(keyCkptMeta)
		if len(meta) < 8 {
			return fmt.Errorf("checkpoint %q: no metadata", name)
		}
		d := &decoder{b: meta[8:]}
		l := loaded{seq: binary.BigEndian.Uint64(meta)}
		l.img.ID = string(name)
		l.img.Time = d.time()
		l.img.Name = string(d.bytes())
		if d.err != nil {
			return fmt.Errorf("checkpoint %q: %w", name, d.err)
		}
		type page struct {
			ino  uint64
			idx  int64
			data []byte
		}
		var pages []page
		err := b.ForEach(func(k, v []byte) error {
			if k[0] == 'n' {
				l.img.Names = append(l.img.Names, string(k[1:]))
				return nil
			}
			ino, ok := keyIno(k)
			if !ok {
				return nil
			}
			switch k[0] {
			case 'i':
				r, err := decodeInode(ino, v)
				if err != nil {
					return err
				}
				l.img.Inodes = append(l.img.Inodes, r)
			case 'x':
				l.img.Absent = append(l.img.Absent, ino)
			case 'e':
				if len(v) != 8 {
					return fmt.Errorf("bad entry %x", k)
				}
				l.img.Entries = append(l.img.Entries, memfs.EntryRecord{Dir: ino, Name: string(k[9:]), Ino: binary.BigEndian.Uint64(v)})
			case 'p':
				if len(k) != 17 || len(v) != 32 {
					return fmt.Errorf("bad chunk reference %x", k)
				}
				sum := [32]byte(v)
				data, ok := shared[sum]
				if !ok {
					stored := chunks.Get(v)
					if stored == nil && live != nil {
						if key := live.Get(v); key != nil {
							stored = liveData.Get(key)
						}
					}
					if stored == nil {
						return fmt.Errorf("chunk %x is missing", v)
					}
					data = bytes.Clone(stored)
					shared[sum] = data
				}
				pages = append(pages, page{ino, int64(binary.BigEndian.Uint64(k[9:])), data})
			default:
				return fmt.Errorf("bad key %x", k)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("checkpoint %q: %w", name, err)
		}
		l.img.Content = func(put func(memfs.WriteRecord) error) error {
			for _, p := range pages {
				if err := put(memfs.WriteRecord{Ino: p.ino, Off: p.idx * chunkSize, Data: p.data}); err != nil {
					return err
				}
			}
			return nil
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b loaded) int { return int(a.seq) - int(b.seq) })
	imgs := make([]memfs.CheckpointImage, len(out))
	for i := range out {
		imgs[i] = out[i].img
	}
	return imgs, nil
}
