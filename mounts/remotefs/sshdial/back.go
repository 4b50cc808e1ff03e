package sshdial

import (
	"crypto/rand"
	"encoding/hex"
	"net"
)

// BackSocket is a new path for a back link's socket on the remote
// machine, in a directory of its own that the peer makes (--back): the
// directory must not exist yet, so no one else's can be used.
func BackSocket() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "/tmp/vfsmount-back-" + hex.EncodeToString(b) + "/s"
}

// ListenBack listens on the remote machine at path, a Unix socket, over
// this connection (OpenSSH's streamlocal forwarding): what connects there
// reaches this process. Call it once the peer, given --back path, has
// started.
func (c *Client) ListenBack(path string) (net.Listener, error) {
	return c.ssh.ListenUnix(path)
}
