package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2EPassthroughFlag: mount serves host files by FUSE passthrough unless
// --no-passthrough says otherwise, logs which once, and data written
// through the mount lands in the host directory either way.
func TestE2EPassthroughFlag(t *testing.T) {
	active := `msg="fusefs: passthrough active for host files"`
	if os.Geteuid() != 0 {
		active = `msg="fusefs: passthrough unavailable`
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantLog string
	}{
		{"default", nil, active},
		{"disabled", []string{"--no-passthrough"}, `msg="fusefs: passthrough off (disabled by option)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dir := t.TempDir(), t.TempDir()
			c := startMount(t, dir, append([]string{"--mount", "type=host,src=" + src + ",dst=/host"}, tc.args...)...)
			data := []byte("through the mount\n")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "host", "f"), data, 0o644))
			got, err := os.ReadFile(filepath.Join(src, "f"))
			require.NoError(t, err)
			assert.Equal(t, data, got)
			require.NoError(t, c.cmd.Process.Signal(syscall.SIGINT))
			require.Equal(t, 0, c.exitCode(t, 15*time.Second))
			assert.Contains(t, c.stderr.String(), tc.wantLog)
		})
	}
}
