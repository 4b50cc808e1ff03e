package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

// Over ssh, a command that runs on the remote machine sees the rest of
// the workspace at its paths too: /host (a directory of this machine) is
// mounted there, served back over the same ssh connection, readable and
// writable; a write there is in this machine's directory.
func TestE2ERemoteShowsTheRestOfTheWorkspace(t *testing.T) {
	fusetest.Need(t)
	sshd := testutil.StartSSHD(t, "PEER_SIDE=ssh-remote")
	dir := remoteDir(t)
	here := t.TempDir()
	testutil.WriteFiles(t, here, map[string]string{"daemon.txt": "on the daemon's machine\n"})
	spec := fmt.Sprintf("type=remote,src=ssh://root@127.0.0.1:%d%s,dst=/workspace,identity=%s,known_hosts=%s",
		sshd.Port, dir, sshd.UserKey, sshd.KnownHosts)
	args := []string{"--mount", "type=host,src=" + here + ",dst=/host", "--mount", spec}

	code, out, stderr := runBinary(t, append(append([]string{"call"}, args...), "shell",
		`{"command":"echo side=$PEER_SIDE; cat /host/daemon.txt; echo from the remote > /host/remote.txt; ls /workspace","cwd":"/workspace"}`)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "side=ssh-remote\n", "the command ran on the remote side")
	assert.Contains(t, out, "on the daemon's machine\n", "it read /host, served back from here")
	assert.Contains(t, out, dirNames(t, dir)+"\n")
	b, err := os.ReadFile(filepath.Join(here, "remote.txt"))
	require.NoError(t, err, "its write to /host is in this machine's directory")
	assert.Equal(t, "from the remote\n", string(b))

}
