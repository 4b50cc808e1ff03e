package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// getPacked returns chunk h, which is at l in its pack, from the cache
// when it holds it; checked against its hash as getChunk checks.
func (s *Store) getPacked(ctx context.Context, h string, l packed) ([]byte, error) {
	if s.cache != nil {
		if data, ok := s.cache.get(h); ok {
			return data, nil
		}
		s.warmMu.Lock()
		busy := s.warming[l.pack]
		s.warmMu.Unlock()
		if busy != nil {
			s.hook("get:waits-for-pack")
			select {
			case <-busy:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if data, ok := s.cache.get(h); ok {
				return data, nil
			}
		}
	}
	key := s.key(packKeyPart(l.pack))
	data, err := s.getRange(ctx, key, l.off, l.len)
	if err != nil {
		return nil, err
	}
	if got := sum(data); got != h {
		s.log.Error("store: corrupt chunk in a pack", "store", s.url, "pack", key, "chunk", h, "offset", l.off, "sha256", got)
		return nil, fmt.Errorf("store %s: chunk %s at %d in %s: %w: its bytes hash to %s", s.url, h, l.off, key, ErrCorrupt, got)
	}
	if s.cache != nil {
		s.cache.put(h, data)
	}
	return data, nil
}

// packer gathers a push's small chunks into packs, and sends each once it
// is PackSize (the last at flush).
type packer struct {
	u   *uploader
	mu  sync.Mutex
	buf []byte
	cs  []PackedChunk
	loc map[string]packed // the chunks of the packs sent, by hash
}

// add queues the small chunk h.
func (p *packer) add(h string, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cs = append(p.cs, PackedChunk{Hash: h, Off: int64(len(p.buf)), Len: int64(len(data))})
	p.buf = append(p.buf, data...)
	if int64(len(p.buf)) >= p.u.s.cfg.PackSize {
		p.sendLocked()
	}
}

// flush sends what is gathered.
func (p *packer) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.cs) > 0 {
		p.sendLocked()
	}
}

func (p *packer) sendLocked() {
	data, cs := p.buf, p.cs
	p.buf, p.cs = nil, nil
	h := sum(data)
	for _, c := range cs {
		p.loc[c.Hash] = packed{pack: h, off: c.Off, len: c.Len}
	}
	u := p.u
	u.g.Go(func() error {
		n, err := u.s.putChunkLike(u.gctx, u.s.key(packKeyPart(h)), data)
		if n > 0 {
			u.sent.Add(n)
			u.uploaded.Add(int64(len(cs)))
		}
		return err
	})
}
