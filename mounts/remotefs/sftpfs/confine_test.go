package sftpfs_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
)

// Nothing outside DIR is read, written or listed through the mount,
// whatever symlinks DIR holds: a symlink leaving DIR in the middle of a
// name is refused (ErrEscapes, EACCES through the kernel, as a host
// mount says), one at the end is served as a symlink and never
// followed, and ".." is no name at all.
func TestConfinement(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	base := t.TempDir()
	dir := filepath.Join(base, "served")
	outside := filepath.Join(base, "outside")
	testutil.WriteFiles(t, dir, map[string]string{"sub/f.txt": "inside\n"})
	testutil.WriteFiles(t, outside, map[string]string{"secret.txt": "secret\n"})
	require.NoError(t, os.Chmod(filepath.Join(outside, "secret.txt"), 0o600))
	for name, target := range map[string]string{
		"out":     outside,                              // absolute, a directory outside
		"rel":     "../outside",                         // relative, climbing out
		"outfile": filepath.Join(outside, "secret.txt"), // a file outside
		"dangle":  filepath.Join(outside, "made.txt"),   // would create outside
		"in":      "sub",                                // inside: followed in the middle of a name
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	fsys := open(t, sshd, dir, false)
	ctx := context.Background()
	escapes := func(what string, err error) {
		t.Helper()
		assert.ErrorIs(t, err, mounts.ErrEscapes, what)
		var pe *fs.PathError
		assert.True(t, errors.As(err, &pe), "%s: %v is a *fs.PathError", what, err)
	}

	for _, n := range []string{"out/secret.txt", "rel/secret.txt"} {
		_, err := fsys.Stat(ctx, n)
		escapes("stat "+n, err)
		_, err = fsys.Open(ctx, n)
		escapes("open "+n, err)
		_, err = mounts.OpenFile(ctx, fsys, n, os.O_WRONLY|os.O_TRUNC, 0)
		escapes("open for writing "+n, err)
		escapes("unlink "+n, mounts.Unlink(ctx, fsys, n))
		escapes("chmod "+n, mounts.Chmod(ctx, fsys, n, 0o666))
		escapes("chown "+n, mounts.Chown(ctx, fsys, n, 4242, 4242))
		escapes("truncate "+n, mounts.Truncate(ctx, fsys, n, 0))
		escapes("rename from "+n, mounts.Rename(ctx, fsys, n, "sub/stolen.txt", 0))
		escapes("rename to "+n, mounts.Rename(ctx, fsys, "sub/f.txt", n, 0))
	}
	_, err := mounts.OpenFile(ctx, fsys, "out/new.txt", os.O_WRONLY|os.O_CREATE, 0o644)
	escapes("create out/new.txt", err)
	escapes("mkdir rel/d", mounts.Mkdir(ctx, fsys, "rel/d", 0o755))
	escapes("symlink out/l", mounts.Symlink(ctx, fsys, "x", "out/l"))
	_, err = fsys.ReadDir(ctx, "out/.")
	assert.ErrorIs(t, err, fs.ErrInvalid, "out/. is no name")
	_, err = fsys.Stat(ctx, "..")
	assert.ErrorIs(t, err, fs.ErrInvalid)
	_, err = fsys.Stat(ctx, "sub/../../outside")
	assert.ErrorIs(t, err, fs.ErrInvalid)

	// A symlink at the end of a name is a symlink: never followed.
	a, err := fsys.Stat(ctx, "out")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, a.Mode.Type())
	target, err := fsys.ReadLink(ctx, "outfile")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(outside, "secret.txt"), target)
	_, err = fsys.ReadDir(ctx, "out")
	assert.ErrorIs(t, err, mounts.ErrNotDir, "a listing does not follow a final symlink")
	_, err = fsys.Open(ctx, "outfile")
	assert.ErrorIs(t, err, mounts.ErrLoop)
	_, err = mounts.OpenFile(ctx, fsys, "outfile", os.O_WRONLY|os.O_TRUNC, 0)
	assert.ErrorIs(t, err, mounts.ErrLoop)
	assert.ErrorIs(t, mounts.Truncate(ctx, fsys, "outfile", 0), mounts.ErrLoop)
	assert.ErrorIs(t, mounts.Chmod(ctx, fsys, "outfile", 0o666), mounts.ErrNotSupported)
	require.NoError(t, mounts.Chown(ctx, fsys, "outfile", 4242, 4343), "chown of a symlink changes the link")
	_, err = mounts.OpenFile(ctx, fsys, "dangle", os.O_WRONLY|os.O_CREATE, 0o644)
	assert.ErrorIs(t, err, mounts.ErrLoop, "a create through a dangling symlink")
	_, err = fsys.(mounts.CommandFS).StartCommand(ctx, mounts.Command{Argv: []string{"true"}, Dir: "out"})
	assert.ErrorIs(t, err, mounts.ErrNotDir, "a command's directory is not followed out")

	// Outside, nothing changed.
	b, err := os.ReadFile(filepath.Join(outside, "secret.txt"))
	require.NoError(t, err)
	assert.Equal(t, "secret\n", string(b))
	st, err := os.Stat(filepath.Join(outside, "secret.txt"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	assert.Equal(t, uint32(0), st.Sys().(*syscall.Stat_t).Uid, "the target's owner is unchanged")
	lst, err := os.Lstat(filepath.Join(dir, "outfile"))
	require.NoError(t, err)
	assert.Equal(t, uint32(4242), lst.Sys().(*syscall.Stat_t).Uid, "the link's owner changed")
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "nothing made outside")

	// A symlink that stays inside is followed in the middle of a name,
	// and unlinking the link removes the link.
	data, err := mounts.ReadFile(ctx, fsys, "in/f.txt")
	require.NoError(t, err)
	assert.Equal(t, "inside\n", string(data))
	require.NoError(t, mounts.Unlink(ctx, fsys, "outfile"))
	_, err = os.Stat(filepath.Join(outside, "secret.txt"))
	require.NoError(t, err, "the link went, not its target")
}

