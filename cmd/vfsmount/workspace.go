package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/workspace"
)

// workspaceFlags are the flags of every subcommand that builds a workspace
// (mount, exec, call, tools, serve, mcp): a config file, mount specs, the
// git settings and the policy flags.
type workspaceFlags struct {
	Config string
	Mounts []string
	Git    gitSettings
	Policy policyFlags
	// Self is this program's path when the process is the vfsmount binary
	// (app.self): git's fsmonitor hook for writable git mounts.
	Self string
	// Store are the store flags (vfsmount mount registers them).
	Store storeFlags
}

// gitSettings apply to every git mount of a workspace.
type gitSettings struct {
	// CacheDir holds bare clones of URL sources ("" = the default under
	// $XDG_CACHE_HOME/vfsmount).
	CacheDir string
	// Offline never fetches: a URL must already be cloned, a revision
	// already present.
	Offline bool
	// CacheSize bounds each git mount's cache of decoded blobs, in bytes
	// (0 = gitfs.DefaultCacheSize).
	CacheSize int64
}

// register adds the workspace flags to fs.
func (w *workspaceFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&w.Config, "config", "c", "", "YAML config `FILE` (mounts: [...]); --mount flags add to it")
	// StringArray, not StringSlice: a spec is itself comma-separated.
	fs.StringArrayVarP(&w.Mounts, "mount", "m", nil, "add a mount, Docker style: `SPEC` such as type=memory,dst=/memory (repeatable)")
	fs.StringVar(&w.Git.CacheDir, "cache-dir", "", "where git mounts clone URL sources (`DIR`; default $XDG_CACHE_HOME/vfsmount)")
	fs.BoolVar(&w.Git.Offline, "offline", false, "git mounts never fetch: URLs must be cloned and revisions present already")
	fs.Int64Var(&w.Git.CacheSize, "cache-size", 0, "bound of each git mount's decoded-blob cache in `BYTES` (default 256 MiB)")
	w.Policy.register(fs)
}

// workspaceConfig is the merged, validated configuration of a workspace:
// the config file's entries first, then the --mount flags.
type workspaceConfig struct {
	// File is the parsed config file, nil without --config.
	File   *configFile
	Mounts []mountSpec
	// Types builds the mounts; nil means [mountTypes]. Tests swap in
	// types of their own.
	Types registry
	// Git applies to every git mount.
	Git gitSettings
	// Policy is the merged policy of the config file and the flags.
	Policy *policyConfig
	// Checkpoint are the checkpoint settings of the config file.
	Checkpoint checkpointSettings
	// Lints are the linters of the readLints tool (lints_config.go).
	Lints []agentbridge.Linter
	// Self is this binary ("" when it cannot be told): git's fsmonitor
	// hook for a writable git mount (fsmonitorHook) and a remote mount's
	// peer. Set by the process's entry point, which knows what binary it
	// is.
	Self string
	// WorktreeRoot is where git runs in the workspace: "" is the shell
	// tool's namespace, where a mount is at its path (/repo); the mount
	// command sets its mountpoint, where git runs at MNT/repo. A writable
	// git mount's new .git holds git's untracked cache for that path.
	WorktreeRoot string
	// Store is where checkpoints are pushed (nil: nowhere); resume is the
	// checkpoint the mounts are brought back from (nil: none).
	Store  *storeSettings
	resume *resumeState
	// SemSearch is the embeddings endpoint of the semSearch tool (nil:
	// none, no tool).
	SemSearch *semsearchSettings
}

// load reads the config file, parses the flags, falls back to
// [defaultMounts] when neither names a mount, and validates the lot. Every
// error is a usage error naming the spec, key or file at fault.
func (w *workspaceFlags) load(ctx context.Context, logger *slog.Logger) (*workspaceConfig, error) {
	if w.Git.CacheSize < 0 {
		return nil, usageErrorf("--cache-size: must not be negative, got %d", w.Git.CacheSize)
	}
	cfg := &workspaceConfig{Types: mountTypes(), Git: w.Git, Self: w.Self}
	var raws []rawSpec
	if w.Config != "" {
		file, specs, err := loadConfig(w.Config)
		if err != nil {
			return nil, err
		}
		cfg.File = file
		raws = append(raws, specs...)
	}
	if len(w.Mounts) > 0 {
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		for _, s := range w.Mounts {
			raw, err := parseSpec(s, cwd)
			if err != nil {
				return nil, err
			}
			raws = append(raws, raw)
		}
	}
	if len(raws) == 0 {
		def, err := defaultMounts(ctx, logger)
		if err != nil {
			return nil, err
		}
		raws = def
	}
	specs, err := validateSpecs(cfg.Types, raws)
	if err != nil {
		return nil, err
	}
	cfg.Mounts = specs
	if cfg.Policy, err = loadPolicy(cfg.File, &w.Policy); err != nil {
		return nil, err
	}
	if cfg.Checkpoint, err = loadCheckpointConfig(cfg.File); err != nil {
		return nil, err
	}
	if cfg.Lints, err = loadLintsConfig(cfg.File); err != nil {
		return nil, err
	}
	if cfg.Store, err = loadStoreConfig(cfg.File, &w.Store); err != nil {
		return nil, err
	}
	if cfg.SemSearch, err = loadSemsearchConfig(cfg.File); err != nil {
		return nil, err
	}
	return cfg, nil
}

