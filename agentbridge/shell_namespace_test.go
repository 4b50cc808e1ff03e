package agentbridge

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShellBinds(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	objects := filepath.Join(dir, "objects")
	assert.NoError(t, os.WriteFile(sock, nil, 0o600))
	assert.NoError(t, os.Mkdir(objects, 0o755))
	r := &shellRunner{opts: ShellOptions{Mountpoint: "/mnt", Binds: []ShellBind{
		{Path: objects}, {Path: sock, Writable: true}, {Path: filepath.Join(dir, "missing")}, {Path: "relative"},
	}}, sh: "/bin/sh"}
	a := r.argv([]string{"repo"}, "/repo", []string{"true"}, true)
	at := func(s ...string) int {
		for i := range a {
			if i+len(s) <= len(a) && slices.Equal(a[i:i+len(s)], s) {
				return i
			}
		}
		return -1
	}
	ro, rw, tmp := at("--ro-bind", objects, objects), at("--bind", sock, sock), at("--tmpfs", "/tmp")
	assert.Positive(t, ro, "the objects are bound read-only at their path: %q", a)
	assert.Positive(t, rw, "the socket is bound at its path: %q", a)
	assert.Greater(t, ro, tmp, "after /tmp, so a path below it shows")
	assert.Equal(t, -1, at(filepath.Join(dir, "missing")), "a missing path is left out")
	assert.NotContains(t, a, "relative")
}
