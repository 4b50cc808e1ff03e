package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		path     string
		isDir    bool
		want     bool
	}{
		{"basename anywhere", []string{"*.env"}, "repo/a/b.env", false, true},
		{"basename top", []string{"*.env"}, "b.env", false, true},
		{"basename no", []string{"*.env"}, "repo/b.envx", false, false},
		{"below a matching dir", []string{"*.env"}, "repo/x.env/inner", false, true},
		{"anchored", []string{"/repo/secrets"}, "repo/secrets", true, true},
		{"anchored below", []string{"/repo/secrets"}, "repo/secrets/k/key.pem", false, true},
		{"anchored elsewhere", []string{"/repo/secrets"}, "memory/repo/secrets", false, false},
		{"dir only matches dir", []string{"/repo/secrets/"}, "repo/secrets", true, true},
		{"dir only not a file", []string{"/repo/secrets/"}, "repo/secrets", false, false},
		{"dir only covers below", []string{"/repo/secrets/"}, "repo/secrets/a", false, true},
		{"double star", []string{"/repo/**/id_rsa"}, "repo/a/b/id_rsa", false, true},
		{"double star zero dirs", []string{"/repo/**/id_rsa"}, "repo/id_rsa", false, true},
		{"negation", []string{"*.env", "!example.env"}, "repo/example.env", false, false},
		{"negation others", []string{"*.env", "!example.env"}, "repo/prod.env", false, true},
		{"root never", []string{"*"}, ".", true, false},
		{"class", []string{"/memory/[ab].txt"}, "memory/b.txt", false, true},
		{"class miss", []string{"/memory/[ab].txt"}, "memory/c.txt", false, false},
		{"no patterns", nil, "repo/x", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := compile("deny_read", tt.patterns)
			require.NoError(t, err)
			assert.Equal(t, tt.want, m.match(tt.path, tt.isDir), "match(%q, dir=%v) with %q", tt.path, tt.isDir, tt.patterns)
		})
	}
}

