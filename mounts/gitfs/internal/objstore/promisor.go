package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// # Partial clones
//
// A partial clone (git clone --filter=blob:none, or --filter=tree:0) holds
// the commits and leaves blobs (or trees too) with its promisor remote,
// which git asks for an object the first time it is needed. The store does
// the same: an object found in no object directory of a partial clone is
// fetched from the promisor remote, written into the clone as git writes it
// (a pack with its .promisor file, so git itself treats it as promised
// content), and read from there, now and by every later mount.
//
// It runs the git binary to fetch, the command git runs for its own lazy
// fetches (promisor-remote.c):
//
//	git -c fetch.negotiationAlgorithm=noop fetch REMOTE --no-tags
//	    --no-write-fetch-head --recurse-submodules=no --filter=blob:none --stdin
//
// with the object ids on its standard input. Rather than go-git, whose
// fetch cannot ask for an object that is not a commit, nor write the
// .promisor file; rather than git cat-file --batch, which fetches each
// missing object it meets alone, one round trip each: a fetch takes any
// number of ids in one round trip and one pack, it moves no reference, and
// it reaches the remote by whatever transport, credentials helper and
// configuration git has for it. (--filter=blob:none makes a tree fetched
// for a tree-less clone bring its subtrees but none of their blobs, as git
// does.)
//
// Requests are batched: the callers that miss objects while a fetch runs
// are fetched together in the next one, and an object asked for again
// while it is being fetched waits for that fetch. [Store.Prefetch] asks for
// many at once (gitfs asks for the blobs of a directory listed with their
// sizes, the rest of a directory being read in a row, a search's
// candidates).
//
// Offline, nothing is fetched: a missing object is an error naming it and
// saying so ([PromisorError] wrapping [ErrOffline]), as is a fetch that
// fails (the remote down: git's own words) or an object the remote did not
// send. Each wraps plumbing.ErrObjectNotFound too: the object is missing.

// Options of [OpenWith].
type Options struct {
	// Offline never fetches from a partial clone's promisor remote.
	Offline bool
	// OnFetch, when set, is told of every fetch from the promisor
	// remote: how many objects, how long it took, and how it ended.
	OnFetch func(remote string, objects int, took time.Duration, err error)
}

// ErrOffline: the object is promised by the remote, and the store may not
// fetch it.
var ErrOffline = errors.New("offline")

// errNotSent: a fetch succeeded without the object.
var errNotSent = errors.New("the remote did not send it")

// PromisorError is an object a partial clone lacks and could not get from
// its promisor remote: Err says why (ErrOffline, or the fetch's failure).
type PromisorError struct {
	Object plumbing.Hash
	Remote string
	Err    error
}

func (e *PromisorError) Error() string {
	switch {
	case errors.Is(e.Err, ErrOffline):
		return fmt.Sprintf("object %s is not in this partial clone, and the mount is offline: not fetched from promisor remote %q", e.Object, e.Remote)
	case errors.Is(e.Err, errNotSent):
		return fmt.Sprintf("object %s is not in this partial clone, and promisor remote %q did not send it", e.Object, e.Remote)
	}
	return fmt.Sprintf("object %s is not in this partial clone, and fetching it from promisor remote %q failed: %v", e.Object, e.Remote, e.Err)
}

// Unwrap is the cause, and plumbing.ErrObjectNotFound: the object is
// missing, whatever kept it so.
func (e *PromisorError) Unwrap() []error { return []error{e.Err, plumbing.ErrObjectNotFound} }

// fetchTimeout bounds one fetch from a promisor remote: a remote that
// accepts the connection and then says nothing must not hang a read for
// ever.
var fetchTimeout = 5 * time.Minute

// promisor fetches the objects a partial clone lacks, in batches.
type promisor struct {
	gitDir  string // the repository, for git --git-dir
	remote  string
	offline bool
	onFetch func(string, int, time.Duration, error)
	// loaded is called after a fetch that succeeded, before its waiters
	// look again: it makes the store read the new pack.
	loaded func()

	ctx    context.Context // ended by close: a fetch under way is killed
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   []plumbing.Hash
	next    *batch                   // the batch queue will be fetched in
	pending map[plumbing.Hash]*batch // queued or being fetched
	running bool
	wg      sync.WaitGroup

	fetches atomic.Int64 // fetches run, for tests
}

