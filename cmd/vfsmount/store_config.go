package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/store"
	"github.com/vfsmount/vfsmount/workspace"
)

// configStore is the store: section of the config file: where the
// workspace's checkpoints go (see package store).
//
//	store:
//	  url: s3://BUCKET/PREFIX      # the store
//	  name: agent-42               # the workspace in it
//	  endpoint: http://minio:9000  # a server other than AWS (path-style)
//	  region: eu-west-1
//	  sync: 30s                    # push a checkpoint this often, and at unmount
//	  resume: true                 # start from the newest checkpoint, if any
//	  keep: 100                    # checkpoints the store keeps per workspace
//	  cache: /var/cache/vfsmount/chunks
//	  cache_size: 2GiB
type configStore struct {
	URL       string `yaml:"url"`
	Name      string `yaml:"name"`
	Endpoint  string `yaml:"endpoint"`
	Region    string `yaml:"region"`
	Sync      string `yaml:"sync"`
	Keep      int    `yaml:"keep"`
	Cache     string `yaml:"cache"`
	CacheSize string `yaml:"cache_size"`
	// Resume starts the mount from the workspace's newest checkpoint when
	// it has one, as --resume does, and starts the workspace afresh when
	// it has none: a config a pod mounts at every start, the first one
	// included, and that brings the session back wherever it is
	// rescheduled.
	Resume bool `yaml:"resume"`
}

// storeFlags are the store flags of vfsmount mount.
type storeFlags struct {
	Store    string
	Resume   string
	Endpoint string
	Sync     string
	TakeOver bool
}

func (f *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Store, "store", "", "push checkpoints to the workspace `s3://BUCKET/PREFIX/NAME` (vfsmount checkpoint push; --sync)")
	fs.StringVar(&f.Resume, "resume", "", "bring the workspace back from `s3://BUCKET/PREFIX/NAME[@CHECKPOINT]` (the newest without @) and push to it")
	fs.StringVar(&f.Endpoint, "store-endpoint", "", "the S3 endpoint `URL` of a server other than AWS (or AWS_ENDPOINT_URL)")
	fs.StringVar(&f.Sync, "sync", "", "with a store, push a checkpoint every `DURATION` (30s) when something changed, and at unmount")
	fs.BoolVar(&f.TakeOver, "take-over", false, "with --resume or --store, take the workspace from the daemon that holds it (its next push fails)")
}

// storeSettings are the validated store settings of a workspace.
type storeSettings struct {
	URL, Name, Ckpt string
	Resume          bool
	// ResumeIfAny: resume only when the workspace has a checkpoint
	// (store.resume in the config); a new one starts afresh.
	ResumeIfAny      bool
	Endpoint, Region string
	Sync             time.Duration
	Keep             int
	CacheDir         string
	CacheBytes       int64
	TakeOver         bool
}

// workspaceURL is s3://BUCKET/PREFIX/NAME.
func (s *storeSettings) workspaceURL() string { return strings.TrimSuffix(s.URL, "/") + "/" + s.Name }

