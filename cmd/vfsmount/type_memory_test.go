package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "1048576", want: 1 << 20},
		{in: "512M", want: 512 << 20},
		{in: "512m", want: 512 << 20},
		{in: "2GiB", want: 2 << 30},
		{in: "1.5G", want: 3 << 29},
		{in: "10k", want: 10 << 10},
		{in: "3MB", want: 3e6},
		{in: "1T", want: 1 << 40},
		{in: "100B", want: 100},
		{in: " 7 M", want: 7 << 20},
		{in: "0", bad: true},
		{in: "-1G", bad: true},
		{in: "0.5", bad: true},
		{in: "lots", bad: true},
		{in: "NaN", bad: true},
		{in: "Inf", bad: true},
		{in: "9999999T", bad: true},
		{in: "M", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSize(tt.in)
			if tt.bad {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// buildMemorySpec validates and builds one memory spec, returning the
// environment so the test can close it as vfsmount would at exit.
func buildMemorySpec(t *testing.T, spec string) (mounts.FS, *buildEnv, error) {
	t.Helper()
	raw, err := parseSpec(spec, t.TempDir())
	require.NoError(t, err)
	ms, err := validateSpec(mountTypes(), raw)
	if err != nil {
		return nil, nil, err
	}
	env := &buildEnv{Logger: slog.New(slog.DiscardHandler)}
	fsys, err := memoryType().Build(context.Background(), &ms, env)
	return fsys, env, err
}

func closeEnv(t *testing.T, env *buildEnv) {
	t.Helper()
	for i := len(env.onClose) - 1; i >= 0; i-- {
		assert.NoError(t, env.onClose[i]())
	}
	env.onClose = nil
}

func TestMemoryQuotaKeys(t *testing.T) {
	ctx := context.Background()
	fsys, _, err := buildMemorySpec(t, "type=memory,dst=/m,max_bytes=10k,max_files=2")
	require.NoError(t, err)
	st, err := mounts.StatFS(ctx, fsys)
	require.NoError(t, err)
	assert.Equal(t, uint64(10<<10/4096), st.Blocks)
	assert.Equal(t, uint64(2), st.Files)

	assert.ErrorIs(t, mounts.WriteFile(ctx, fsys, "big", make([]byte, 11<<10), 0o644), mounts.ErrNoSpace)
	a, err := fsys.Stat(ctx, "big")
	require.NoError(t, err, "the create succeeded, the write did not")
	assert.Zero(t, a.Size, "a write that does not fit writes nothing")
	require.NoError(t, mounts.Mkdir(ctx, fsys, "b", 0o755))
	assert.ErrorIs(t, mounts.Mkdir(ctx, fsys, "c", 0o755), mounts.ErrNoSpace)

	for spec, want := range map[string]string{
		"type=memory,dst=/m,max_bytes=lots": `max_bytes: want a size of at least one byte`,
		"type=memory,dst=/m,max_files=0":    `max_files: want a whole number of at least 1, got "0"`,
		"type=memory,dst=/m,max_files=1.5":  `max_files: want a whole number`,
	} {
		_, _, err := buildMemorySpec(t, spec)
		require.Error(t, err, spec)
		assert.Equal(t, exitUsage, exitCode(err), spec)
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), `--mount "`+spec+`"`)
	}
}

func TestMemoryPersist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "mem.db")
	spec := "type=memory,dst=/m,persist=" + file

	fsys, env, err := buildMemorySpec(t, spec)
	require.NoError(t, err)
	require.NoError(t, mounts.Mkdir(ctx, fsys, "notes", 0o700))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "notes/a.md", []byte("remember"), 0o600))

	_, _, err = buildMemorySpec(t, spec)
	require.Error(t, err, "a second holder")
	assert.Equal(t, exitFailure, exitCode(err))
	assert.Equal(t, `--mount "`+spec+`": persist file `+file+` is in use by another vfsmount process; stop it, or use another file`, err.Error())

	closeEnv(t, env)
	fsys, env, err = buildMemorySpec(t, spec)
	require.NoError(t, err)
	got, err := mounts.ReadFile(ctx, fsys, "notes/a.md")
	require.NoError(t, err)
	assert.Equal(t, "remember", string(got))
	a, err := fsys.Stat(ctx, "notes")
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|0o700, a.Mode)
	closeEnv(t, env)
}

func TestMemoryPersistBadFiles(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(text, []byte("my precious notes\n"), 0o644))
	tests := []struct {
		name, file string
		want       string
	}{
		{"not ours", text, "persist file " + text + ": not a vfsmount memory store (left untouched)"},
		{"missing directory", filepath.Join(dir, "nope", "m.db"),
			"persist file " + filepath.Join(dir, "nope", "m.db") + ": its directory does not exist (create it first)"},
		{"a directory", dir, "persist file " + dir + ": not a vfsmount memory store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := buildMemorySpec(t, "type=memory,dst=/m,persist="+tt.file)
			require.Error(t, err)
			assert.Equal(t, exitUsage, exitCode(err))
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	b, err := os.ReadFile(text)
	require.NoError(t, err)
	assert.Equal(t, "my precious notes\n", string(b), "untouched")
}
