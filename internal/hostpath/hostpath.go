// Package hostpath holds what the CLI and the workspace both ask of host
// paths.
package hostpath

import "path/filepath"

// Real resolves the symlinks of p, or of its longest existing parent when
// p does not exist (yet): the path two names of one place share.
func Real(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if dir := filepath.Dir(p); dir != p {
		return filepath.Join(Real(dir), filepath.Base(p))
	}
	return p
}