// loadStoreConfig merges the store: section of file and the flags; nil
// when neither names a store.
func loadStoreConfig(file *configFile, f *storeFlags) (*storeSettings, error) {
	var c configStore
	if file != nil && file.Store != nil {
		c = *file.Store
	}
	if c.URL == "" && f.Store == "" && f.Resume == "" {
		if f.TakeOver || f.Sync != "" || f.Endpoint != "" {
			return nil, usageErrorf("--take-over, --sync and --store-endpoint need a store: --store, --resume, or store: in the config")
		}
		return nil, nil
	}
	s := &storeSettings{URL: c.URL, Name: c.Name, Endpoint: c.Endpoint, Region: c.Region, Keep: c.Keep, CacheDir: c.Cache, TakeOver: f.TakeOver}
	if c.URL != "" {
		if _, _, err := store.ParseURL(c.URL); err != nil {
			return nil, usageErrorf("config: store.url: %v", err)
		}
	}
	for _, fl := range []struct{ flag, v string }{{"--store", f.Store}, {"--resume", f.Resume}} {
		if fl.v == "" {
			continue
		}
		u, name, ckpt, err := store.ParseWorkspaceURL(fl.v)
		if err != nil {
			return nil, usageErrorf("%s: %v", fl.flag, err)
		}
		if ckpt != "" && fl.flag == "--store" {
			return nil, usageErrorf("--store %s: a workspace, not a checkpoint (use --resume to start from one)", fl.v)
		}
		if s.URL != "" && (s.URL != u || s.Name != "" && s.Name != name) && (fl.flag == "--resume" && f.Store != "") {
			return nil, usageErrorf("--resume %s and --store %s name different workspaces", f.Resume, f.Store)
		}
		s.URL, s.Name, s.Ckpt = u, name, ckpt
		s.Resume = s.Resume || fl.flag == "--resume"
	}
	if c.Resume && !s.Resume {
		s.Resume, s.ResumeIfAny = true, true
	}
	if s.Name == "" {
		return nil, usageErrorf("config: store.name: the workspace's name in the store is required (or --store s3://BUCKET/PREFIX/NAME)")
	}
	if f.Endpoint != "" {
		s.Endpoint = f.Endpoint
	}
	sync := c.Sync
	if f.Sync != "" {
		sync = f.Sync
	}
	if sync != "" {
		d, err := time.ParseDuration(sync)
		if err != nil || d < time.Second {
			return nil, usageErrorf("store sync: want a duration of at least 1s such as 30s, got %q", sync)
		}
		s.Sync = d
	}
	if s.Keep < 0 {
		return nil, usageErrorf("config: store.keep: must not be negative, got %d", s.Keep)
	}
	if c.CacheSize != "" {
		n, err := parseSize(c.CacheSize)
		if err != nil {
			return nil, usageErrorf("config: store.cache_size: %v", err)
		}
		s.CacheBytes = n
	}
	if s.CacheDir == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			s.CacheDir = filepath.Join(dir, "vfsmount", "chunks")
		}
	}
	return s, nil
}

// storeError gives a store's error its exit code: a bad URL is a usage
// error (2); anything else (no bucket, refused credentials, unreachable,
// held by another daemon, not there) a runtime failure (1).
func storeError(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, store.ErrBadURL) {
		return usageError(err)
	}
	return &exitError{code: exitFailure, err: err}
}

// openStore opens the store s names.
func openStore(ctx context.Context, s *storeSettings, log *slog.Logger) (*store.Store, error) {
	st, err := store.Open(ctx, store.Config{URL: s.URL, Endpoint: s.Endpoint, Region: s.Region,
		CacheDir: s.CacheDir, CacheBytes: s.CacheBytes, Logger: log})
	return st, storeError(err)
}

// storeRun is a mount's store: the session holding the workspace's lease,
// and what a resume brings back.
type storeRun struct {
	set     *storeSettings
	store   *store.Store
	session *store.Session
	resume  *resumeState
}

// resumeState is a checkpoint being brought back: the trees the mounts
// took from it.
type resumeState struct {
	r    *store.Resumed
	used map[string]bool
	// trees are the lazily restored trees, to prefetch.
	trees []*memfs.FS
}

// startStore opens the store, takes the workspace's lease (a daemon that
// holds it is named, unless --take-over), and fetches the checkpoint to
// resume from.
func startStore(ctx context.Context, s *storeSettings, log *slog.Logger) (*storeRun, error) {
	st, err := openStore(ctx, s, log)
	if err != nil {
		return nil, err
	}
	run := &storeRun{set: s, store: st}
	if s.Resume {
		// The workspace must exist before anything is taken.
		_, _, err := st.Resolve(ctx, s.Name+atCkpt(s.Ckpt))
		switch {
		case err != nil && s.ResumeIfAny && s.Ckpt == "" && errors.Is(err, store.ErrNotFound):
			log.Info("store: no checkpoint to resume (resume: true); the workspace starts afresh", "workspace", s.workspaceURL())
			s.Resume = false
		case err != nil:
			return nil, storeError(err)
		}
	}
	host, _ := os.Hostname()
	run.session, err = st.Acquire(ctx, s.Name, store.AcquireOptions{Holder: fmt.Sprintf("%s:%d", host, os.Getpid()), TakeOver: s.TakeOver})
	if err != nil {
		return nil, storeError(err)
	}
	if s.Resume {
		r, err := st.Resume(ctx, s.Name+atCkpt(s.Ckpt))
		if err != nil {
			run.release()
			return nil, storeError(err)
		}
		run.resume = &resumeState{r: r, used: map[string]bool{}}
		log.Info("store: resuming", "workspace", s.workspaceURL(), "checkpoint", r.Ref.Seq, "id", r.Ref.ID, "time", r.Ref.Time)
	} else if h := run.session.Head(); h != nil {
		if r, ok := h.Latest(); ok {
			log.Warn("store: the workspace has checkpoints this mount does not start from; its pushes follow them (--resume starts from the newest)",
				"workspace", s.workspaceURL(), "newest", r.Seq)
		}
	}
	return run, nil
}

