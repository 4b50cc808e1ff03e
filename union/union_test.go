package union

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

var ctx = context.Background()

func newMem() *memfs.FS { return memfs.New(memfs.Options{}) }

// readOnly hides every capability of the FS it wraps, what a git or skills
// mount offers: embedding the interface promotes only the read side.
type readOnly struct{ mounts.FS }

func (r readOnly) Describe() mounts.Description {
	return mounts.Description{Type: "ro", Source: "ro@1234567", Immutable: true}
}

func writeFile(t *testing.T, fsys mounts.FS, name, data string) {
	t.Helper()
	require.NoError(t, mounts.MkdirAll(ctx, fsys, dirOf(name), 0o755))
	require.NoError(t, mounts.WriteFile(ctx, fsys, name, []byte(data), 0o644))
}

func dirOf(name string) string {
	d, _ := mounts.Split(name)
	return d
}

func names(ents []mounts.DirEntry) []string {
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name
	}
	return out
}

func mustNew(t *testing.T, table map[string]mounts.FS) *Union {
	t.Helper()
	u, err := New(table)
	require.NoError(t, err)
	return u
}

func TestNewRejectsBadTables(t *testing.T) {
	withFile := newMem()
	writeFile(t, withFile, "file.txt", "x")
	many := map[string]mounts.FS{}
	for i := range maxMounts + 1 {
		many[fmt.Sprintf("/m%03d", i)] = newMem()
	}
	tests := []struct {
		name  string
		table map[string]mounts.FS
		want  string // substring of the error
	}{
		{"relative", map[string]mounts.FS{"repo": newMem()}, `"repo"`},
		{"trailing slash", map[string]mounts.FS{"/repo/": newMem()}, `"/repo/"`},
		{"double slash", map[string]mounts.FS{"/a//b": newMem()}, `"/a//b"`},
		{"dot dot", map[string]mounts.FS{"/a/../b": newMem()}, `"/a/../b"`},
		{"dot", map[string]mounts.FS{"/.": newMem()}, `"/."`},
		{"empty", map[string]mounts.FS{"": newMem()}, `""`},
		{"control character", map[string]mounts.FS{"/a\nb": newMem()}, `"/a\nb"`},
		{"long component", map[string]mounts.FS{"/" + strings.Repeat("x", 256): newMem()}, "not a clean absolute path"},
		{"nil fs", map[string]mounts.FS{"/repo": nil}, "mount /repo: nil file system"},
		{"under a file", map[string]mounts.FS{"/memory": withFile, "/memory/file.txt/x": newMem()},
			"mount /memory/file.txt/x: /memory/file.txt is not a directory in the mount at /memory"},
		{"deep under a file", map[string]mounts.FS{"/memory": withFile, "/memory/file.txt/x/y": newMem()},
			"/memory/file.txt is not a directory"},
		{"too many", many, "at most 255"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := New(tt.table)
			require.Error(t, err)
			assert.Nil(t, u)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestNewAcceptsGoodTables(t *testing.T) {
	mem := newMem()
	writeFile(t, mem, "dir/file.txt", "x")
	tests := []struct {
		name  string
		table map[string]mounts.FS
	}{
		{"empty", map[string]mounts.FS{}},
		{"root only", map[string]mounts.FS{"/": newMem()}},
		{"nested", map[string]mounts.FS{"/agent": newMem(), "/agent/skills": newMem()}},
		{"under an existing dir", map[string]mounts.FS{"/memory": mem, "/memory/dir/x": newMem()}},
		{"over a file", map[string]mounts.FS{"/memory": mem, "/memory/dir/file.txt": newMem()}},
		{"max mounts", func() map[string]mounts.FS {
			m := map[string]mounts.FS{}
			for i := range maxMounts {
				m[fmt.Sprintf("/m%03d", i)] = newMem()
			}
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := New(tt.table)
			require.NoError(t, err)
			assert.Len(t, u.Mounts(), len(tt.table))
		})
	}
}

func TestEmptyUnionIsAnEmptyReadOnlyRoot(t *testing.T) {
	u := mustNew(t, map[string]mounts.FS{})
	a, err := u.Stat(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeDir|0o555, a.Mode)
	assert.Equal(t, uint32(2), a.Nlink)
	ents, err := u.ReadDir(ctx, ".")
	require.NoError(t, err)
	assert.Empty(t, ents)
	_, err = u.Stat(ctx, "a/b")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, u.Mkdir(ctx, "a", 0o755), mounts.ErrReadOnly)
	assert.Equal(t, mounts.Capability(0), u.Capabilities())
	_, err = u.StatFS(ctx)
	assert.ErrorIs(t, err, mounts.ErrNotSupported)
}

// resolve answers which mount serves name (io/fs style, "repo/a.go"): its
// prefix, its file system and the mount-relative name. ok is false for an
// invalid name, a synthetic directory, or a name inside a synthetic
// directory that is none of its children. The union itself hands out no
// mount (a caller holding one would be past the decorators over the union),
// so its resolution is tested through locate.
func resolve(u *Union, name string) (prefix string, fsys mounts.FS, rel string, ok bool) {
	if !mounts.ValidPath(name) {
		return "", nil, "", false
	}
	t := u.locate(name)
	if t.kind != inMount {
		return "", nil, "", false
	}
	return t.m.prefix, t.m.fsys, t.rel, true
}

func TestResolve(t *testing.T) {
	root, repo, agent, skills := newMem(), newMem(), newMem(), newMem()
	withRoot := mustNew(t, map[string]mounts.FS{"/": root, "/repo": repo, "/agent": agent, "/agent/skills": skills})
	noRoot := mustNew(t, map[string]mounts.FS{"/repo": repo, "/agent/skills": skills})
	tests := []struct {
		name       string
		u          *Union
		in         string
		wantOK     bool
		wantPrefix string
		wantFS     mounts.FS
		wantRel    string
	}{
		{"root", withRoot, ".", true, "/", root, "."},
		{"top file", withRoot, "README", true, "/", root, "README"},
		{"mount point", withRoot, "repo", true, "/repo", repo, "."},
		{"inside", withRoot, "repo/src/a.go", true, "/repo", repo, "src/a.go"},
		{"whole components only", withRoot, "repository/x", true, "/", root, "repository/x"},
		{"prefix of a component", withRoot, "rep", true, "/", root, "rep"},
		{"nested wins", withRoot, "agent/skills/x/SKILL.md", true, "/agent/skills", skills, "x/SKILL.md"},
		{"nested sibling", withRoot, "agent/skillsx", true, "/agent", agent, "skillsx"},
		{"nested parent", withRoot, "agent", true, "/agent", agent, "."},
		{"absolute is invalid", withRoot, "/repo", false, "", nil, ""},
		{"dot dot is invalid", withRoot, "repo/../x", false, "", nil, ""},
		{"empty is invalid", withRoot, "", false, "", nil, ""},
		{"synthetic root", noRoot, ".", false, "", nil, ""},
		{"synthetic parent", noRoot, "agent", false, "", nil, ""},
		{"missing in synthetic", noRoot, "agent/other", false, "", nil, ""},
		{"missing at top", noRoot, "other", false, "", nil, ""},
		{"mount under synthetic", noRoot, "agent/skills/a", true, "/agent/skills", skills, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix, fsys, rel, ok := resolve(tt.u, tt.in)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.wantPrefix, prefix)
			assert.True(t, tt.wantFS == fsys, "got file system %v, want %v", fsys, tt.wantFS)
			assert.Equal(t, tt.wantRel, rel)
		})
	}
}

