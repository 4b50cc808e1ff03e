package agentbridge

import (
	"context"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// testUnion is a minimal stand-in for package union in unit tests: one
// level of mount points under a synthetic read-only root.
type testUnion struct {
	m map[string]mounts.FS
	// table is the mount table the stand-in answers, as the union does.
	table []mounts.MountInfo
}

var (
	_ mounts.CapabilityReporter = (*testUnion)(nil)
	_ mounts.MountTabler        = (*testUnion)(nil)
)

func (u *testUnion) Mounts() []mounts.MountInfo { return u.table }

func (u *testUnion) split(name string) (mounts.FS, string, bool) {
	top, rest, _ := strings.Cut(name, "/")
	f, ok := u.m[top]
	if rest == "" {
		rest = "."
	}
	return f, rest, ok
}

func (u *testUnion) Capabilities() mounts.Capability {
	var c mounts.Capability
	for _, f := range u.m {
		c |= mounts.Capabilities(f)
	}
	return c
}

func rewrite(err error, name string) error {
	if pe, ok := err.(*fs.PathError); ok {
		return mounts.PathErr(pe.Op, name, pe.Err)
	}
	return err
}

func (u *testUnion) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	if name == "." {
		return mounts.Attr{Mode: fs.ModeDir | 0o555, Mtime: time.Unix(0, 0)}, nil
	}
	f, rest, ok := u.split(name)
	if !ok {
		return mounts.Attr{}, mounts.PathErr("stat", name, fs.ErrNotExist)
	}
	a, err := f.Stat(ctx, rest)
	return a, rewrite(err, name)
}

func (u *testUnion) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	if name == "." {
		var out []mounts.DirEntry
		for n := range u.m {
			out = append(out, mounts.DirEntry{Name: n, Type: fs.ModeDir})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	}
	f, rest, ok := u.split(name)
	if !ok {
		return nil, mounts.PathErr("readdir", name, fs.ErrNotExist)
	}
	e, err := f.ReadDir(ctx, rest)
	return e, rewrite(err, name)
}

func (u *testUnion) Open(ctx context.Context, name string) (mounts.File, error) {
	f, rest, ok := u.split(name)
	if !ok || name == "." {
		return nil, mounts.PathErr("open", name, fs.ErrNotExist)
	}
	r, err := f.Open(ctx, rest)
	return r, rewrite(err, name)
}

func (u *testUnion) ReadLink(ctx context.Context, name string) (string, error) {
	f, rest, ok := u.split(name)
	if !ok {
		return "", mounts.PathErr("readlink", name, fs.ErrInvalid)
	}
	s, err := f.ReadLink(ctx, rest)
	return s, rewrite(err, name)
}

func (u *testUnion) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	f, rest, ok := u.split(name)
	if !ok || rest == "." {
		return nil, mounts.PathErr("open", name, mounts.ErrBusy)
	}
	r, err := mounts.OpenFile(ctx, f, rest, flag, perm)
	return r, rewrite(err, name)
}

func (u *testUnion) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	f, rest, ok := u.split(name)
	if !ok || rest == "." {
		return mounts.PathErr("mkdir", name, mounts.ErrBusy)
	}
	return rewrite(mounts.Mkdir(ctx, f, rest, perm), name)
}

func (u *testUnion) Unlink(ctx context.Context, name string) error {
	f, rest, ok := u.split(name)
	if !ok || rest == "." {
		return mounts.PathErr("unlink", name, mounts.ErrBusy)
	}
	return rewrite(mounts.Unlink(ctx, f, rest), name)
}

func (u *testUnion) Rmdir(ctx context.Context, name string) error {
	f, rest, ok := u.split(name)
	if !ok || rest == "." {
		return mounts.PathErr("rmdir", name, mounts.ErrBusy)
	}
	return rewrite(mounts.Rmdir(ctx, f, rest), name)
}

func (u *testUnion) Symlink(ctx context.Context, target, name string) error {
	f, rest, ok := u.split(name)
	if !ok || rest == "." {
		return mounts.PathErr("symlink", name, mounts.ErrBusy)
	}
	return rewrite(mounts.Symlink(ctx, f, target, rest), name)
}

// readOnly hides every capability of a mount: embedding the interface
// promotes only the read side.
type readOnly struct{ mounts.FS }

// memoryAt is the mount table of one writable memory mount at prefix.
func memoryAt(prefix string) []mounts.MountInfo {
	return []mounts.MountInfo{{Prefix: prefix, Description: mounts.Description{Type: "memory", Source: "memory"}, Writable: true}}
}
