package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// GCOptions tune a collection.
type GCOptions struct {
	// Holder names the collector in the lock (and in a push's wait).
	Holder string
	// Grace keeps manifests and chunks younger than it whatever names
	// them; 0 is one hour, negative keeps none for their age alone (the
	// lock protocol is what keeps a push's chunks).
	Grace time.Duration
	// DryRun counts what would go, and deletes nothing.
	DryRun bool
}

// GCResult says what a collection found and did.
type GCResult struct {
	Workspaces       int   `json:"workspaces"`
	Manifests        int   `json:"manifests"`
	ManifestsDeleted int   `json:"manifests_deleted"`
	Chunks           int   `json:"chunks"`
	ChunksDeleted    int   `json:"chunks_deleted"`
	Packs            int   `json:"packs"`
	PacksDeleted     int   `json:"packs_deleted"`
	BytesDeleted     int64 `json:"bytes_deleted"`
}

// GC deletes the manifests no workspace's head names (a dropped
// checkpoint, a deleted workspace, a push that failed before its head)
// and then the chunks no kept manifest names and the packs holding none it
// names, except those younger than the grace period. It runs only while no push does: a push in progress is
// ErrBusy, naming it; a push that starts meanwhile waits (see locks.go).
// Manifests go before chunks, so a collection cut short never leaves a
// manifest without its chunks.
func (s *Store) GC(ctx context.Context, opts GCOptions) (GCResult, error) {
	var res GCResult
	if opts.Holder == "" {
		opts.Holder = "gc"
	}
	grace := opts.Grace
	if grace == 0 {
		grace = time.Hour
	}
	grace = max(grace, 0)
	lk, others, err := s.lock(ctx, "gc", opts.Holder)
	if err != nil {
		return res, err
	}
	defer s.unlock(lk)
	if len(others) > 0 {
		var who []string
		for _, o := range others {
			who = append(who, o.Kind+" by "+o.Holder)
		}
		return res, fmt.Errorf("store %s: gc: %w: %s in progress; try again", s.url, ErrBusy, strings.Join(who, ", "))
	}

	// Roots: the manifests the heads name.
	names, err := s.Workspaces(ctx)
	if err != nil {
		return res, err
	}
	res.Workspaces = len(names)
	live := map[string]bool{}
	for _, n := range names {
		h, err := s.Head(ctx, n)
		if err != nil {
			return res, fmt.Errorf("gc: workspace %q: %w", n, err)
		}
		for _, r := range h.Checkpoints {
			live[r.Manifest] = true
		}
	}
	ms, err := s.list(ctx, "manifests")
	if err != nil {
		return res, err
	}
	res.Manifests = len(ms)
	now := s.cfg.Now()
	referenced, referencedPacks := map[string]bool{}, map[string]bool{}
	var deadManifests []listed
	for _, o := range ms {
		h := strings.TrimPrefix(o.key, "manifests/")
		if !live[h] && now.Sub(o.modified) >= grace {
			deadManifests = append(deadManifests, o)
			continue
		}
		m, err := s.Manifest(ctx, h)
		if err != nil {
			// A manifest it cannot read keeps nothing alive that it
			// cannot see: stop rather than guess.
			return res, fmt.Errorf("gc: %w", err)
		}
		for c := range m.chunks() {
			referenced[c] = true
		}
		for _, p := range m.Packs {
			referencedPacks[p.Hash] = true
		}
	}
	chunks, err := s.list(ctx, "chunks")
	if err != nil {
		return res, err
	}
	res.Chunks = len(chunks)
	var deadChunks []listed
	for _, o := range chunks {
		if !referenced[strings.TrimPrefix(o.key, "chunks/")] && now.Sub(o.modified) >= grace {
			deadChunks = append(deadChunks, o)
		}
	}
	// A pack lives while a kept manifest names any chunk in it.
	packs, err := s.list(ctx, "packs")
	if err != nil {
		return res, err
	}
	res.Packs = len(packs)
	var deadPacks []listed
	for _, o := range packs {
		if !referencedPacks[strings.TrimPrefix(o.key, "packs/")] && now.Sub(o.modified) >= grace {
			deadPacks = append(deadPacks, o)
		}
	}
	s.hook("gc:listed")
	res.ManifestsDeleted, res.ChunksDeleted, res.PacksDeleted = len(deadManifests), len(deadChunks), len(deadPacks)
	for _, o := range append(slices.Clip(deadChunks), deadPacks...) {
		res.BytesDeleted += o.size
	}
	if opts.DryRun {
		return res, nil
	}
	for _, batch := range [][]listed{deadManifests, deadChunks, deadPacks} {
		for _, o := range batch {
			if s.cfg.Now().After(lk.expires.Add(-lockTTL / 3)) {
				return res, fmt.Errorf("store %s: gc ran past its lock; run it again: %w", s.url, ErrBusy)
			}
			if err := s.remove(ctx, s.key(o.key)); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}