func TestSyntheticDirectories(t *testing.T) {
	skills, mem := newMem(), newMem()
	writeFile(t, mem, "a.txt", "hello")
	u := mustNew(t, map[string]mounts.FS{"/agent/skills": skills, "/memory": mem})

	root, err := u.Stat(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeDir|0o555, root.Mode)
	assert.Equal(t, uint32(4), root.Nlink, "2 + agent + memory")
	assert.Equal(t, uint32(os.Getuid()), root.Uid)
	assert.Equal(t, uint32(os.Getgid()), root.Gid)
	assert.False(t, root.Mtime.IsZero())
	assert.Equal(t, root.Mtime, root.Ctime)
	assert.NotZero(t, root.Ino)
	assert.Zero(t, root.Ino>>inoShift, "synthetic inode numbers use top byte 0")

	agent, err := u.Stat(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeDir|0o555, agent.Mode)
	assert.Equal(t, uint32(3), agent.Nlink)
	assert.NotEqual(t, root.Ino, agent.Ino)
	again, err := u.Stat(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, agent.Ino, again.Ino, "stable")

	ents, err := u.ReadDir(ctx, ".")
	require.NoError(t, err)
	require.Equal(t, []string{"agent", "memory"}, names(ents))
	assert.Equal(t, fs.ModeDir, ents[0].Type)
	assert.Equal(t, agent.Ino, ents[0].Ino)
	memRoot, err := u.Stat(ctx, "memory")
	require.NoError(t, err)
	assert.Equal(t, memRoot.Ino, ents[1].Ino, "a mount point lists its root's inode number")

	ents, err = u.ReadDir(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, []string{"skills"}, names(ents))

	attrs, err := u.ListXattr(ctx, "agent")
	require.NoError(t, err)
	assert.Empty(t, attrs)
	_, err = u.GetXattr(ctx, "agent", "user.x")
	assert.ErrorIs(t, err, mounts.ErrNoAttr)

	_, err = u.Stat(ctx, "agent/other")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = u.Stat(ctx, "other")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestSyntheticAndMountPointMutations(t *testing.T) {
	skills, mem := newMem(), newMem()
	writeFile(t, mem, "a.txt", "hello")
	writeFile(t, skills, "s/SKILL.md", "x")
	u := mustNew(t, map[string]mounts.FS{"/agent/skills": skills, "/memory": mem})
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"create in root", func() error { return mounts.WriteFile(ctx, u, "x", nil, 0o644) }, mounts.ErrReadOnly},
		{"create in synthetic", func() error { return mounts.WriteFile(ctx, u, "agent/x", nil, 0o644) }, mounts.ErrReadOnly},
		{"open missing without create", func() error {
			_, err := u.OpenFile(ctx, "agent/x", os.O_WRONLY, 0)
			return err
		}, fs.ErrNotExist},
		{"open synthetic for writing", func() error {
			_, err := u.OpenFile(ctx, "agent", os.O_WRONLY, 0)
			return err
		}, mounts.ErrIsDir},
		{"exclusive create of synthetic", func() error {
			_, err := u.OpenFile(ctx, "agent", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			return err
		}, fs.ErrExist},
		{"open synthetic", func() error { _, err := u.Open(ctx, "agent"); return err }, mounts.ErrIsDir},
		{"readlink synthetic", func() error { _, err := u.ReadLink(ctx, "agent"); return err }, fs.ErrInvalid},
		{"mkdir in synthetic", func() error { return u.Mkdir(ctx, "agent/x", 0o755) }, mounts.ErrReadOnly},
		{"mkdir below missing", func() error { return u.Mkdir(ctx, "agent/x/y", 0o755) }, fs.ErrNotExist},
		{"create below missing", func() error { return mounts.WriteFile(ctx, u, "agent/x/y", nil, 0o644) }, fs.ErrNotExist},
		{"rename below missing", func() error { return u.Rename(ctx, "memory/a.txt", "x/y", 0) }, fs.ErrNotExist},
		{"mkdir synthetic", func() error { return u.Mkdir(ctx, "agent", 0o755) }, fs.ErrExist},
		{"mkdir mount point", func() error { return u.Mkdir(ctx, "memory", 0o755) }, fs.ErrExist},
		{"symlink in synthetic", func() error { return u.Symlink(ctx, "t", "agent/l") }, mounts.ErrReadOnly},
		{"symlink over mount point", func() error { return u.Symlink(ctx, "t", "agent/skills") }, fs.ErrExist},
		{"rename into synthetic", func() error { return u.Rename(ctx, "memory/a.txt", "agent/a.txt", 0) }, mounts.ErrReadOnly},
		{"rename onto mount point", func() error { return u.Rename(ctx, "memory/a.txt", "agent/skills", 0) }, mounts.ErrBusy},
		{"rename synthetic", func() error { return u.Rename(ctx, "agent", "memory/agent", 0) }, mounts.ErrBusy},
		{"rename mount point", func() error { return u.Rename(ctx, "memory", "memory2", 0) }, mounts.ErrBusy},
		{"rename missing", func() error { return u.Rename(ctx, "agent/x", "memory/x", 0) }, fs.ErrNotExist},
		{"link into synthetic", func() error { return u.Link(ctx, "memory/a.txt", "agent/a.txt") }, mounts.ErrReadOnly},
		{"link synthetic", func() error { return u.Link(ctx, "agent", "memory/agent") }, fs.ErrPermission},
		{"link mount point", func() error { return u.Link(ctx, "memory", "memory/m") }, fs.ErrPermission},
		{"link missing", func() error { return u.Link(ctx, "agent/x", "memory/x") }, fs.ErrNotExist},
		{"link onto synthetic", func() error { return u.Link(ctx, "memory/a.txt", "agent") }, fs.ErrExist},
		{"rmdir synthetic", func() error { return u.Rmdir(ctx, "agent") }, mounts.ErrBusy},
		{"rmdir root", func() error { return u.Rmdir(ctx, ".") }, mounts.ErrBusy},
		{"rmdir mount point", func() error { return u.Rmdir(ctx, "agent/skills") }, mounts.ErrBusy},
		{"unlink mount point", func() error { return u.Unlink(ctx, "memory") }, mounts.ErrBusy},
		{"unlink synthetic", func() error { return u.Unlink(ctx, "agent") }, mounts.ErrBusy},
		{"unlink missing", func() error { return u.Unlink(ctx, "agent/x") }, fs.ErrNotExist},
		{"chmod synthetic", func() error { return u.Chmod(ctx, "agent", 0o777) }, mounts.ErrReadOnly},
		{"chown synthetic", func() error { return u.Chown(ctx, ".", 0, 0) }, mounts.ErrReadOnly},
		{"chtimes missing", func() error { return u.Chtimes(ctx, "agent/x", zeroTime, zeroTime) }, fs.ErrNotExist},
		{"truncate synthetic", func() error { return u.Truncate(ctx, "agent", 0) }, mounts.ErrIsDir},
		{"truncate missing", func() error { return u.Truncate(ctx, "agent/x", 0) }, fs.ErrNotExist},
		{"setxattr synthetic", func() error { return u.SetXattr(ctx, "agent", "user.a", nil, 0) }, mounts.ErrReadOnly},
		{"removexattr synthetic", func() error { return u.RemoveXattr(ctx, "agent", "user.a") }, mounts.ErrReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.True(t, mounts.ValidPath(pe.Path), "path %q is a union name, as the caller passes them", pe.Path)
		})
	}
	// Nothing changed underneath.
	ents, err := mem.ReadDir(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt"}, names(ents))
	ents, err = skills.ReadDir(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, []string{"s"}, names(ents))
}

