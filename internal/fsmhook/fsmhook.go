// Package fsmhook is the client side of git's fsmonitor hook for a
// writable git mount: it asks the vfsmount serving the mount, over the
// mount's socket, what changed since a token (package workspace serves
// it). Both `vfsmount fsmonitor` and the small vfsmount-fsmonitor program
// use it; it imports the standard library alone, so that program starts
// in a fraction of vfsmount's time, which git pays at every status.
//
// The wire protocol is the hook's own: the client sends "VERSION\nTOKEN\n";
// the server answers the bytes git wants on the hook's stdout — the next
// token, NUL, then each changed path and NUL, or "/" NUL when it cannot
// tell (a token of another run, or older than what the journal remembers)
// — and closes. Anything else (version 1, a daemon gone) is an error: git
// then checks every file, which is slow but correct.
package fsmhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// Query asks the daemon on sock what changed since token, in hook protocol
// version; it returns what the hook prints.
func Query(ctx context.Context, sock, version, token string) ([]byte, error) {
	if version != "2" {
		return nil, fmt.Errorf("fsmonitor: hook protocol version %s: only version 2 is served (set core.fsmonitorHookVersion=2)", version)
	}
	if strings.ContainsAny(token, "\n\x00") {
		return nil, errors.New("fsmonitor: bad token")
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("fsmonitor: no vfsmount answers on %s: %w", sock, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, version+"\n"+token+"\n"); err != nil {
		return nil, fmt.Errorf("fsmonitor: %w", err)
	}
	ans, err := io.ReadAll(c)
	if err != nil {
		return nil, fmt.Errorf("fsmonitor: %w", err)
	}
	if i := bytes.IndexByte(ans, 0); i <= 0 {
		return nil, errors.New("fsmonitor: the daemon sent no token")
	}
	return ans, nil
}
