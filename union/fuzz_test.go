package union

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
)

// dirFS says every name is a directory, so every prefix of a table is
// accepted and no directory on the way to a nested mount is missing: the
// union's answer then depends on the prefixes alone.
type dirFS struct{}

func (dirFS) Stat(context.Context, string) (mounts.Attr, error) {
	return mounts.Attr{Mode: fs.ModeDir | 0o755, Ino: 7}, nil
}
func (dirFS) ReadDir(context.Context, string) ([]mounts.DirEntry, error) { return nil, nil }
func (dirFS) Open(_ context.Context, name string) (mounts.File, error) {
	return nil, mounts.PathErr("open", name, mounts.ErrIsDir)
}
func (dirFS) ReadLink(_ context.Context, name string) (string, error) {
	return "", mounts.PathErr("readlink", name, fs.ErrInvalid)
}

// FuzzResolve checks resolution against a brute-force longest-prefix
// match. spec is a comma-separated list of prefixes ("" for none); name is
// looked up.
func FuzzResolve(f *testing.F) {
	f.Add("/repo,/agent,/agent/skills", "agent/skills/x")
	f.Add("/,/repo", "repository/a")
	f.Add("/repo", "repo")
	f.Add("/a/b/c,/a", "a/b")
	f.Add("/a/b/c", "a/b/c/d/e")
	f.Add("/", ".")
	f.Add("", ".")
	f.Add("", "a/b")
	f.Add("/x,/x/y,/x/y/z", "x/y/zz")
	f.Add("/bad/,/ok", "ok/..")
	f.Fuzz(func(t *testing.T, spec, name string) {
		table := map[string]mounts.FS{}
		if spec != "" { // "" is the empty table
			for _, p := range strings.Split(spec, ",") {
				table[p] = dirFS{}
			}
		}
		u, err := New(table)
		if err != nil {
			return
		}
		prefix, fsys, rel, ok := resolve(u, name)

		want, found := "", false
		if mounts.ValidPath(name) {
			for p := range table {
				pn := strings.TrimPrefix(p, "/")
				if p == "/" {
					pn = "."
				}
				if pn == "." || name == pn || strings.HasPrefix(name, pn+"/") {
					if !found || len(p) > len(want) {
						want, found = p, true
					}
				}
			}
		}
		if ok != found {
			t.Fatalf("Resolve(%q) in %q: ok = %v, want %v", name, spec, ok, found)
		}
		if !ok {
			if prefix != "" || fsys != nil || rel != "" {
				t.Fatalf("Resolve(%q) in %q: not ok but returned (%q, %v, %q)", name, spec, prefix, fsys, rel)
			}
		} else {
			if prefix != want {
				t.Fatalf("Resolve(%q) in %q: prefix %q, want the longest %q", name, spec, prefix, want)
			}
			pn := strings.TrimPrefix(prefix, "/")
			if prefix == "/" {
				pn = "."
			}
			if !mounts.ValidPath(rel) || mounts.Join(pn, rel) != name {
				t.Fatalf("Resolve(%q) in %q: rel %q does not rejoin to the name under %q", name, spec, rel, prefix)
			}
		}
		// The rest of the read side must not panic on any input either.
		ctx := context.Background()
		a, err := u.Stat(ctx, name)
		if err == nil && ok && a.Ino>>inoShift == 0 {
			t.Fatalf("Stat(%q) in %q: mount inode %#x lacks the mount index", name, spec, a.Ino)
		}
		_, _ = u.ReadDir(ctx, name)
		_ = u.DescribeAt(name)
	})
}