func atCkpt(ckpt string) string {
	if ckpt == "" {
		return ""
	}
	return "@" + ckpt
}

// release lets the lease go (a mount that failed to start).
func (run *storeRun) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = run.session.Release(ctx)
}

// attach hands the session to the workspace, after checking that the
// checkpoint resumed had no writable layer the workspace lacks.
func (run *storeRun) attach(ws *workspace.Workspace, log *slog.Logger) error {
	if rs := run.resume; rs != nil {
		for _, m := range rs.r.Manifest.Mounts {
			if m.Tree != nil && !rs.used[m.Prefix] {
				return usageErrorf("--resume %s: the checkpoint holds the writable mount %s (%s), which this workspace's config lacks: add it", run.set.workspaceURL(), m.Prefix, m.Source)
			}
		}
	}
	run.resume.prefetch(ws, log)
	err := ws.AttachStore(workspace.StoreOptions{Session: run.session, URL: run.set.workspaceURL(), Sync: run.set.Sync, Keep: run.set.Keep, Logger: log})
	if errors.Is(err, workspace.ErrNoCheckpoints) {
		return usageErrorf("store %s: %v", run.set.workspaceURL(), err)
	}
	return err
}

// tree is the writable layer the checkpoint resumed holds at prefix, of
// layer (store.LayerMemory or store.LayerUpper); nil when it holds none.
func (rs *resumeState) tree(ctx context.Context, prefix, layer string, opts memfs.Options) (*memfs.FS, error) {
	if rs == nil {
		return nil, nil
	}
	m, ok := rs.r.Mount(prefix)
	if !ok || m.Tree == nil {
		return nil, nil
	}
	if m.Layer != layer {
		return nil, usageErrorf("--resume: the checkpoint's %s is a %s layer (%s), the config's mount there is not", prefix, m.Layer, m.Source)
	}
	rs.used[prefix] = true
	f, err := rs.r.LazyTree(prefix, opts)
	if err != nil {
		return nil, storeError(err)
	}
	rs.trees = append(rs.trees, f)
	return f, nil
}

// prefetch fetches the content the resumed trees have left, in the
// background, until the workspace closes.
func (rs *resumeState) prefetch(ws *workspace.Workspace, log *slog.Logger) {
	if rs == nil || len(rs.trees) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ws.OnClose(func() error {
		cancel()
		<-done
		return nil
	})
	go func() {
		defer close(done)
		start := time.Now()
		// The small files' packs first, whole: then the trees load
		// them from the cache, not one request a file.
		prefixes := slices.Sorted(maps.Keys(rs.used))
		if err := rs.r.WarmPacks(ctx, prefixes...); err != nil && ctx.Err() == nil {
			log.Warn("store: fetching the packs whole failed; their files are fetched one by one", "err", err)
		}
		var errs []error
		for _, t := range rs.trees {
			errs = append(errs, t.LoadAll(ctx, 8))
		}
		if err := errors.Join(errs...); err != nil {
			if ctx.Err() == nil {
				log.Error("store: prefetch failed; those files fail to open (EIO) until the store serves them", "err", err)
			}
			return
		}
		log.Info("store: every file's content fetched", "took", time.Since(start).Round(time.Millisecond))
	}()
}
