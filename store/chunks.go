package store

import (
	"context"
	"errors"
	"fmt"
)

// putChunk stores data as the chunk h (its SHA-256) unless it is there:
// created with If-None-Match: *, a 412 meaning the same bytes are there
// already. It returns the bytes it sent (0 when it sent none).
func (s *Store) putChunk(ctx context.Context, h string, data []byte) (int64, error) {
	return s.putChunkLike(ctx, s.key(chunkKeyPart(h)), data)
}

func isConflict(err error) bool { return errors.Is(err, ErrConflict) }

// getChunk returns chunk h, from the cache when it holds it, checked
// against its hash: a chunk whose bytes are not h's is ErrCorrupt, never
// returned.
func (s *Store) getChunk(ctx context.Context, h string) ([]byte, error) {
	if s.cache != nil {
		if data, ok := s.cache.get(h); ok {
			return data, nil
		}
	}
	key := s.key(chunkKeyPart(h))
	o, err := s.get(ctx, key)
	if err != nil {
		return nil, err
	}
	if got := sum(o.data); got != h {
		s.log.Error("store: corrupt chunk", "store", s.url, "chunk", key, "sha256", got)
		return nil, fmt.Errorf("store %s: chunk %s: %w: its bytes hash to %s", s.url, key, ErrCorrupt, got)
	}
	if s.cache != nil {
		s.cache.put(h, o.data)
	}
	return o.data, nil
}