var zeroTime time.Time

func TestMountPointShadowsParentEntry(t *testing.T) {
	agent, notes := newMem(), newMem()
	writeFile(t, agent, "a.txt", "a")
	writeFile(t, agent, "notes", "I am shadowed")
	writeFile(t, agent, "z/deep.txt", "z")
	writeFile(t, notes, "n.md", "note")
	u := mustNew(t, map[string]mounts.FS{"/agent": agent, "/agent/notes": notes})

	ents, err := u.ReadDir(ctx, "agent")
	require.NoError(t, err)
	require.Equal(t, []string{"a.txt", "notes", "z"}, names(ents))
	assert.Equal(t, fs.FileMode(0), ents[0].Type)
	assert.Equal(t, fs.ModeDir, ents[1].Type, "the mount point's entry wins")
	assert.Equal(t, fs.ModeDir, ents[2].Type)

	a, err := u.Stat(ctx, "agent/notes")
	require.NoError(t, err)
	assert.True(t, a.IsDir())
	rootAttr, err := notes.Stat(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, uint64(2)<<inoShift|rootAttr.Ino, a.Ino)
	assert.Equal(t, a.Ino, ents[1].Ino)

	data, err := mounts.ReadFile(ctx, u, "agent/notes/n.md")
	require.NoError(t, err)
	assert.Equal(t, "note", string(data))

	// Writes go to the mount that owns the name.
	writeFile(t, u, "agent/notes/new.md", "new")
	_, err = notes.Stat(ctx, "new.md")
	assert.NoError(t, err)
	writeFile(t, u, "agent/b.txt", "b")
	_, err = agent.Stat(ctx, "b.txt")
	assert.NoError(t, err)

	// The parent mount's directory holding a mount point is busy.
	assert.ErrorIs(t, u.Rmdir(ctx, "agent"), mounts.ErrBusy)
}