// batch is one fetch: done is closed when it ends, err set before.
type batch struct {
	done chan struct{}
	err  error
}

// partialClone returns the promisor remote of the repository, "" when it
// is not a partial clone: extensions.partialClone, as git before 2.36
// wrote it, else the first remote with promisor = true.
func partialClone(repo *git.Repository) string {
	cfg, err := repo.Config()
	if err != nil || cfg.Raw == nil {
		return ""
	}
	if name := cfg.Raw.Section("extensions").Option("partialclone"); name != "" {
		return name
	}
	for _, sub := range cfg.Raw.Section("remote").Subsections {
		if strings.EqualFold(sub.Option("promisor"), "true") {
			return sub.Name
		}
	}
	return ""
}

func newPromisor(gitDir, remote string, o Options, loaded func()) *promisor {
	ctx, cancel := context.WithCancel(context.Background())
	return &promisor{gitDir: gitDir, remote: remote, offline: o.Offline, onFetch: o.OnFetch, loaded: loaded,
		ctx: ctx, cancel: cancel, pending: map[plumbing.Hash]*batch{}}
}

// enqueue queues the objects of hs not queued or being fetched yet, starts
// the fetching if it is idle, and returns the batches that bring hs.
func (p *promisor) enqueue(hs []plumbing.Hash) ([]*batch, error) {
	if p.offline {
		return nil, ErrOffline
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return nil, errClosed
	}
	var waits []*batch
	for _, h := range hs {
		b := p.pending[h]
		if b == nil {
			if p.next == nil {
				p.next = &batch{done: make(chan struct{})}
			}
			b = p.next
			p.pending[h] = b
			p.queue = append(p.queue, h)
		}
		if len(waits) == 0 || waits[len(waits)-1] != b {
			waits = append(waits, b)
		}
	}
	if !p.running && len(p.queue) > 0 {
		p.running = true
		p.wg.Add(1)
		go p.run()
	}
	return waits, nil
}

var errClosed = errors.New("object store closed")

// fetch brings hs into the clone, waiting for the batches that fetch them.
func (p *promisor) fetch(ctx context.Context, hs []plumbing.Hash) error {
	waits, err := p.enqueue(hs)
	if err != nil {
		return err
	}
	for _, b := range waits {
		select {
		case <-b.done:
			if b.err != nil {
				return b.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// run fetches what is queued, one batch after another, until the queue is
// empty.
func (p *promisor) run() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		if len(p.queue) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		hs, b := p.queue, p.next
		p.queue, p.next = nil, nil
		p.mu.Unlock()

		start := time.Now()
		err := p.gitFetch(hs)
		p.fetches.Add(1)
		if err == nil {
			p.loaded()
		}
		if p.onFetch != nil {
			p.onFetch(p.remote, len(hs), time.Since(start), err)
		}
		p.mu.Lock()
		for _, h := range hs {
			delete(p.pending, h)
		}
		b.err = err
		close(b.done)
		p.mu.Unlock()
	}
}

// gitFetch runs git's own lazy fetch of hs.
func (p *promisor) gitFetch(hs []plumbing.Hash) error {
	ctx, cancel := context.WithTimeout(p.ctx, fetchTimeout)
	defer cancel()
	var in bytes.Buffer
	for _, h := range hs {
		in.WriteString(h.String())
		in.WriteByte('\n')
	}
	cmd := exec.CommandContext(ctx, "git", "--git-dir", p.gitDir,
		"-c", "fetch.negotiationAlgorithm=noop",
		// A daemon's fetch starts no repack or maintenance behind it.
		"-c", "gc.auto=0", "-c", "maintenance.auto=false",
		"fetch", p.remote, "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
		"--filter=blob:none", "--stdin")
	cmd.Stdin = &in
	cmd.Env = fetchEnv()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		if p.ctx.Err() != nil {
			return errClosed
		}
		if ctx.Err() != nil {
			return fmt.Errorf("git fetch: no answer in %s", fetchTimeout)
		}
		if msg := lastLine(errb.String()); msg != "" {
			return fmt.Errorf("git fetch: %s", msg)
		}
		return fmt.Errorf("git fetch: %w", err)
	}
	return nil
}

// fetchEnv is the daemon's environment without what would point git at
// another repository, and with no prompt for credentials: there is no one
// to answer it.
func fetchEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
			"GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_TERMINAL_PROMPT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_TERMINAL_PROMPT=0")
}