func TestCompileRejects(t *testing.T) {
	tests := []struct {
		name  string
		rules Rules
		want  string
	}{
		{"bad class", Rules{DenyRead: []string{"/repo/[a"}}, `deny_read: invalid pattern "/repo/[a"`},
		{"star star inside", Rules{DenyWrite: []string{"/repo/a**b"}}, `deny_write: invalid pattern "/repo/a**b"`},
		{"empty", Rules{DenyWrite: []string{""}}, `deny_write: invalid pattern ""`},
		{"only slash", Rules{DenyRead: []string{"/"}}, `deny_read: invalid pattern "/"`},
		{"comment", Rules{DenyRead: []string{"#x"}}, `deny_read: invalid pattern "#x"`},
		{"relative prefix", Rules{ReadOnly: []string{"repo"}}, `read_only: invalid prefix "repo"`},
		{"dotdot prefix", Rules{ReadOnly: []string{"/../x"}}, `read_only: invalid prefix "/../x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.rules)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestGuardTransparent: with no rules the decorator passes the mount
// conformance suite exactly as memfs does, capabilities included.
func TestGuardTransparent(t *testing.T) {
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return Guard(memfs.New(memfs.Options{}), &RuleSet{})
	}, mountstest.Caps(mounts.CapMutating|mounts.CapXattr|mounts.CapStatFS))
}

// TestAuditTransparent: the audit decorator passes the suite too, and
// logs what the suite did.
func TestAuditTransparent(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenAudit(AuditOptions{Path: dir + "/audit.jsonl"})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return Audit(Guard(memfs.New(memfs.Options{}), &RuleSet{}), l)
	}, mountstest.Caps(mounts.CapMutating|mounts.CapXattr|mounts.CapStatFS))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(dir + "/audit.jsonl")
	require.NoError(t, err)
	assert.Contains(t, string(data), `"op":"mkdir"`)
	assert.Contains(t, string(data), `"op":"rename"`)
}

// seeded returns a memory tree laid out like a workspace.
func seeded(t *testing.T) mounts.FS {
	t.Helper()
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	for _, d := range []string{"repo", "repo/secrets", "repo/src", "memory", "memory/ro"} {
		require.NoError(t, m.Mkdir(ctx, d, 0o755))
	}
	for _, f := range []string{"repo/.env", "repo/secrets/key", "repo/src/a.go", "memory/ro/x", "memory/note"} {
		require.NoError(t, mounts.WriteFile(ctx, m, f, []byte("content of "+f), 0o644))
	}
	require.NoError(t, m.Symlink(ctx, ".env", "repo/envlink"))
	return m
}

var testRules = Rules{
	DenyRead:  []string{"*.env", "/repo/secrets/"},
	DenyWrite: []string{"/repo/src/*.go"},
	ReadOnly:  []string{"/memory/ro"},
}

func TestGuardVerdicts(t *testing.T) {
	ctx := context.Background()
	rs, err := Compile(testRules)
	require.NoError(t, err)
	type op func(g mounts.FS) error
	open := func(name string) op {
		return func(g mounts.FS) error {
			f, err := g.Open(ctx, name)
			if err == nil {
				f.Close()
			}
			return err
		}
	}
	openFile := func(name string, flag int) op {
		return func(g mounts.FS) error {
			f, err := mounts.OpenFile(ctx, g, name, flag, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		}
	}
	tests := []struct {
		name string
		op   op
		want error // nil: allowed
	}{
		{"stat denied-read file", func(g mounts.FS) error { _, err := g.Stat(ctx, "repo/.env"); return err }, nil},
		{"list parent shows it", func(g mounts.FS) error {
			ents, err := g.ReadDir(ctx, "repo")
			if err == nil && !strings.Contains(names(ents), ".env") {
				return errors.New("missing from listing")
			}
			return err
		}, nil},
		{"open denied", open("repo/.env"), mounts.ErrDenied},
		{"open allowed", open("repo/src/a.go"), nil},
		{"readdir denied dir", func(g mounts.FS) error { _, err := g.ReadDir(ctx, "repo/secrets"); return err }, mounts.ErrDenied},
		{"statdir denied dir", func(g mounts.FS) error { _, _, err := mounts.StatDir(ctx, g, "repo/secrets"); return err }, mounts.ErrDenied},
		{"statdir is readdir and stat", func(g mounts.FS) error {
			ents, attrs, err := g.(mounts.StatDirFS).StatDir(ctx, "repo")
			if err != nil {
				return err
			}
			want, _, _ := mounts.StatEach(ctx, g, "repo")
			if names(ents) != names(want) || len(attrs) != len(ents) {
				return fmt.Errorf("statdir %s, readdir %s", names(ents), names(want))
			}
			for i, e := range ents {
				if a, err := g.Stat(ctx, "repo/"+e.Name); err != nil || a != attrs[i] {
					return fmt.Errorf("%s: %v %v", e.Name, err, attrs[i])
				}
			}
			return nil
		}, nil},
		{"open below denied dir", open("repo/secrets/key"), mounts.ErrDenied},
		{"readlink denied", func(g mounts.FS) error { _, err := g.ReadLink(ctx, "repo/envlink"); return err }, nil},
		{"user xattr denied", func(g mounts.FS) error { _, err := mounts.GetXattr(ctx, g, "repo/.env", "user.x"); return err }, mounts.ErrDenied},
		{"security xattr probed", func(g mounts.FS) error {
			// Whatever the mount says (memfs keeps only user.*), it
			// is not the policy refusing.
			_, err := mounts.GetXattr(ctx, g, "repo/.env", "security.capability")
			if errors.Is(err, mounts.ErrDenied) {
				return err
			}
			return nil
		}, nil},
		{"rdwr on read-denied", openFile("repo/.env", os.O_RDWR), mounts.ErrDenied},
		{"wronly on read-denied", openFile("repo/.env", os.O_WRONLY), nil},
		{"write denied", openFile("repo/src/a.go", os.O_WRONLY|os.O_TRUNC), mounts.ErrDenied},
		{"create denied", openFile("repo/src/b.go", os.O_WRONLY|os.O_CREATE), mounts.ErrDenied},
		{"create allowed", openFile("repo/src/b.txt", os.O_WRONLY|os.O_CREATE), nil},
		{"unlink denied", func(g mounts.FS) error { return mounts.Unlink(ctx, g, "repo/src/a.go") }, mounts.ErrDenied},
		{"chmod denied", func(g mounts.FS) error { return mounts.Chmod(ctx, g, "repo/src/a.go", 0o600) }, mounts.ErrDenied},
		{"truncate denied", func(g mounts.FS) error { return mounts.Truncate(ctx, g, "repo/src/a.go", 0) }, mounts.ErrDenied},
		{"rename onto denied", func(g mounts.FS) error { return mounts.Rename(ctx, g, "memory/note", "repo/src/n.go", 0) }, mounts.ErrDenied},
		{"rename read-denied out", func(g mounts.FS) error { return mounts.Rename(ctx, g, "repo/.env", "repo/plain", 0) }, mounts.ErrDenied},
		{"rename read-denied to denied", func(g mounts.FS) error { return mounts.Rename(ctx, g, "repo/.env", "repo/b.env", 0) }, nil},
		{"link write-denied", func(g mounts.FS) error { return mounts.Link(ctx, g, "repo/src/a.go", "repo/alias") }, mounts.ErrDenied},
		{"link read-denied", func(g mounts.FS) error { return mounts.Link(ctx, g, "repo/secrets/key", "repo/k2") }, mounts.ErrDenied},
		{"mkdir under read-only", func(g mounts.FS) error { return mounts.Mkdir(ctx, g, "memory/ro/d", 0o755) }, mounts.ErrReadOnly},
		{"write under read-only", openFile("memory/ro/x", os.O_WRONLY), mounts.ErrReadOnly},
		{"remove read-only prefix", func(g mounts.FS) error { return mounts.Rmdir(ctx, g, "memory/ro") }, mounts.ErrReadOnly},
		{"rename out of read-only", func(g mounts.FS) error { return mounts.Rename(ctx, g, "memory/ro/x", "memory/x", 0) }, mounts.ErrReadOnly},
		{"read under read-only", open("memory/ro/x"), nil},
		{"sibling not read-only", func(g mounts.FS) error { return mounts.WriteFile(ctx, g, "memory/rox", []byte("y"), 0o644) }, nil},
		{"symlink name denied", func(g mounts.FS) error { return mounts.Symlink(ctx, g, "x", "repo/src/l.go") }, mounts.ErrDenied},
		{"mknod name denied", func(g mounts.FS) error {
			return mounts.Mknod(ctx, g, "repo/src/p.go", fs.ModeNamedPipe|0o644, 0)
		}, mounts.ErrDenied},
		{"mknod under read-only", func(g mounts.FS) error {
			return mounts.Mknod(ctx, g, "memory/ro/p", fs.ModeNamedPipe|0o644, 0)
		}, mounts.ErrReadOnly},
		{"setxattr under read-only", func(g mounts.FS) error { return mounts.SetXattr(ctx, g, "memory/ro/x", "user.a", nil, 0) }, mounts.ErrReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Guard(seeded(t), rs)
			err := tt.op(g)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			var pe *fs.PathError
			assert.ErrorAs(t, err, &pe, "every error is a *fs.PathError")
		})
	}
}

func names(ents []mounts.DirEntry) string {
	var b strings.Builder
	for _, e := range ents {
		b.WriteString(e.Name + " ")
	}
	return b.String()
}

func TestGuardCapabilities(t *testing.T) {
	m := memfs.New(memfs.Options{})
	all := mounts.Capabilities(m) &^ mounts.CapFreeze // a service's: no decorator forwards it
	tests := []struct {
		name  string
		fsys  mounts.FS
		rules Rules
		want  mounts.Capability
	}{
		{"no rules", m, Rules{}, all},
		{"some read-only", m, Rules{ReadOnly: []string{"/memory"}}, all},
		{"all read-only", m, Rules{ReadOnly: []string{"/"}}, all &^ mounts.CapMutating},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Compile(tt.rules)
			require.NoError(t, err)
			assert.Equal(t, tt.want, mounts.Capabilities(Guard(tt.fsys, rs)))
		})
	}
	// Freeze keeps reporting what it wraps: the dry-run tool list.
	assert.Equal(t, all, mounts.Capabilities(Freeze(m)))
	err := mounts.WriteFile(context.Background(), Freeze(m), "x", []byte("y"), 0o644)
	assert.ErrorIs(t, err, mounts.ErrReadOnly)
	_, err = m.Stat(context.Background(), "x")
	assert.ErrorIs(t, err, fs.ErrNotExist, "a frozen tree changes nothing")
}

// pagesFS offers pages when the test says so.
type pagesFS struct {
	*memfs.FS
	sink mounts.PageSink
}

func (p *pagesFS) OfferPages(sink mounts.PageSink) bool { p.sink = sink; return true }

// TestGuardDropsDeniedPages: a page read ahead of a denied file never
// passes the guard (it would land in the kernel's page cache), the rest
// does, and neither a read_only prefix nor Freeze stops a read.
func TestGuardDropsDeniedPages(t *testing.T) {
	rs, err := Compile(Rules{DenyRead: []string{"*.env", "/secrets/"}, ReadOnly: []string{"/frozen"}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		wrap func(mounts.FS) mounts.FS
		want []string
	}{
		{"Guard", func(f mounts.FS) mounts.FS { return Guard(f, rs) }, []string{"a.go", "frozen/b"}},
		{"Freeze", Freeze, []string{"a.go", "prod.env", "secrets/key", "frozen/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &pagesFS{FS: memfs.New(memfs.Options{})}
			var got []string
			require.True(t, mounts.OfferPages(tc.wrap(inner), func(name string, _ []byte) { got = append(got, name) }))
			for _, name := range []string{"a.go", "prod.env", "secrets/key", "frozen/b"} {
				inner.sink(name, []byte("x"))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestRulesSayWhatTheyDeny: a service asks before it pays for checks that
// cannot refuse.
func TestRulesSayWhatTheyDeny(t *testing.T) {
	for _, tt := range []struct {
		name          string
		rules         Rules
		reads, writes bool
	}{
		{"none", Rules{}, false, false},
		{"deny_read", Rules{DenyRead: []string{"*.env"}}, true, false},
		{"deny_write", Rules{DenyWrite: []string{"*.lock"}}, false, true},
		{"read_only", Rules{ReadOnly: []string{"/repo"}}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Compile(tt.rules)
			require.NoError(t, err)
			assert.Equal(t, tt.reads, rs.DeniesReads(), "reads")
			assert.Equal(t, tt.writes, rs.DeniesWrites(), "writes")
		})
	}
	var none *RuleSet
	assert.False(t, none.DeniesReads() || none.DeniesWrites(), "no rules deny nothing")
}