// open loads the configuration and builds the workspace: what every
// subcommand that works on a workspace does first. The caller closes it.
func (w *workspaceFlags) open(ctx context.Context, logger *slog.Logger) (*workspace.Workspace, *workspaceConfig, error) {
	cfg, err := w.load(ctx, logger)
	if err != nil {
		return nil, nil, err
	}
	ws, err := buildWorkspace(ctx, cfg, logger)
	return ws, cfg, err
}

// defaultWorkspace describes [defaultMounts] for help output; change the
// two together.
const defaultWorkspace = "the git repository of the working directory at HEAD on /repo, and a memory mount on /memory"

// defaultMounts is the workspace when neither a config file nor a flag
// names a mount (DESIGN §5): the repository containing the working
// directory at HEAD on /repo, and memory on /memory. Outside a repository
// it is memory alone, and a log line says why.
func defaultMounts(ctx context.Context, logger *slog.Logger) ([]rawSpec, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mem := rawSpec{
		Origin: "default mount",
		Items:  []rawItem{{Key: "type", Value: "memory"}, {Key: "dst", Value: "/memory"}},
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	top, err := gitfs.Discover(cwd)
	if err != nil {
		logger.Info("default workspace: no git repository here, so no /repo", "dir", cwd)
		return []rawSpec{mem}, nil
	}
	git := rawSpec{
		Origin:   "default git mount",
		BaseDir:  cwd,
		Optional: true, // a repository without a commit yet has no /repo
		Items: []rawItem{{Key: "type", Value: "git"}, {Key: "src", Value: top},
			{Key: "rev", Value: "HEAD"}, {Key: "dst", Value: "/repo"}},
	}
	return []rawSpec{git, mem}, nil
}

// buildWorkspace builds every mount of cfg and opens the workspace over
// them (package workspace stacks the policy and the faces). On error,
// whatever was built is released and nothing is left behind. A spec error
// from a mount type, an invalid table (a dst under a file) or a checkpoint
// setting that cannot be honoured is a usage error; anything else is a
// runtime failure.
func buildWorkspace(ctx context.Context, cfg *workspaceConfig, logger *slog.Logger) (_ *workspace.Workspace, err error) {
	reg := cfg.Types
	if reg == nil {
		reg = mountTypes()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := workspace.Options{
		Logger: logger,
		Checkpoint: workspace.CheckpointOptions{
			Keep: cfg.Checkpoint.Keep, Before: cfg.Checkpoint.Before, Tools: cfg.Checkpoint.Tools,
		},
	}
	if pc := cfg.Policy; pc != nil {
		opts.Rules, opts.Approver, opts.DryRun, opts.Limits = pc.Rules, pc.Approver, pc.DryRun, pc.Limits
	}
	var closers []func() error
	defer func() {
		if err == nil {
			return
		}
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		if opts.Audit != nil {
			errs = append(errs, opts.Audit.Close())
		}
		if cerr := errors.Join(errs...); cerr != nil {
			logger.Warn("releasing a partly built workspace", "err", cerr)
		}
	}()
	if cfg.Policy != nil && cfg.Policy.Audit != nil {
		// Opened first, so it is closed last, after every mount; and a
		// path that cannot be opened is bad input, found before any
		// mount is built.
		ao := *cfg.Policy.Audit
		ao.Logger = logger
		if opts.Audit, err = policy.OpenAudit(ao); err != nil {
			return nil, usageError(err)
		}
	}
	hook := fsmonitorHook(cfg.Self)
	for i := range cfg.Mounts {
		spec := &cfg.Mounts[i]
		mt, ok := reg[spec.Type]
		if !ok { // validateSpec guarantees it; guard against a hand-built config.
			return nil, specErrorf(spec.Origin, "unknown mount type %q", spec.Type)
		}
		env := &buildEnv{
			Logger:   logger.With("mount", spec.Dst),
			Uid:      uint32(os.Getuid()),
			Gid:      uint32(os.Getgid()),
			Git:      cfg.Git,
			Hook:     hook,
			Worktree: cfg.WorktreeRoot,
			Self:     cfg.Self,
			Resume:   cfg.resume,
		}
		fsys, err := mt.Build(ctx, spec, env)
		closers = append(closers, env.onClose...)
		if err != nil && spec.Optional && exitCode(err) == exitUsage {
			logger.Info("default workspace: left out a mount whose source has nothing to serve",
				"mount", spec.Dst, "err", err)
			continue
		}
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return nil, err
			}
			return nil, fmt.Errorf("%s: %s mount on %s: %w", spec.Origin, spec.Type, spec.Dst, err)
		}
		m := workspace.Mount{Prefix: spec.Dst, FS: fsys}
		switch {
		case spec.Type == "host" && spec.Has("src"):
			m.Backing = "directory " + spec.String("src")
		case spec.Has("persist"):
			m.Backing = "persist file " + spec.String("persist")
		case spec.Has("upper"):
			m.Backing = "upper directory " + spec.String("upper")
		}
		opts.Mounts = append(opts.Mounts, m)
	}
	ws, err := workspace.Open(ctx, opts)
	switch {
	case errors.Is(err, checkpoint.ErrUnfinished):
		// The files, not the command line: a runtime failure.
		return nil, err
	case errors.Is(err, workspace.ErrNoWritable):
		return nil, usageErrorf("config: %v", err)
	case err != nil:
		return nil, usageError(err)
	}
	for _, c := range closers {
		ws.OnClose(c)
	}
	return ws, nil
}