func TestIntermediateDirectoryMissingInParentIsSynthetic(t *testing.T) {
	root, skills := newMem(), newMem()
	writeFile(t, root, "etc/x", "x")
	writeFile(t, skills, "s/SKILL.md", "x")
	u := mustNew(t, map[string]mounts.FS{"/": root, "/agent/skills": skills})

	ents, err := u.ReadDir(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, []string{"agent", "etc"}, names(ents))
	a, err := u.Stat(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeDir|0o555, a.Mode)
	ents, err = u.ReadDir(ctx, "agent/skills/s")
	require.NoError(t, err)
	assert.Equal(t, []string{"SKILL.md"}, names(ents))

	assert.ErrorIs(t, mounts.WriteFile(ctx, u, "agent/x", nil, 0o644), mounts.ErrReadOnly)
	assert.ErrorIs(t, u.Mkdir(ctx, "agent", 0o755), fs.ErrExist)
	assert.ErrorIs(t, u.Rmdir(ctx, "agent"), mounts.ErrBusy)
	// The root mount really has no "agent": nothing was created in it.
	_, err = root.Stat(ctx, "agent")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestIntermediateDirectoryInParentIsServedByIt(t *testing.T) {
	root, skills := newMem(), newMem()
	writeFile(t, root, "agent/own.txt", "mine")
	u := mustNew(t, map[string]mounts.FS{"/": root, "/agent/skills": skills})

	ents, err := u.ReadDir(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, []string{"own.txt", "skills"}, names(ents))
	a, err := u.Stat(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeDir|0o755, a.Mode, "the root mount's own directory")
	writeFile(t, u, "agent/more.txt", "more")
	_, err = root.Stat(ctx, "agent/more.txt")
	assert.NoError(t, err)
	assert.ErrorIs(t, u.Rename(ctx, "agent", "agent2", 0), mounts.ErrBusy)
}

func TestCrossMount(t *testing.T) {
	mem, agent, notes := newMem(), newMem(), newMem()
	writeFile(t, mem, "a.txt", "a")
	writeFile(t, agent, "b.txt", "b")
	u := mustNew(t, map[string]mounts.FS{"/memory": mem, "/agent": agent, "/agent/notes": notes})

	assert.ErrorIs(t, u.Rename(ctx, "memory/a.txt", "agent/a.txt", 0), mounts.ErrCrossMount)
	assert.ErrorIs(t, u.Rename(ctx, "agent/b.txt", "agent/notes/b.txt", 0), mounts.ErrCrossMount)
	assert.ErrorIs(t, u.Link(ctx, "memory/a.txt", "agent/a.txt"), mounts.ErrCrossMount)

	require.NoError(t, u.Mkdir(ctx, "memory/d", 0o755))
	require.NoError(t, u.Rename(ctx, "memory/a.txt", "memory/d/renamed.txt", 0))
	data, err := mounts.ReadFile(ctx, mem, "d/renamed.txt")
	require.NoError(t, err)
	assert.Equal(t, "a", string(data))
	require.NoError(t, u.Link(ctx, "memory/d/renamed.txt", "memory/hard"))
	a1, err := u.Stat(ctx, "memory/d/renamed.txt")
	require.NoError(t, err)
	a2, err := u.Stat(ctx, "memory/hard")
	require.NoError(t, err)
	assert.Equal(t, a1.Ino, a2.Ino, "hard links share the rewritten number")
	assert.Equal(t, uint32(2), a2.Nlink)
}

// errFS fails every call with the error it holds.
type errFS struct{ err error }

func (e errFS) Stat(context.Context, string) (mounts.Attr, error) { return mounts.Attr{}, e.err }
func (e errFS) ReadDir(context.Context, string) ([]mounts.DirEntry, error) {
	return nil, e.err
}
func (e errFS) Open(context.Context, string) (mounts.File, error) { return nil, e.err }
func (e errFS) ReadLink(context.Context, string) (string, error)  { return "", e.err }

func TestErrorPathsAreCallerNames(t *testing.T) {
	repo := newMem()
	writeFile(t, repo, "src/a.go", "package a")
	hostErr := &fs.PathError{Op: "stat", Path: "/home/someone/secret/x", Err: fs.ErrPermission}
	u := mustNew(t, map[string]mounts.FS{
		"/repo":  repo,
		"/host":  errFS{hostErr},
		"/plain": errFS{errors.New("boom")},
	})
	tests := []struct {
		name     string
		op       func() error
		wantOp   string
		wantPath string
		want     error
	}{
		{"missing", func() error { _, err := u.Stat(ctx, "repo/src/b.go"); return err }, "stat", "repo/src/b.go", fs.ErrNotExist},
		{"not a dir", func() error { _, err := u.ReadDir(ctx, "repo/src/a.go"); return err }, "readdir", "repo/src/a.go", mounts.ErrNotDir},
		{"mount root", func() error { _, err := u.Open(ctx, "repo"); return err }, "open", "repo", mounts.ErrIsDir},
		{"foreign path replaced", func() error { _, err := u.Stat(ctx, "host/x"); return err }, "stat", "host/x", fs.ErrPermission},
		{"plain error wrapped", func() error { _, err := u.ReadLink(ctx, "plain/l"); return err }, "readlink", "plain/l", nil},
		{"rename names the old name", func() error { return u.Rename(ctx, "repo/nope", "repo/x", 0) }, "rename", "repo/nope", fs.ErrNotExist},
		{"read-only mount", func() error { return u.Mkdir(ctx, "host/d", 0o755) }, "mkdir", "host/d", mounts.ErrReadOnly},
		{"synthetic directory", func() error { return u.Mkdir(ctx, "d", 0o755) }, "mkdir", "d", mounts.ErrReadOnly},
		{"the root", func() error { return u.Rmdir(ctx, ".") }, "rmdir", ".", mounts.ErrBusy},
		{"invalid name kept as given", func() error { _, err := u.Stat(ctx, "repo/../x"); return err }, "stat", "repo/../x", fs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.wantOp, pe.Op)
			assert.Equal(t, tt.wantPath, pe.Path)
			assert.NotContains(t, err.Error(), "/home/someone")
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
}

func TestFilesThroughTheUnion(t *testing.T) {
	repo, mem := newMem(), newMem()
	writeFile(t, repo, "a.txt", "hello")
	u := mustNew(t, map[string]mounts.FS{"/repo": readOnly{repo}, "/memory": mem})

	f, err := u.Open(ctx, "repo/a.txt")
	require.NoError(t, err)
	defer f.Close()
	_, isWritable := f.(mounts.WritableFile)
	assert.False(t, isWritable)
	st, err := u.Stat(ctx, "repo/a.txt")
	require.NoError(t, err)
	fst, err := f.Stat()
	require.NoError(t, err)
	assert.Equal(t, st.Ino, fst.Ino, "fstat and stat agree")
	assert.Equal(t, uint64(2), fst.Ino>>inoShift, "/repo is the second mount in prefix order")

	buf := make([]byte, 10)
	n, err := f.ReadAt(buf, 0)
	assert.Equal(t, 5, n)
	assert.Same(t, io.EOF, err, "io.EOF passes through unwrapped")
	_, err = f.ReadAt(buf, -1)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "repo/a.txt", pe.Path)

	wf, err := u.OpenFile(ctx, "memory/w.txt", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	w, ok := wf.(mounts.WritableFile)
	require.True(t, ok, "a file opened for writing stays writable")
	_, err = w.WriteAt([]byte("abcdef"), 0)
	require.NoError(t, err)
	require.NoError(t, w.Truncate(3))
	require.NoError(t, w.Sync())
	_, err = w.WriteAt([]byte("x"), -1)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "memory/w.txt", pe.Path)
	require.NoError(t, w.Close())
	data, err := mounts.ReadFile(ctx, u, "memory/w.txt")
	require.NoError(t, err)
	assert.Equal(t, "abc", string(data))

	assert.ErrorIs(t, mounts.WriteFile(ctx, u, "repo/a.txt", nil, 0o644), mounts.ErrReadOnly)
	assert.ErrorIs(t, u.Truncate(ctx, "repo/a.txt", 0), mounts.ErrReadOnly)
	assert.ErrorIs(t, u.Chmod(ctx, "repo/a.txt", 0o600), mounts.ErrReadOnly)
	_, err = u.OpenFile(ctx, "repo/a.txt", os.O_RDONLY, 0)
	assert.NoError(t, err, "read-only flags open on a read-only mount")
}

// zeroIno reports no inode numbers, like a mount that has none.
type zeroIno struct{ readOnly }

func (z zeroIno) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	a, err := z.readOnly.Stat(ctx, name)
	a.Ino = 0
	return a, err
}

