package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// git's fsmonitor hook (core.fsmonitor, hook protocol version 2) for the
// .git of a writable git mount: git runs "vfsmount fsmonitor SOCKET 2
// TOKEN" in the checkout, and the command asks the vfsmount serving that
// mount, over SOCKET, which paths changed since TOKEN. The daemon answers
// from the overlay's change journal, which every change through the
// overlay bumps, so git stats only what changed instead of every file.
//
// The socket is one per writable git mount and per run, in the control
// socket directory (package workspace serves it): fsm-PID-N.sock. The mount's
// .git/vfsmount.config names it, and is rewritten at every start. The shell
// tool binds the socket and this binary at the same paths in its namespace,
// so the hook works there as on the workstation.
//
// The wire protocol is the hook's own: the client sends "VERSION\nTOKEN\n";
// the server answers the bytes git wants on the hook's stdout — the next
// token, NUL, then each changed path and NUL, or "/" NUL when it cannot tell
// (a token of another run, or older than what the journal remembers) —
// and closes. Anything else (version 1, a daemon gone) is an error: git then
// checks every file, which is slow but correct.

func fsmonitorCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "fsmonitor SOCKET VERSION TOKEN",
		Short: "git's fsmonitor hook for a writable git mount (run by git, not by hand)",
		Long: `Answers git's fsmonitor hook (protocol version 2) for the .git of a writable
git mount: prints the paths changed since TOKEN, as told by the vfsmount
serving the mount over SOCKET. The mount's .git/vfsmount.config sets it as
core.fsmonitor; git appends VERSION and TOKEN. Exit 1 when the daemon cannot
answer: git then checks every file itself.`,
		Example: `  $ vfsmount fsmonitor /run/user/1000/vfsmount/fsm-4242-1.sock 2 vfsmount:7f3a9c01d2e4:17 | tr '\0' '\n'
  vfsmount:7f3a9c01d2e4:23
  src/main.go
  $ git -c core.fsmonitor= status   # git without the hook`,
		Args:              exactArgs(3),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			ans, err := queryFSMonitor(cmd.Context(), args[0], args[1], args[2])
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			_, err = cmd.OutOrStdout().Write(ans)
			return err
		},
	}
}

// queryFSMonitor asks the daemon on sock what changed since token.
func queryFSMonitor(ctx context.Context, sock, version, token string) ([]byte, error) {
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
	if i := strings.IndexByte(string(ans), 0); i <= 0 {
		return nil, errors.New("fsmonitor: the daemon sent no token")
	}
	return ans, nil
}
