package fusefs

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChildrenDoNotInheritTheConnection: a program the serving process
// starts does not hold /dev/fuse, so it cannot keep a mount alive (and
// itself blocked on it) after the server is gone.
func TestChildrenDoNotInheritTheConnection(t *testing.T) {
	_, _ = mountMem(t)
	out, err := exec.Command("sh", "-c", `for f in /proc/$$/fd/*; do readlink "$f"; done; true`).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "/dev/fuse")
}