func (z zeroIno) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	ents, err := z.readOnly.ReadDir(ctx, name)
	for i := range ents {
		ents[i].Ino = 0
	}
	return ents, err
}

func TestInodeNumbersNeverCollide(t *testing.T) {
	a, b := newMem(), newMem()
	writeFile(t, a, "f", "1")
	writeFile(t, b, "f", "2")
	z := newMem()
	writeFile(t, z, "f", "3")
	u := mustNew(t, map[string]mounts.FS{"/a": a, "/b": b, "/z": zeroIno{readOnly{z}}})

	raw, err := a.Stat(ctx, "f")
	require.NoError(t, err)
	rawB, err := b.Stat(ctx, "f")
	require.NoError(t, err)
	require.Equal(t, raw.Ino, rawB.Ino, "precondition: the mounts' own numbers collide")

	sa, err := u.Stat(ctx, "a/f")
	require.NoError(t, err)
	sb, err := u.Stat(ctx, "b/f")
	require.NoError(t, err)
	assert.NotEqual(t, sa.Ino, sb.Ino)
	assert.Equal(t, uint64(1)<<inoShift|raw.Ino, sa.Ino)
	assert.Equal(t, uint64(2)<<inoShift|raw.Ino, sb.Ino)

	ents, err := u.ReadDir(ctx, "b")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, sb.Ino, ents[0].Ino)

	sz, err := u.Stat(ctx, "z/f")
	require.NoError(t, err)
	assert.Zero(t, sz.Ino, "unknown stays unknown")
	ents, err = u.ReadDir(ctx, "z")
	require.NoError(t, err)
	assert.Zero(t, ents[0].Ino)

	m := &mount{index: 3}
	assert.Equal(t, uint64(3)<<inoShift|0xff, m.ino(0xAB<<inoShift|0xff), "high bits of a mount's number are dropped")
}

