package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Head is a workspace in the store: its checkpoints, oldest first.
type Head struct {
	Format    int    `json:"format"`
	Workspace string `json:"workspace"`
	// Gen counts the head's writes: no two differ only in their ETag's
	// past (an ETag never comes back).
	Gen int64 `json:"gen"`
	// Writer is the lease holder that last wrote the head; a take-over
	// writes its own name here, which fences the one before.
	Writer string `json:"writer,omitempty"`
	// ForkedFrom is NAME@SEQ of the checkpoint a fork started from.
	ForkedFrom  string `json:"forked_from,omitempty"`
	Checkpoints []Ref  `json:"checkpoints"`
}

// Ref is one checkpoint of a workspace in the store.
type Ref struct {
	// Seq numbers the workspace's checkpoints in the store, from 1: the
	// CKPT of NAME@CKPT.
	Seq int `json:"seq"`
	// ID is the id the checkpoint had where it was taken.
	ID       string    `json:"id"`
	Name     string    `json:"name,omitempty"`
	Time     time.Time `json:"time"`
	Manifest string    `json:"manifest"`
}

// Latest is the newest checkpoint, false when there is none.
func (h *Head) Latest() (Ref, bool) {
	if len(h.Checkpoints) == 0 {
		return Ref{}, false
	}
	return h.Checkpoints[len(h.Checkpoints)-1], true
}

// Find finds checkpoint ckpt: its number in the store (3), the id it had
// where it was taken (c3, the newest of that id), or a prefix of 8 or more
// hex digits of its manifest; "" is the newest.
func (h *Head) Find(ckpt string) (Ref, bool) {
	if ckpt == "" {
		return h.Latest()
	}
	if n, err := strconv.Atoi(ckpt); err == nil {
		for _, r := range h.Checkpoints {
			if r.Seq == n {
				return r, true
			}
		}
		return Ref{}, false
	}
	for i := len(h.Checkpoints) - 1; i >= 0; i-- {
		r := h.Checkpoints[i]
		if r.ID == ckpt || len(ckpt) >= 8 && strings.HasPrefix(r.Manifest, ckpt) {
			return r, true
		}
	}
	return Ref{}, false
}

func (h *Head) have() string {
	var s []string
	for _, r := range h.Checkpoints {
		s = append(s, strconv.Itoa(r.Seq)+" ("+r.ID+")")
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// SplitRef splits NAME[@CKPT].
func SplitRef(ref string) (name, ckpt string, err error) {
	name, ckpt, _ = strings.Cut(ref, "@")
	if err := validName(name); err != nil {
		return "", "", err
	}
	return name, ckpt, nil
}

// Head reads workspace name's head; ErrNotFound when there is none.
func (s *Store) Head(ctx context.Context, name string) (*Head, error) {
	h, _, err := s.readHead(ctx, name)
	return h, err
}

func (s *Store) readHead(ctx context.Context, name string) (*Head, string, error) {
	if err := validName(name); err != nil {
		return nil, "", fmt.Errorf("store %s: %w", s.url, err)
	}
	key := s.key(headKeyPart(name))
	o, err := s.get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, "", fmt.Errorf("store %s: workspace %q: %w", s.url, name, ErrNotFound)
	}
	if err != nil {
		return nil, "", err
	}
	if err := s.checkFormat(key, o.data); err != nil {
		return nil, "", err
	}
	var h Head
	if err := json.Unmarshal(o.data, &h); err != nil {
		return nil, "", fmt.Errorf("store %s: %s: %w: %v", s.url, key, ErrCorrupt, err)
	}
	return &h, o.etag, nil
}

// casHead writes h as workspace name's head in place of the one with ETag
// etag ("": there must be none), and returns the new ETag; ErrConflict when
// the head is no longer that one.
func (s *Store) casHead(ctx context.Context, h *Head, etag string) (string, int64, error) {
	h.Format = Format
	h.Gen++
	data, err := json.Marshal(h)
	if err != nil {
		return "", 0, err
	}
	c := cond{ifMatch: etag, ifNoneMatch: etag == ""}
	tag, err := s.put(ctx, s.key(headKeyPart(h.Workspace)), data, c)
	return tag, int64(len(data)), err
}

// Resolve finds NAME[@CKPT] in the store: the workspace's head and the
// checkpoint. A name or checkpoint the store lacks is ErrNotFound naming
// both, and what there is.
func (s *Store) Resolve(ctx context.Context, ref string) (*Head, Ref, error) {
	name, ckpt, err := SplitRef(ref)
	if err != nil {
		return nil, Ref{}, fmt.Errorf("store %s: %w", s.url, err)
	}
	h, err := s.Head(ctx, name)
	if err != nil {
		return nil, Ref{}, err
	}
	r, ok := h.Find(ckpt)
	if !ok {
		what := "checkpoint " + ckpt
		if ckpt == "" {
			what = "any checkpoint"
		}
		return nil, Ref{}, fmt.Errorf("store %s: workspace %q has no %s: %w (have: %s)", s.url, name, what, ErrNotFound, h.have())
	}
	return h, r, nil
}

// Fork makes workspace newName from checkpoint ref (NAME[@CKPT]): a head
// of its own naming the same manifest, so no data is copied. A newName
// that exists is ErrExists.
func (s *Store) Fork(ctx context.Context, ref, newName string) (Ref, error) {
	if err := validName(newName); err != nil {
		return Ref{}, fmt.Errorf("store %s: %w", s.url, err)
	}
	h, r, err := s.Resolve(ctx, ref)
	if err != nil {
		return Ref{}, err
	}
	nr := r
	nr.Seq = 1
	nh := &Head{Workspace: newName, ForkedFrom: h.Workspace + "@" + strconv.Itoa(r.Seq), Checkpoints: []Ref{nr}}
	if _, _, err := s.casHead(ctx, nh, ""); err != nil {
		if isConflict(err) {
			return Ref{}, fmt.Errorf("store %s: workspace %q: %w", s.url, newName, ErrExists)
		}
		return Ref{}, err
	}
	return nr, nil
}

// Workspaces lists the workspaces of the store.
func (s *Store) Workspaces(ctx context.Context) ([]string, error) {
	objs, err := s.list(ctx, "workspaces")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		if n, ok := strings.CutSuffix(strings.TrimPrefix(o.key, "workspaces/"), "/head"); ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// DeleteWorkspace drops workspace name's head and lease: its checkpoints
// are then garbage, for [Store.GC], unless another workspace (a fork)
// names them.
func (s *Store) DeleteWorkspace(ctx context.Context, name string) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("store %s: %w", s.url, err)
	}
	if err := s.remove(ctx, s.key(headKeyPart(name))); err != nil {
		return err
	}
	return s.remove(ctx, s.key(leaseKeyPart(name)))
}