// lastLine is the last non-empty line of s: git says what went wrong last.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// close kills a fetch under way and waits for the fetching to end.
func (p *promisor) close() {
	p.mu.Lock()
	p.cancel()
	p.mu.Unlock()
	p.wg.Wait()
}

// Promisor returns the promisor remote of a partial clone, "" for a
// repository that holds all of its objects.
func (s *Store) Promisor() string {
	if s.prom == nil {
		return ""
	}
	return s.prom.remote
}

// Fetches reports how many fetches from the promisor remote the store
// ran, for tests.
func (s *Store) Fetches() int64 {
	if s.prom == nil {
		return 0
	}
	return s.prom.fetches.Load()
}

// has reports whether the store holds object h, fetching nothing.
func (s *Store) has(h plumbing.Hash) bool {
	if _, ok, err := s.dirs.size(h); ok && err == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.dirs {
		if d.st.HasEncodedObject(h) == nil {
			return true
		}
	}
	return false
}

// WouldFetch reports whether reading object h would start a fetch from
// the promisor remote: a partial clone lacks it and no fetch under way or
// queued brings it. A reader ahead of the program (gitfs's walker) leaves
// such an object for the program to ask for.
func (s *Store) WouldFetch(h plumbing.Hash) bool {
	if s.prom == nil {
		return false
	}
	s.prom.mu.Lock()
	pending := s.prom.pending[h] != nil
	s.prom.mu.Unlock()
	return !pending && !s.has(h)
}

// missingOf returns those of hs the store does not hold, once each.
func (s *Store) missingOf(hs []plumbing.Hash) []plumbing.Hash {
	var out []plumbing.Hash
	seen := make(map[plumbing.Hash]bool, len(hs))
	for _, h := range hs {
		if !seen[h] && !s.has(h) {
			out = append(out, h)
		}
		seen[h] = true
	}
	return out
}

// Prefetch fetches in one batch those of hs a partial clone lacks, and
// waits for them; it does nothing in a repository that holds all of its
// objects. Offline it fetches nothing, and says so only if something was
// missing.
func (s *Store) Prefetch(ctx context.Context, hs []plumbing.Hash) error {
	if s.prom == nil {
		return nil
	}
	missing := s.missingOf(hs)
	if len(missing) == 0 {
		return nil
	}
	if err := s.prom.fetch(ctx, missing); err != nil {
		return &PromisorError{Object: missing[0], Remote: s.prom.remote, Err: err}
	}
	return nil
}

// PrefetchAsync queues those of hs a partial clone lacks for one batch and
// returns without waiting: a read of one of them that comes next waits
// for that batch rather than fetching alone. Offline it does nothing.
func (s *Store) PrefetchAsync(hs []plumbing.Hash) {
	if s.prom == nil || s.prom.offline {
		return
	}
	if missing := s.missingOf(hs); len(missing) > 0 {
		_, _ = s.prom.enqueue(missing)
	}
}

// orFetch runs fn, and when it did not find object h in a partial clone,
// fetches h from the promisor remote and runs it again.
func (s *Store) orFetch(h plumbing.Hash, fn func() error) error {
	err := fn()
	if s.prom == nil || !errors.Is(err, plumbing.ErrObjectNotFound) {
		return err
	}
	var perr *PromisorError
	if errors.As(err, &perr) {
		return err
	}
	if ferr := s.prom.fetch(context.Background(), []plumbing.Hash{h}); ferr != nil {
		return &PromisorError{Object: h, Remote: s.prom.remote, Err: ferr}
	}
	if err = fn(); errors.Is(err, plumbing.ErrObjectNotFound) {
		return &PromisorError{Object: h, Remote: s.prom.remote, Err: errNotSent}
	}
	return err
}

// reloadOwn reads the pack directory of the repository's own objects
// again: a fetch wrote a pack there.
func (s *Store) reloadOwn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dirs[0]
	d.packsAt, _ = d.packsTime()
	d.st.Reindex()
	_ = d.fast.packs.reload()
}