func TestMountTableCapabilitiesDescribe(t *testing.T) {
	mem, repo := newMem(), newMem()
	u := mustNew(t, map[string]mounts.FS{"/repo": readOnly{repo}, "/memory": mem, "/agent/skills": readOnly{newMem()}})

	table := u.Mounts()
	require.Len(t, table, 3)
	roDesc := mounts.Description{Type: "ro", Source: "ro@1234567", Immutable: true}
	assert.Equal(t, []mounts.MountInfo{
		{Prefix: "/agent/skills", Description: roDesc, Writable: false, Caps: 0},
		{Prefix: "/memory", Description: mounts.Description{Type: "memory", Source: "memory"}, Writable: true, Caps: mounts.Capabilities(mem)},
		{Prefix: "/repo", Description: roDesc, Writable: false, Caps: 0},
	}, table)
	assert.Equal(t, table, mounts.Mounts(u), "the union answers the table")
	table[0].Prefix = "/changed"
	assert.Equal(t, "/agent/skills", u.Mounts()[0].Prefix, "the table is the caller's")

	// Freezing is a service's, on the mount itself: the union does not offer it.
	assert.Equal(t, mounts.Capabilities(mem)&^mounts.CapFreeze, u.Capabilities())
	assert.Equal(t, mounts.Capabilities(mem)&^mounts.CapFreeze, mounts.Capabilities(u), "reported, not inferred from methods")
	ro := mustNew(t, map[string]mounts.FS{"/repo": readOnly{repo}})
	assert.Equal(t, mounts.Capability(0), mounts.Capabilities(ro))
	assert.False(t, mounts.Writable(ro))
	assert.ErrorIs(t, mounts.Mkdir(ctx, ro, "repo/x", 0o755), mounts.ErrReadOnly)

	tests := []struct {
		name string
		want mounts.Description
	}{
		{"repo/x", mounts.Description{Type: "ro", Source: "ro@1234567", Immutable: true}},
		{"memory", mounts.Description{Type: "memory", Source: "memory"}},
		{"agent", mounts.Description{Type: "synthetic", Source: "union"}},
		{".", mounts.Description{Type: "synthetic", Source: "union"}},
		{"nope", mounts.Description{Type: "synthetic", Source: "union"}},
		{"../bad", mounts.Description{Type: "synthetic", Source: "union"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, u.DescribeAt(tt.name), "DescribeAt(%q)", tt.name)
		assert.Equal(t, tt.want, mounts.DescribeAt(u, tt.name), "mounts.DescribeAt(%q)", tt.name)
	}
	d := u.Describe()
	assert.Equal(t, "union", d.Type)
	assert.False(t, d.Immutable, "memory is mutable")
	assert.True(t, ro.Describe().Immutable)
}

func TestStatFS(t *testing.T) {
	mem := newMem()
	repo := readOnly{newMem()}
	single := mustNew(t, map[string]mounts.FS{"/memory": mem})
	want, err := mem.StatFS(ctx)
	require.NoError(t, err)
	st, err := single.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, st)

	mixed := mustNew(t, map[string]mounts.FS{"/a": statFSer{repo}, "/memory": mem})
	st, err = mixed.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, st, "the writable mount's figures, not the first mount's")
	onlyRO := mustNew(t, map[string]mounts.FS{"/a": statFSer{repo}, "/b": repo})
	st, err = onlyRO.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), st.Bsize, "no writable mount: the first that reports")

	none := mustNew(t, map[string]mounts.FS{"/a": repo})
	_, err = none.StatFS(ctx)
	assert.ErrorIs(t, err, mounts.ErrNotSupported)
}

