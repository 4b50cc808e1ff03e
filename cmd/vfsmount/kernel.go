package main

import (
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// immutableRoots are the directories the kernel face serves on connections
// of their own (fusefs.Options.ImmutableRoots): the mount points of
// immutable mounts with no other mount below them, or "." when every
// mount is immutable.
func (ws *workspace) immutableRoots() []string {
	var roots []string
	all := true
	for _, m := range ws.Mounts() {
		name := strings.TrimPrefix(m.Prefix, "/")
		if name == "" {
			name = "."
		}
		if !mounts.DescribeAt(ws.FS, name).Immutable {
			all = false
			continue
		}
		nested := false
		for _, o := range ws.Mounts() {
			if o.Prefix != m.Prefix && (m.Prefix == "/" || strings.HasPrefix(o.Prefix, m.Prefix+"/")) {
				nested = true
			}
		}
		if !nested && name != "." {
			roots = append(roots, name)
		}
	}
	if all && len(ws.Mounts()) > 0 {
		return []string{"."}
	}
	return roots
}
