package agentbridge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
)

// TestDotDotAtRoot pins the one rule for ".." at the root, the POSIX one
// (/.. is /), for every verb that takes a path: in the path argument,
// absolute or relative, in a glob pattern, in an apply_patch path, and in
// the target of a symlink the path goes through. Each call names a path
// that climbs above the root and must act on the file under /memory.
func TestDotDotAtRoot(t *testing.T) {
	newW := func(t *testing.T) *Workspace {
		w := fixture(t, map[string]string{"/memory/a.txt": "alpha\n", "/memory/sub/b.txt": "beta\n"}, Options{})
		ctx := context.Background()
		// A relative target that climbs three levels from /memory,
		// and an absolute one that starts above the root.
		require.NoError(t, mounts.Symlink(ctx, w.fsys, "../../../memory/sub", "memory/up"))
		require.NoError(t, mounts.Symlink(ctx, w.fsys, "/../../memory/a.txt", "memory/abs"))
		return w
	}
	type step struct {
		tool string
		args obj
		want string
	}
	tests := []struct {
		verb  string
		steps []step
	}{
		{"read", []step{
			{"read", obj{"path": "/../memory/a.txt"}, "     1\talpha\n"},
			{"read", obj{"path": "/../../memory/../../memory/a.txt"}, "     1\talpha\n"},
			{"read", obj{"path": "../memory/a.txt"}, "     1\talpha\n"},
			{"read", obj{"path": "/memory/up/b.txt"}, "     1\tbeta\n"},
			{"read", obj{"path": "/memory/abs"}, "     1\talpha\n"},
		}},
		{"ls", []step{
			{"ls", obj{"depth": 1, "path": "/.."}, "memory/  [memory, writable]\nrepo/  [git@1a2b3c4, read-only]\n"},
			{"ls", obj{"depth": 1, "path": "/../memory/sub"}, "b.txt\n"},
			{"ls", obj{"depth": 1, "path": "../../memory/sub"}, "b.txt\n"},
			{"ls", obj{"depth": 1, "path": "/memory/up"}, "b.txt\n"},
		}},
		{"glob", []step{
			{"glob", obj{"pattern": "memory/*.txt", "path": "/.."}, "/memory/a.txt\n"},
			{"glob", obj{"pattern": "/../memory/sub/*.txt"}, "/memory/sub/b.txt\n"},
			{"glob", obj{"pattern": "../../memory/sub/*.txt", "path": "/memory"}, "/memory/sub/b.txt\n"},
			{"glob", obj{"pattern": "*.txt", "path": "/memory/up"}, "/memory/up/b.txt\n"},
		}},
		{"grep", []step{
			{"grep", obj{"outputMode": "files_with_matches", "sort": "path", "sortAscending": true, "pattern": "alpha", "path": "/../memory"}, "/memory/a.txt\n"},
			{"grep", obj{"outputMode": "files_with_matches", "sort": "path", "sortAscending": true, "pattern": "alpha", "path": "../memory/a.txt"}, "/memory/a.txt\n"},
			{"grep", obj{"outputMode": "files_with_matches", "sort": "path", "sortAscending": true, "pattern": "beta", "path": "/memory/up"}, "/memory/up/b.txt\n"},
			{"grep", obj{"sort": "path", "sortAscending": true, "pattern": "alpha", "path": "/memory/abs", "outputMode": "count"}, "/memory/abs:1\n"},
		}},
		{"write", []step{
			{"write", obj{"path": "/../memory/new.txt", "fileText": "new"}, "created /memory/new.txt (3 bytes)"},
			{"write", obj{"path": "../../memory/new.txt", "fileText": "again"}, "overwrote /memory/new.txt (5 bytes)"},
			{"write", obj{"path": "/memory/up/c.txt", "fileText": "c"}, "created /memory/up/c.txt (1 bytes)"},
			{"read", obj{"path": "/memory/sub/c.txt"}, "     1\tc\n"},
		}},
		{"edit", []step{
			{"edit", obj{"path": "/../memory/a.txt", "oldText": "alpha", "newText": "ALPHA"}, "edited /memory/a.txt (1 change)\n     1\tALPHA\n"},
			{"edit", obj{"path": "/memory/abs", "oldText": "ALPHA", "newText": "Alpha"}, "edited /memory/abs (1 change)\n     1\tAlpha\n"},
			{"edit", obj{"patchContent": "*** Begin Patch\n*** Update File: ../../memory/sub/b.txt\n-beta\n+BETA\n*** End Patch"}, "applied patch:\nM /memory/sub/b.txt\n"},
			{"read", obj{"path": "/memory/a.txt"}, "     1\tAlpha\n"},
			{"read", obj{"path": "/memory/sub/b.txt"}, "     1\tBETA\n"},
		}},
		{"delete", []step{
			{"delete", obj{"path": "/../memory/a.txt"}, "deleted /memory/a.txt"},
			{"delete", obj{"path": "../../memory/up/b.txt"}, "deleted /memory/up/b.txt"},
			{"ls", obj{"depth": 1, "path": "/memory"}, "abs -> /../../memory/a.txt\nsub/\nup -> ../../../memory/sub\n"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.verb, func(t *testing.T) {
			w := newW(t)
			for _, s := range tc.steps {
				assert.Equal(t, s.want, ok(t, w, s.tool, s.args), "%s %v", s.tool, s.args)
			}
		})
	}
	t.Run("the root itself", func(t *testing.T) {
		w := newW(t)
		assert.Equal(t, "read /: is a directory; use ls to list it", fail(t, w, "read", obj{"path": "/memory/../.."}))
		assert.Equal(t, "delete /: it is the workspace root and cannot be deleted; delete entries inside it instead", fail(t, w, "delete", obj{"path": "/.."}))
		assert.Equal(t, "write /: is a directory; give a file path", fail(t, w, "write", obj{"path": "/../..", "fileText": "x"}))
		assert.Equal(t, "edit /: is a directory; give a file path", fail(t, w, "edit", obj{"path": "..", "oldText": "a", "newText": "b"}))
	})
}
