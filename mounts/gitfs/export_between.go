package gitfs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// DiffFrom writes the difference from tree from to t, both written by
// [FS.WriteTree] of the same mount, in format and limited to paths (names
// in the mount; none means all), renames detected: what changed between
// two states of a writable mount (two checkpoints, or one and now). Names
// are the repository's, as in [Tree.Diff]. Empty output means no change.
func (t *Tree) DiffFrom(ctx context.Context, from *Tree, format DiffFormat, paths []string) (string, error) {
	if from.f != t.f {
		return "", fmt.Errorf("gitfs: diff of trees of two mounts")
	}
	// Objects of a tree written without keep live in its own directory:
	// let git find from's through t's alternates.
	const alt = "GIT_ALTERNATE_OBJECT_DIRECTORIES="
	env := make([]string, 0, len(t.env)+1)
	found := false
	for _, e := range t.env {
		if v, ok := strings.CutPrefix(e, alt); ok {
			e, found = alt+v+string(filepath.ListSeparator)+filepath.Join(from.tmp, "objects"), true
		}
		env = append(env, e)
	}
	if !found {
		env = append(env, alt+filepath.Join(from.tmp, "objects"))
	}
	args := []string{"diff-tree", "-r", "-M", "--no-color"}
	switch format {
	case Stat:
		args = append(args, "--stat")
	case NameStatus:
		args = append(args, "--name-status")
	default:
		args = append(args, "-p", "--binary", "--full-index")
	}
	args = append(args, from.ID, t.ID, "--")
	for _, p := range paths {
		args = append(args, t.f.full(p))
	}
	return t.gitEnv(ctx, env, nil, args...)
}
