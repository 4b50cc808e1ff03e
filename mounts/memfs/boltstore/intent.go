package boltstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// Restores across stores (memfs.RestoreIntent): the file keeps an identity
// of its own ("id" in the meta bucket, random, made once), and bucket
// "restores" holds the pending intent ("pending", JSON) of a participant
// and the decisions ("d"+restore id, JSON) of a coordinator. Each is put
// and dropped in the transaction of the mutation that carries it, so a
// decision is durable exactly when the coordinator's restore is, and a
// participant's intent goes exactly when its restore lands.

var (
	bucketRestores = []byte("restores")
	keyPending     = []byte("pending")
	keyID          = []byte("id")
)

var _ memfs.IdentifiedStore = (*Store)(nil)

// Identity is the file's identity: a restore intent names its coordinator
// by it. It stays with the file when the file is moved or copied.
func (s *Store) Identity() string { return s.id }

// ensureID gives a file its identity, the first time a version that keeps
// one opens it.
func ensureID(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(keyID) != nil {
		return nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	return meta.Put(keyID, []byte(hex.EncodeToString(b[:])))
}

// applyIntent applies the restore records of m.
func (a *applier) applyIntent(m *memfs.Mutation) error {
	if m.Prepare == nil && m.Forget == nil && m.Decided == nil && m.Settled == "" {
		return nil
	}
	b, err := a.tx.CreateBucketIfNotExists(bucketRestores)
	if err != nil {
		return err
	}
	if m.Prepare != nil {
		v, err := json.Marshal(m.Prepare)
		if err != nil {
			return err
		}
		if err := b.Put(keyPending, v); err != nil {
			return err
		}
	}
	for _, id := range m.Forget {
		if err := b.Delete(append([]byte("d"), id...)); err != nil {
			return err
		}
	}
	if d := m.Decided; d != nil {
		v, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if err := b.Put(append([]byte("d"), d.ID...), v); err != nil {
			return err
		}
	}
	if m.Settled != "" {
		if v := b.Get(keyPending); v != nil {
			var p memfs.RestoreIntent
			if err := json.Unmarshal(v, &p); err != nil || p.ID == m.Settled {
				return b.Delete(keyPending)
			}
		}
	}
	return nil
}

// readIntents reads the pending intent and the decisions.
func readIntents(tx *bolt.Tx, img *memfs.Image) error {
	b := tx.Bucket(bucketRestores)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		switch {
		case string(k) == string(keyPending):
			img.Pending = &memfs.RestoreIntent{}
			if err := json.Unmarshal(v, img.Pending); err != nil {
				return fmt.Errorf("pending restore: %w", err)
			}
		case len(k) > 1 && k[0] == 'd':
			var d memfs.RestoreDecision
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("restore decision %q: %w", k[1:], err)
			}
			img.Decided = append(img.Decided, d)
		default:
			return fmt.Errorf("restores: bad key %q", k)
		}
		return nil
	})
}