// Commands run on the remote machine in the mount's directory, with the
// environment given, their output and status reported, their final
// directory mapped under Root; Kill ends the whole process group.
func TestCommand(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"sub/deeper/x": ""})
	fsys := open(t, sshd, dir, false).(mounts.CommandFS)
	ctx := context.Background()

	var out, errb strings.Builder
	p, err := fsys.StartCommand(ctx, mounts.Command{
		Argv: []string{"sh", "-c", `trap 'printf "%s\0" "$PWD" >&3' EXIT; pwd; echo "v=$V"; echo oops >&2; cd deeper; exit 3`},
		Dir:  "sub", Env: []string{"V=it's here"}, Root: "/workspace", Stdout: &out, Stderr: &errb, DirFD3: true,
	})
	require.NoError(t, err)
	status, final, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 3, status)
	assert.Equal(t, filepath.Join(dir, "sub")+"\nv=it's here\n", out.String())
	assert.Equal(t, "oops\n", errb.String())
	assert.Equal(t, "/workspace/sub/deeper", final)

	// A missing directory is the mount's error, before anything runs.
	_, err = fsys.StartCommand(ctx, mounts.Command{Argv: []string{"true"}, Dir: "nope"})
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// Kill: the shell and what it started in the background.
	marker := filepath.Join(dir, "killed-marker")
	p, err = fsys.StartCommand(ctx, mounts.Command{
		Argv: []string{"sh", "-c", "(sleep 3; touch " + marker + ") & sleep 30"}, Dir: ".", Stdout: &out,
	})
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	status, _, err = p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 128+9, status)
	sleep(4000) // past the background job's 3 s
	_, err = os.Stat(marker)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the background job died with the command")
}
