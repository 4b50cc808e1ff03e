package policy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// TestDecoratorsForwardEveryCapability: each decorator offers exactly what
// it wraps, whatever that is. The rules given to Guard match none of the
// names mountstest.RunWrapper uses, but directory-only patterns make it
// Stat as it checks.
func TestDecoratorsForwardEveryCapability(t *testing.T) {
	rs, err := Compile(Rules{DenyRead: []string{"*.env", "/secrets/"}, DenyWrite: []string{"build/"}, ReadOnly: []string{"/frozen"}})
	require.NoError(t, err)
	t.Run("Guard", func(t *testing.T) {
		mountstest.RunWrapper(t, func(f mounts.FS) mounts.FS { return Guard(f, rs) })
	})
	t.Run("GuardNoRules", func(t *testing.T) {
		mountstest.RunWrapper(t, func(f mounts.FS) mounts.FS { return Guard(f, nil) })
	})
	t.Run("Freeze", func(t *testing.T) {
		mountstest.RunWrapper(t, Freeze, mountstest.Refuses(mounts.CapMutating, mounts.ErrReadOnly))
	})
	t.Run("Audit", func(t *testing.T) {
		l, path := newLog(t, AuditOptions{})
		mountstest.RunWrapper(t, func(f mounts.FS) mounts.FS { return Audit(f, l) }, mountstest.HidesFd())
		require.NoError(t, l.Close())
		assert.NotEmpty(t, readLog(t, path), "the forwarded changes were logged")
	})
}

// TestGuardCorrectsTheMountTable: a mount a read_only prefix covers is
// read-only in the table the guard answers, and the table passes through
// the other decorators as it is.
func TestGuardCorrectsTheMountTable(t *testing.T) {
	mem, notes := memfs.New(memfs.Options{}), memfs.New(memfs.Options{})
	tree := tableOf{
		{Prefix: "/memory", Description: mounts.Describe(mem), Writable: true, Caps: mounts.Capabilities(mem)},
		{Prefix: "/memory/notes", Description: mounts.Describe(notes), Writable: true, Caps: mounts.Capabilities(notes)},
		{Prefix: "/repo", Description: mounts.Description{Type: "git", Source: "git@1a2b3c4", Immutable: true}},
	}
	all := mounts.Capabilities(mem)
	tests := []struct {
		name     string
		readOnly []string
		writable []bool
	}{
		{"no rule", nil, []bool{true, true, false}},
		{"a mount point", []string{"/memory/notes"}, []bool{true, false, false}},
		{"a parent covers what is below", []string{"/memory"}, []bool{false, false, false}},
		{"inside a mount is not all of it", []string{"/memory/drafts"}, []bool{true, true, false}},
		{"everything", []string{"/"}, []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Compile(Rules{ReadOnly: tt.readOnly})
			require.NoError(t, err)
			l, _ := newLog(t, AuditOptions{})
			got := mounts.Mounts(mounts.Observe(Audit(Guard(tree, rs), l), func(...string) {}))
			require.Len(t, got, len(tree))
			for i, m := range got {
				assert.Equal(t, tree[i].Prefix, m.Prefix)
				assert.Equal(t, tree[i].Description, m.Description, "%s: the description is the mount's", m.Prefix)
				assert.Equal(t, tt.writable[i], m.Writable, "%s: writable", m.Prefix)
				wantCaps := tree[i].Caps
				if !tt.writable[i] {
					wantCaps &^= mounts.CapMutating
				}
				assert.Equal(t, wantCaps, m.Caps, "%s: capabilities", m.Prefix)
			}
		})
	}
	assert.True(t, tree[0].Writable, "the guard corrects a copy, not the tree's table")
	assert.Equal(t, all, tree[0].Caps)
	assert.Equal(t, mounts.Mounts(tree), mounts.Mounts(Freeze(tree)), "a dry run describes the mounts as they are")
}

// tableOf is a tree that answers a mount table and nothing else: an empty
// directory.
type tableOf []mounts.MountInfo

func (t tableOf) Mounts() []mounts.MountInfo { return t }

func (tableOf) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	return memfs.New(memfs.Options{}).Stat(ctx, name)
}

func (tableOf) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	return memfs.New(memfs.Options{}).ReadDir(ctx, name)
}

func (tableOf) Open(ctx context.Context, name string) (mounts.File, error) {
	return memfs.New(memfs.Options{}).Open(ctx, name)
}

func (tableOf) ReadLink(ctx context.Context, name string) (string, error) {
	return memfs.New(memfs.Options{}).ReadLink(ctx, name)
}
