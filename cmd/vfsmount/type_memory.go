package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
	"github.com/vfsmount/vfsmount/store"
)

// memoryType is the in-memory tree. It starts empty and lives as long as
// the process, unless persist names a file that keeps it.
func memoryType() mountType {
	return mountType{
		Name:    "memory",
		Doc:     "an in-memory tree, writable; gone when vfsmount exits unless persist= keeps it in a file",
		Example: "type=memory,dst=/memory,persist=./memory.db,max_bytes=1G",
		Keys: map[string]keySpec{
			"persist": {Kind: kindPath, Doc: "file keeping the tree across restarts and crashes " +
				"(created if missing; fsync and unmount make changes durable)"},
			"max_bytes": {Kind: kindString, Doc: "byte quota, e.g. 512M or 2GiB (ENOSPC past it)"},
			"max_files": {Kind: kindString, Doc: "quota of files, directories and symlinks (ENOSPC past it)"},
		},
		Build: buildMemory,
	}
}

func buildMemory(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
	opts := memfs.Options{Logger: env.Logger, Uid: env.Uid, Gid: env.Gid}
	var err error
	if opts.MaxBytes, err = quotaOption(spec, "max_bytes", parseSize); err != nil {
		return nil, err
	}
	if opts.MaxFiles, err = quotaOption(spec, "max_files", parseCount); err != nil {
		return nil, err
	}
	path := spec.String("persist")
	if env.Resume != nil && path != "" {
		return nil, specErrorf(spec.Origin, "key \"persist\" and --resume exclude each other: a resumed tree comes from the store")
	}
	if t, err := env.Resume.tree(ctx, spec.Dst, store.LayerMemory, opts); t != nil || err != nil {
		return t, err
	}
	if path == "" {
		return memfs.New(opts), nil
	}
	fsys, err := loadPersisted(spec, path, opts, env)
	if err != nil {
		return nil, err
	}
	env.Logger.Info("memory mount loaded", "persist", path)
	return fsys, nil
}

// loadPersisted opens the persist file path and loads the memory tree it
// keeps, closed with the workspace. The memory mount and the upper layer of
// a writable git mount share it, so both keep their data the same way.
func loadPersisted(spec *mountSpec, path string, opts memfs.Options, env *buildEnv) (*memfs.FS, error) {
	store, err := boltstore.Open(path, boltstore.Options{Logger: env.Logger})
	if err != nil {
		return nil, persistErr(spec, path, err)
	}
	fsys, err := store.Load(opts)
	if err != nil {
		store.Close()
		return nil, persistErr(spec, path, err)
	}
	env.OnClose(store.Close)
	return fsys, nil
}

// persistErr says what is wrong with the persist file, naming it: bad input
// (a file that is not ours, corrupt or newer, a missing directory) exits 2,
// a file held by another process exits 1, like a busy mountpoint.
func persistErr(spec *mountSpec, path string, err error) error {
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		return &exitError{code: exitFailure, err: fmt.Errorf(
			"%s: persist file %s is in use by another vfsmount process; stop it, or use another file", spec.Origin, path)}
	case errors.Is(err, boltstore.ErrNotOurs), errors.Is(err, boltstore.ErrCorrupt), errors.Is(err, boltstore.ErrNewerFormat):
		return specErrorf(spec.Origin, "persist file %s: %v (left untouched)", path, err)
	case errors.Is(err, boltstore.ErrNoDir):
		return specErrorf(spec.Origin, "persist file %s: %v (create it first)", path, err)
	}
	return fmt.Errorf("persist file %s: %w", path, err)
}

// quotaOption parses an optional quota key; absent is 0, unlimited.
func quotaOption(spec *mountSpec, key string, parse func(string) (int64, error)) (int64, error) {
	if !spec.Has(key) {
		return 0, nil
	}
	n, err := parse(spec.String(key))
	if err != nil {
		return 0, specErrorf(spec.Origin, "%s: %v", key, err)
	}
	return n, nil
}

// sizeUnits are the suffixes parseSize knows: the k/M/G/T of dd, df and
// Docker are binary, as are their KiB spellings; KB, MB... are decimal.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"B", 1}, {"b", 1},
}

// parseSize parses a byte count: "1048576", "512M", "2GiB", "1.5G".
func parseSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || f < 1 || f*float64(mult) >= math.MaxInt64 {
		return 0, fmt.Errorf("want a size of at least one byte such as 1048576, 512M or 2GiB, got %q", s)
	}
	return int64(f * float64(mult)), nil
}

// parseCount parses a positive whole number.
func parseCount(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a whole number of at least 1, got %q", s)
	}
	return n, nil
}
