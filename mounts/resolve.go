package mounts

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strings"
)

// maxSymlinkHops is how many symlinks [Resolve] follows for one name before
// it fails with ErrLoop: the kernel's limit (MAXSYMLINKS), so a chain the
// shell follows through the kernel face is one the other faces follow.
const maxSymlinkHops = 40

// ResolveOptions say how [Resolve] treats the symlinks of a name. The zero
// value follows every symlink, the last component's included, confined to
// the FS.
type ResolveOptions struct {
	// Rooted reads fsys as the root of a namespace, the way the kernel
	// reads it where it is mounted at / (the tool face's workspace, whose
	// shell sees the same tree at the same paths): an absolute target is
	// a path from the root of fsys, and ".." at the root stays at the
	// root, as /.. is /. Without it, both leave the FS: ErrEscapes.
	Rooted bool
	// Lstat leaves a symlink in the last component unfollowed, as lstat(2)
	// does; symlinks in the directories above it are still followed.
	Lstat bool
	// AllowMissing makes a name whose tail does not exist a result rather
	// than an error, for a caller about to create it: Resolved.Exists is
	// false and Resolved.Name is the resolved existing part with the
	// missing tail appended as it was given.
	AllowMissing bool
}

// A Resolved name is where [Resolve] ended.
type Resolved struct {
	// Name is the name with every symlink it followed replaced by its
	// target: the entry itself, or where it would be created.
	Name string
	// Attr is the entry's attributes (lstat of Name); zero when it does
	// not exist.
	Attr Attr
	// Exists is false only with AllowMissing, for a missing tail.
	Exists bool
}

// Resolve follows the symlinks in every component of name, a valid name of
// fsys, using only Stat and ReadLink, so it resolves the same way over any
// mount and any decorator. A relative target is relative to the link's
// directory; targets are cleaned lexically (a ".." of a target is the
// parent of the path so far, not of what a symlink in it pointed to, as in
// [path.Clean]). It is the one symlink resolver of the module: [IOFS] and
// the tool face both resolve through it.
//
// Its own errors are *fs.PathError with op "stat" and name: ErrLoop after
// 40 symlinks (the kernel's MAXSYMLINKS), ErrNotDir for a component under a
// non-directory, ErrEscapes for a target that leaves the FS (not Rooted).
// The errors of fsys's Stat and ReadLink are returned as they are.
func Resolve(ctx context.Context, fsys FS, name string, opts ResolveOptions) (Resolved, error) {
	hops := 0
	done := "."
	rest := name
	if rest == "." {
		rest = ""
	}
	a, err := fsys.Stat(ctx, ".")
	if err != nil {
		return Resolved{}, err
	}
	for rest != "" {
		if !a.IsDir() {
			return Resolved{}, PathErr("stat", name, ErrNotDir)
		}
		elem, tail, _ := strings.Cut(rest, "/")
		next := Join(done, elem)
		na, err := fsys.Stat(ctx, next)
		if err != nil {
			if opts.AllowMissing && errors.Is(err, fs.ErrNotExist) {
				if tail != "" {
					next = next + "/" + tail
				}
				return Resolved{Name: next}, nil
			}
			return Resolved{}, err
		}
		if na.Mode&fs.ModeSymlink != 0 && (tail != "" || !opts.Lstat) {
			hops++
			if hops > maxSymlinkHops {
				return Resolved{}, PathErr("stat", name, ErrLoop)
			}
			target, err := fsys.ReadLink(ctx, next)
			if err != nil {
				return Resolved{}, err
			}
			joined, ok := linkTarget(done, target, opts.Rooted)
			if !ok {
				return Resolved{}, PathErr("stat", name, ErrEscapes)
			}
			if tail != "" {
				joined = Join(joined, tail)
			}
			done, rest = ".", joined
			if rest == "." {
				rest = ""
			}
			if a, err = fsys.Stat(ctx, "."); err != nil {
				return Resolved{}, err
			}
			continue
		}
		done, rest, a = next, tail, na
	}
	return Resolved{Name: done, Attr: a, Exists: true}, nil
}

// linkTarget is the name a symlink in directory dir with target points to,
// cleaned lexically; ok is false when it leaves the FS (never when rooted).
func linkTarget(dir, target string, rooted bool) (name string, ok bool) {
	if rooted {
		if !strings.HasPrefix(target, "/") {
			target = PathOf(dir) + "/" + target
		}
		return NameOf(path.Clean(target)), true
	}
	if strings.HasPrefix(target, "/") {
		return "", false
	}
	joined := path.Clean(path.Join(dir, target))
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return "", false
	}
	return joined, true
}