// statFSer is a read-only mount that reports usage.
type statFSer struct{ readOnly }

func (statFSer) StatFS(context.Context) (mounts.FSStat, error) { return mounts.FSStat{Bsize: 1}, nil }

func TestXattrForwarding(t *testing.T) {
	mem := newMem()
	writeFile(t, mem, "f", "x")
	u := mustNew(t, map[string]mounts.FS{"/memory": mem, "/repo": readOnly{newMem()}})
	require.NoError(t, u.SetXattr(ctx, "memory/f", "user.k", []byte("v"), 0))
	v, err := u.GetXattr(ctx, "memory/f", "user.k")
	require.NoError(t, err)
	assert.Equal(t, "v", string(v))
	list, err := u.ListXattr(ctx, "memory/f")
	require.NoError(t, err)
	assert.Equal(t, []string{"user.k"}, list)
	require.NoError(t, u.RemoveXattr(ctx, "memory/f", "user.k"))
	_, err = u.GetXattr(ctx, "memory/f", "user.k")
	assert.ErrorIs(t, err, mounts.ErrNoAttr)
	_, err = u.GetXattr(ctx, "repo", "user.k")
	assert.ErrorIs(t, err, mounts.ErrNotSupported)
	list, err = u.ListXattr(ctx, "repo")
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestInvalidNamesFailBeforeResolution(t *testing.T) {
	u := mustNew(t, map[string]mounts.FS{"/": newMem()})
	bad := []string{"", "/abs", "a//b", "a/../b", "a/", "..", "a\x00b", strings.Repeat("n", 256)}
	ops := map[string]func(string) error{
		"stat":      func(n string) error { _, err := u.Stat(ctx, n); return err },
		"readdir":   func(n string) error { _, err := u.ReadDir(ctx, n); return err },
		"open":      func(n string) error { _, err := u.Open(ctx, n); return err },
		"openfile":  func(n string) error { _, err := u.OpenFile(ctx, n, os.O_CREATE|os.O_WRONLY, 0o644); return err },
		"readlink":  func(n string) error { _, err := u.ReadLink(ctx, n); return err },
		"mkdir":     func(n string) error { return u.Mkdir(ctx, n, 0o755) },
		"unlink":    func(n string) error { return u.Unlink(ctx, n) },
		"rmdir":     func(n string) error { return u.Rmdir(ctx, n) },
		"rename":    func(n string) error { return u.Rename(ctx, n, "x", 0) },
		"rename2":   func(n string) error { return u.Rename(ctx, "x", n, 0) },
		"symlink":   func(n string) error { return u.Symlink(ctx, "t", n) },
		"link":      func(n string) error { return u.Link(ctx, n, "x") },
		"truncate":  func(n string) error { return u.Truncate(ctx, n, 0) },
		"chmod":     func(n string) error { return u.Chmod(ctx, n, 0) },
		"chown":     func(n string) error { return u.Chown(ctx, n, 0, 0) },
		"chtimes":   func(n string) error { return u.Chtimes(ctx, n, zeroTime, zeroTime) },
		"getxattr":  func(n string) error { _, err := u.GetXattr(ctx, n, "a"); return err },
		"listxattr": func(n string) error { _, err := u.ListXattr(ctx, n); return err },
		"setxattr":  func(n string) error { return u.SetXattr(ctx, n, "a", nil, 0) },
		"rmxattr":   func(n string) error { return u.RemoveXattr(ctx, n, "a") },
	}
	writeFile(t, u, "x", "x")
	for opName, op := range ops {
		for _, name := range bad {
			err := op(name)
			if !errors.Is(err, fs.ErrInvalid) && !errors.Is(err, mounts.ErrNameTooLong) {
				t.Errorf("%s(%q) = %v, want fs.ErrInvalid or ErrNameTooLong", opName, name, err)
			}
		}
	}
}

func TestChangesThroughRootMount(t *testing.T) {
	root := newMem()
	u := mustNew(t, map[string]mounts.FS{"/": root})
	require.NoError(t, mounts.MkdirAll(ctx, u, "a/b", 0o755))
	writeFile(t, u, "a/b/f", "data")
	require.NoError(t, u.Symlink(ctx, "f", "a/b/l"))
	target, err := u.ReadLink(ctx, "a/b/l")
	require.NoError(t, err)
	assert.Equal(t, "f", target)
	require.NoError(t, u.Chmod(ctx, "a/b/f", 0o600))
	a, err := u.Stat(ctx, "a/b/f")
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), a.Mode)
	require.NoError(t, u.Truncate(ctx, "a/b/f", 2))
	data, err := mounts.ReadFile(ctx, root, "a/b/f")
	require.NoError(t, err)
	assert.Equal(t, "da", string(data))
	require.NoError(t, u.Unlink(ctx, "a/b/l"))
	require.NoError(t, u.Unlink(ctx, "a/b/f"))
	require.NoError(t, u.Rmdir(ctx, "a/b"))
	ents, err := u.ReadDir(ctx, "a")
	require.NoError(t, err)
	assert.Empty(t, ents)
	assert.ErrorIs(t, u.Rmdir(ctx, "."), mounts.ErrBusy, "the root mount point")
}

