package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Locks keep a collection off the chunks a push is deciding about. A push
// writes locks/push-ID, then lists locks/: a live gc lock there makes it
// take its own back and wait. A collection writes locks/gc-ID, then lists
// locks/: any other live lock makes it take its own back and give up
// (ErrBusy). Both write before they list, and listings see every write
// that came before (S3's strong consistency), so of a push and a
// collection at least one sees the other: never both go on. A lock names
// its end; a dead one (its writer crashed) is ignored past it, and a push
// that could outlive its lock gives up before writing its manifest.

type lockRecord struct {
	Format  int       `json:"format"`
	Kind    string    `json:"kind"`
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
}

// lockTTL bounds a push's or a collection's run.
const lockTTL = 15 * time.Minute

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// heldLock is a lock this process wrote.
type heldLock struct {
	key     string
	taken   time.Time
	expires time.Time
}

// lock writes a lock of kind and returns the live locks of the other kinds
// (of any other, for a gc lock) it then saw.
func (s *Store) lock(ctx context.Context, kind, holder string) (*heldLock, []lockRecord, error) {
	now := s.cfg.Now()
	l := &heldLock{key: s.key("locks", kind+"-"+randomID()), taken: now, expires: now.Add(lockTTL)}
	data, err := json.Marshal(lockRecord{Format: Format, Kind: kind, Holder: holder, Expires: l.expires})
	if err != nil {
		return nil, nil, err
	}
	if _, err := s.put(ctx, l.key, data, cond{ifNoneMatch: true}); err != nil {
		return nil, nil, err
	}
	objs, err := s.list(ctx, "locks")
	if err != nil {
		s.unlock(l)
		return nil, nil, err
	}
	var others []lockRecord
	for _, o := range objs {
		if s.key(o.key) == l.key {
			continue
		}
		k := strings.TrimPrefix(o.key, "locks/")
		if kind == "push" && !strings.HasPrefix(k, "gc-") {
			continue // pushes do not keep each other off
		}
		r, err := s.get(ctx, s.key(o.key))
		if err != nil {
			continue // gone since the listing
		}
		var rec lockRecord
		if json.Unmarshal(r.data, &rec) != nil {
			continue
		}
		if s.cfg.Now().After(rec.Expires) {
			if kind == "gc" {
				_ = s.remove(ctx, s.key(o.key)) // a dead writer's
			}
			continue
		}
		others = append(others, rec)
	}
	return l, others, nil
}

// unlock takes l back.
func (s *Store) unlock(l *heldLock) {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.remove(ctx, l.key); err != nil {
		s.log.Warn("store: lock not removed (it ends by itself)", "store", s.url, "lock", l.key, "err", err)
	}
}

// lockPush takes a push lock, waiting (with backoff, within ctx) while a
// collection runs.
func (s *Store) lockPush(ctx context.Context, holder string) (*heldLock, error) {
	wait := 100 * time.Millisecond
	for {
		l, others, err := s.lock(ctx, "push", holder)
		if err != nil {
			return nil, err
		}
		if len(others) == 0 {
			return l, nil
		}
		s.unlock(l)
		s.log.Info("store: push waits for a collection", "store", s.url, "gc", others[0].Holder)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("store %s: push: %w: a collection by %s runs: %w", s.url, ErrBusy, others[0].Holder, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
