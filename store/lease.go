package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// lease is who writes a workspace, until when.
type lease struct {
	Format    int       `json:"format"`
	Workspace string    `json:"workspace"`
	Holder    string    `json:"holder"`
	Expires   time.Time `json:"expires"`
	Gen       int64     `json:"gen"`
}

// AcquireOptions say who takes a workspace and how.
type AcquireOptions struct {
	// Holder names the taker (host and process, say) in errors and in
	// the head; required.
	Holder string
	// TTL is how long the lease lasts unless renewed; 0 is 1 minute.
	TTL time.Duration
	// TakeOver takes the lease from its holder even before it ends; the
	// holder's next push then fails (ErrFenced).
	TakeOver bool
}

// Session is the one writer of a workspace: it holds its lease, and pushes
// checkpoints to it. It is safe for concurrent use; pushes run one at a
// time.
type Session struct {
	s      *Store
	name   string
	holder string
	ttl    time.Duration

	pushMu sync.Mutex // one push at a time; guards pushed
	// pushed is the manifest this session pushed last (by its hash):
	// the next push starts from it without reading it back.
	pushed struct {
		hash string
		m    *Manifest
	}
	renewMu  sync.Mutex // one lease write at a time (renewals, the release)
	mu       sync.Mutex // the fields below
	leaseTag string
	headTag  string // "" while the workspace has no head
	head     *Head  // nil while it has none
	fenced   error
	stop     chan struct{}
	stopped  sync.WaitGroup
}

// Acquire takes workspace name's lease, for holder to write it. A lease
// another holder has and has not let end is ErrLeaseHeld, naming the
// holder and when it ends, unless opts.TakeOver. Once it is held, the head
// names the new writer: a writer before it is fenced.
func (s *Store) Acquire(ctx context.Context, name string, opts AcquireOptions) (*Session, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("store %s: %w", s.url, err)
	}
	if opts.Holder == "" {
		return nil, fmt.Errorf("store %s: acquire %q: no holder named", s.url, name)
	}
	if opts.TTL <= 0 {
		opts.TTL = time.Minute
	}
	ss := &Session{s: s, name: name, holder: opts.Holder, ttl: opts.TTL}
	key := s.key(leaseKeyPart(name))
	for try := 0; ; try++ {
		if try == 10 {
			return nil, fmt.Errorf("store %s: lease of %q: %w (it keeps changing)", s.url, name, ErrConflict)
		}
		o, err := s.get(ctx, key)
		var c cond
		switch {
		case errors.Is(err, ErrNotFound):
			c.ifNoneMatch = true
		case err != nil:
			return nil, err
		default:
			if err := s.checkFormat(key, o.data); err != nil {
				return nil, err
			}
			var l lease
			if err := json.Unmarshal(o.data, &l); err != nil {
				return nil, fmt.Errorf("store %s: %s: %w: %v", s.url, key, ErrCorrupt, err)
			}
			if l.Holder != opts.Holder && s.cfg.Now().Before(l.Expires) && !opts.TakeOver {
				return nil, fmt.Errorf("store %s: workspace %q: %w: %s, until %s (take it over to write it here)",
					s.url, name, ErrLeaseHeld, l.Holder, l.Expires.UTC().Format(time.RFC3339))
			}
			c.ifMatch = o.etag
		}
		tag, err := s.putLease(ctx, name, opts.Holder, s.cfg.Now().Add(opts.TTL), c)
		if isConflict(err) {
			continue // another taker moved it: look again
		}
		if err != nil {
			return nil, err
		}
		ss.leaseTag = tag
		break
	}
	// The head names its writer: a take-over makes it this one, so the
	// writer before fails its next swap of the head.
	for try := 0; ; try++ {
		h, tag, err := s.readHead(ctx, name)
		if errors.Is(err, ErrNotFound) {
			return ss, nil // a new workspace: the first push makes it
		}
		if err != nil {
			return nil, err
		}
		if h.Writer == opts.Holder {
			ss.head, ss.headTag = h, tag
			return ss, nil
		}
		h.Writer = opts.Holder
		tag, _, err = s.casHead(ctx, h, tag)
		if isConflict(err) && try < 10 {
			continue
		}
		if err != nil {
			return nil, err
		}
		ss.head, ss.headTag = h, tag
		return ss, nil
	}
}

