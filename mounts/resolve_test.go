package mounts_test

import (
	"context"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vfsmount/vfsmount/mounts"
)

// TestResolveRooted: the tool face's reading of symlinks, where the mount
// is the root of a namespace: absolute targets are paths from the root and
// ".." stops there; Lstat leaves the last link alone; AllowMissing gives
// the name a writer would create. TestIOFSResolve covers the confined
// reading.
func TestResolveRooted(t *testing.T) {
	ctx := context.Background()
	m := linkTree(t)
	rooted := mounts.ResolveOptions{Rooted: true}
	for _, tc := range []struct {
		name string
		opts mounts.ResolveOptions
		want string
		err  error
	}{
		{"abs", rooted, "a.txt", nil},
		{"dir/deep", rooted, "", fs.ErrNotExist}, // /dir/sub/../../../x is /x
		{"dirlink/sublink/c.txt", rooted, "dir/sub/c.txt", nil},
		{"viadir", rooted, "dir/b.txt", nil},
		{"rel", mounts.ResolveOptions{Rooted: true, Lstat: true}, "rel", nil},
		{"dirlink/new/file", mounts.ResolveOptions{Rooted: true, AllowMissing: true}, "dir/new/file", nil},
		{"loop1", rooted, "", mounts.ErrLoop},
		{"a.txt/x", rooted, "", mounts.ErrNotDir},
		{"abs", mounts.ResolveOptions{}, "", mounts.ErrEscapes},
	} {
		r, err := mounts.Resolve(ctx, m, tc.name, tc.opts)
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, "%s %+v", tc.name, tc.opts)
			continue
		}
		if assert.NoError(t, err, "%s %+v", tc.name, tc.opts) {
			assert.Equal(t, tc.want, r.Name, "%s %+v", tc.name, tc.opts)
			assert.Equal(t, !tc.opts.AllowMissing, r.Exists, "%s %+v", tc.name, tc.opts)
		}
	}
}
