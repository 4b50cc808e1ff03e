package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/union"
)

// workspaceFlags are the flags of every subcommand that builds a workspace
// (mount, exec, call, tools, serve, mcp): a config file, mount specs, the
// git settings and the policy flags.
type workspaceFlags struct {
	Config string
	Mounts []string
	Git    gitSettings
	Policy policyFlags
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
}

// load reads the config file, parses the flags, falls back to
// [defaultMounts] when neither names a mount, and validates the lot. Every
// error is a usage error naming the spec, key or file at fault.
func (w *workspaceFlags) load(ctx context.Context, logger *slog.Logger) (*workspaceConfig, error) {
	if w.Git.CacheSize < 0 {
		return nil, usageErrorf("--cache-size: must not be negative, got %d", w.Git.CacheSize)
	}
	cfg := &workspaceConfig{Types: mountTypes(), Git: w.Git}
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
	return cfg, nil
}

// open loads the configuration and builds the workspace: what every
// subcommand that works on a workspace does first. The caller closes it.
func (w *workspaceFlags) open(ctx context.Context, logger *slog.Logger) (*workspace, error) {
	cfg, err := w.load(ctx, logger)
	if err != nil {
		return nil, err
	}
	return buildWorkspace(ctx, cfg, logger)
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

// workspace is a built workspace: the union of its mounts, ready for the
// kernel face or the tool face.
type workspace struct {
	Config *workspaceConfig
	// Union composes the mounts.
	Union *union.Union
	// FS is the tree below both faces: the union wrapped in the policy
	// decorators (path rules, then audit). Kernel says how the kernel
	// face serves it, Tools what the tool face serves; [workspace.stack]
	// stacks all three.
	FS     mounts.FS
	Kernel kernelFace
	Tools  toolFace
	// Policy is the workspace's policy (nil: none); Audit its open audit
	// log (nil: none), closed by Close after everything else.
	Policy *policyConfig
	Audit  *policy.AuditLog
	// Export hands the writable git mounts' changes back to git (nil: the
	// workspace has none).
	Export *exporter
	// Checkpoints takes and restores checkpoints of every writable layer
	// (nil: the workspace has none a checkpoint can freeze).
	Checkpoints *checkpoints

	cleanup []func() error
}

// Close releases what the mounts hold, in reverse order of creation. Call
// it after the faces are down.
func (w *workspace) Close() error {
	var errs []error
	for i := len(w.cleanup) - 1; i >= 0; i-- {
		errs = append(errs, w.cleanup[i]())
	}
	w.cleanup = nil
	return errors.Join(errs...)
}

// buildWorkspace builds every mount of cfg and composes them. On error,
// whatever was built is released and nothing is left behind. A spec error
// from a mount type or an invalid table (a dst under a file) is a usage
// error; anything else is a runtime failure.
func buildWorkspace(ctx context.Context, cfg *workspaceConfig, logger *slog.Logger) (_ *workspace, err error) {
	reg := cfg.Types
	if reg == nil {
		reg = mountTypes()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ws := &workspace{Config: cfg}
	defer func() {
		if err != nil {
			if cerr := ws.Close(); cerr != nil {
				logger.Warn("releasing a partly built workspace", "err", cerr)
			}
		}
	}()
	if cfg.Policy != nil && cfg.Policy.Audit != nil {
		// Opened first, so it is closed last, after every mount; and a
		// path that cannot be opened is bad input, found before any
		// mount is built.
		opts := *cfg.Policy.Audit
		opts.Logger = logger
		if ws.Audit, err = policy.OpenAudit(opts); err != nil {
			return nil, usageError(err)
		}
		ws.cleanup = append(ws.cleanup, ws.Audit.Close)
	}
	table := make(map[string]mounts.FS, len(cfg.Mounts))
	for i := range cfg.Mounts {
		spec := &cfg.Mounts[i]
		mt, ok := reg[spec.Type]
		if !ok { // validateSpec guarantees it; guard against a hand-built config.
			return nil, specErrorf(spec.Origin, "unknown mount type %q", spec.Type)
		}
		env := &buildEnv{
			Logger: logger.With("mount", spec.Dst),
			Uid:    uint32(os.Getuid()),
			Gid:    uint32(os.Getgid()),
			Git:    cfg.Git,
		}
		fsys, err := mt.Build(ctx, spec, env)
		ws.cleanup = append(ws.cleanup, env.onClose...)
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
		table[spec.Dst] = fsys
	}
	u, err := union.New(table)
	if err != nil {
		return nil, usageErrorf("mount table: %v", err)
	}
	ws.Union = u
	ws.Policy = cfg.Policy
	backing := map[string]string{}
	for i := range cfg.Mounts {
		spec := &cfg.Mounts[i]
		switch {
		case spec.Type == "host" && spec.Has("src"):
			backing[spec.Dst] = "directory " + spec.String("src")
		case spec.Has("persist"):
			backing[spec.Dst] = "persist file " + spec.String("persist")
		case spec.Has("upper"):
			backing[spec.Dst] = "upper directory " + spec.String("upper")
		}
	}
	var rules *policy.RuleSet
	if ws.Policy != nil {
		rules = ws.Policy.Rules
	}
	if ws.Checkpoints, err = newCheckpoints(table, backing, cfg.Checkpoint.Keep, rules, ws.Audit, ws.Kernel.changed.notify); err != nil {
		if errors.Is(err, checkpoint.ErrUnfinished) {
			// The files, not the command line: a runtime failure.
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		return nil, usageErrorf("checkpoint: %v", err)
	}
	if ws.Checkpoints == nil && (len(cfg.Checkpoint.Before) > 0 || cfg.Checkpoint.Tools) {
		return nil, usageErrorf("config: checkpoint: %v", checkpoint.ErrNoWritable)
	}
	ws.stack()
	ws.Export = newExporter(table, ws.Audit, ws.Kernel.changed.notify)
	return ws, nil
}

// Mounts is the mount table as FS answers it: the union's, a mount under
// a read_only prefix shown read-only by the path rules.
func (w *workspace) Mounts() []mounts.MountInfo { return mounts.Mounts(w.FS) }