func (s *Store) putLease(ctx context.Context, name, holder string, expires time.Time, c cond) (string, error) {
	data, err := json.Marshal(lease{Format: Format, Workspace: name, Holder: holder, Expires: expires, Gen: time.Now().UnixNano()})
	if err != nil {
		return "", err
	}
	return s.put(ctx, s.key(leaseKeyPart(name)), data, c)
}

// Name is the workspace's name.
func (ss *Session) Name() string { return ss.name }

// Holder names the session's writer, as its lease does.
func (ss *Session) Holder() string { return ss.holder }

// Store is the store the session writes to.
func (ss *Session) Store() *Store { return ss.s }

// Head is the workspace's head as the session last wrote or read it; nil
// for a workspace with none yet.
func (ss *Session) Head() *Head {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.head == nil {
		return nil
	}
	h := *ss.head
	h.Checkpoints = append([]Ref(nil), h.Checkpoints...)
	return &h
}

// Fenced is the error that stopped the session writing (ErrFenced), nil
// while it writes.
func (ss *Session) Fenced() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.fenced
}

func (ss *Session) fenceLocking(why string) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.fence(why)
}

// fence stops the session writing; the caller holds ss.mu.
func (ss *Session) fence(why string) error {
	if ss.fenced == nil {
		ss.fenced = fmt.Errorf("store %s: workspace %q: %w (%s)", ss.s.url, ss.name, ErrFenced, why)
		ss.s.log.Error("store: fenced", "store", ss.s.url, "workspace", ss.name, "holder", ss.holder, "why", why)
	}
	return ss.fenced
}

// Renew extends the lease by its TTL. A lease another holder took is
// ErrFenced, and the session writes no more. The session's state is not
// locked while the store is asked (a store that does not answer holds up
// no Fenced, Head or status), only lease writes are, one at a time.
func (ss *Session) Renew(ctx context.Context) error {
	ss.renewMu.Lock()
	defer ss.renewMu.Unlock()
	ss.mu.Lock()
	fenced, leaseTag := ss.fenced, ss.leaseTag
	ss.mu.Unlock()
	if fenced != nil {
		return fenced
	}
	tag, err := ss.s.putLease(ctx, ss.name, ss.holder, ss.s.cfg.Now().Add(ss.ttl), cond{ifMatch: leaseTag})
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if isConflict(err) {
		return ss.fence("its lease was taken")
	}
	if err != nil {
		return err
	}
	ss.leaseTag = tag
	return nil
}

// KeepRenewing renews the lease every third of its TTL until Release;
// errors go to the store's log (a fenced session stops).
func (ss *Session) KeepRenewing() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stop != nil {
		return
	}
	ss.stop = make(chan struct{})
	ss.stopped.Add(1)
	go func(stop chan struct{}) {
		defer ss.stopped.Done()
		t := time.NewTicker(ss.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), ss.ttl/3)
				err := ss.Renew(ctx)
				cancel()
				if errors.Is(err, ErrFenced) {
					return
				}
				if err != nil {
					ss.s.log.Warn("store: lease renewal failed", "store", ss.s.url, "workspace", ss.name, "err", err)
				}
			}
		}
	}(ss.stop)
}

// Release stops renewing and lets the lease end now (unless another took
// it).
func (ss *Session) Release(ctx context.Context) error {
	ss.mu.Lock()
	if ss.stop != nil {
		close(ss.stop)
		ss.stop = nil
	}
	ss.mu.Unlock()
	ss.stopped.Wait()
	ss.renewMu.Lock()
	defer ss.renewMu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.fenced != nil {
		return nil
	}
	_, err := ss.s.putLease(ctx, ss.name, ss.holder, ss.s.cfg.Now(), cond{ifMatch: ss.leaseTag})
	if isConflict(err) {
		return nil
	}
	ss.fenced = fmt.Errorf("store %s: workspace %q: the session was released", ss.s.url, ss.name)
	return err
}