// TestConcurrentUse drives several mounts from many goroutines at once; run
// with -race it checks the union shares nothing mutable between calls.
func TestConcurrentUse(t *testing.T) {
	prefixes := []string{"/memory", "/agent", "/agent/notes"}
	table := map[string]mounts.FS{}
	for _, p := range prefixes {
		table[p] = newMem()
	}
	u := mustNew(t, table)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			dir := mounts.NameOf(prefixes[i%len(prefixes)])
			name := mounts.Join(dir, fmt.Sprintf("f%d", i))
			for j := range 50 {
				data := fmt.Sprintf("%d-%d", i, j)
				if err := mounts.WriteFile(ctx, u, name, []byte(data), 0o644); err != nil {
					t.Error(err)
					return
				}
				got, err := mounts.ReadFile(ctx, u, name)
				if err != nil || string(got) != data {
					t.Errorf("ReadFile(%q) = %q, %v; want %q", name, got, err, data)
					return
				}
				if _, err := u.ReadDir(ctx, "agent"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	ents, err := u.ReadDir(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, []string{"f1", "f10", "f4", "f7", "notes"}, names(ents))
}

// statDirMem is a memory mount that lists with attributes, counting how
// often it is asked to.
type statDirMem struct {
	*memfs.FS
	calls *int
}

func (s statDirMem) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	*s.calls++
	return mounts.StatEach(ctx, s.FS, name)
}

func TestStatDirIsReadDirAndStat(t *testing.T) {
	ctx := context.Background()
	calls := 0
	lister := statDirMem{newMem(), &calls}
	plain := newMem()
	for _, fsys := range []mounts.FS{lister, plain} {
		writeFile(t, fsys, "d/f", "f")
		writeFile(t, fsys, "g", "g")
	}
	u := mustNew(t, map[string]mounts.FS{"/a": lister, "/b": plain, "/a/m": newMem(), "/s/x": newMem()})
	for _, dir := range []string{".", "a", "a/d", "b", "b/d", "s"} {
		want, err := u.ReadDir(ctx, dir)
		require.NoError(t, err)
		ents, attrs, err := u.StatDir(ctx, dir)
		require.NoError(t, err, dir)
		require.Equal(t, want, ents, dir)
		require.Len(t, attrs, len(ents))
		for i, e := range ents {
			a, err := u.Stat(ctx, mounts.Join(dir, e.Name))
			require.NoError(t, err)
			assert.Equal(t, a, attrs[i], "%s/%s", dir, e.Name)
		}
	}
	// "a" holds a mount point, so only "a/d" went to the mount's StatDir.
	assert.Equal(t, 1, calls)
	_, _, err := u.StatDir(ctx, "a/nope")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "a/nope", pe.Path, "the caller's name")
}

// offeringFS is a memory mount that offers pages when the test says so.
type offeringFS struct {
	*memfs.FS
	sink mounts.PageSink
}

func (o *offeringFS) OfferPages(sink mounts.PageSink) bool { o.sink = sink; return true }

func TestOfferPagesTranslatesNames(t *testing.T) {
	repo := &offeringFS{FS: memfs.New(memfs.Options{})}
	root := &offeringFS{FS: memfs.New(memfs.Options{})}
	ctx := context.Background()
	require.NoError(t, mounts.Mkdir(ctx, repo.FS, "vendor", 0o755))
	u, err := New(map[string]mounts.FS{"/": root, "/repo": repo, "/repo/vendor": memfs.New(memfs.Options{}), "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	assert.False(t, mounts.OfferPages(mustNew(t, map[string]mounts.FS{"/memory": memfs.New(memfs.Options{})}), nil),
		"no mount offers pages")

	var got []string
	require.True(t, mounts.OfferPages(u, func(name string, data []byte) { got = append(got, name+"="+string(data)) }))
	repo.sink("a/b.go", []byte("b"))
	repo.sink("vendor/x.go", []byte("hidden")) // below another mount's mount point
	root.sink("top.txt", []byte("top"))
	assert.Equal(t, []string{"repo/a/b.go=b", "top.txt=top"}, got)

	require.True(t, mounts.OfferPages(u, nil))
	assert.Nil(t, repo.sink, "a nil sink reaches every mount")
}
