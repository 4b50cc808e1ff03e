package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/workspace"
)

// statusStoreLong is the store section of vfsmount status's help.
const statusStoreLong = `

A workspace with an object store (mounted with --store or --resume, or a
store: section in its config) adds a section on it, from the daemon's
control socket:

  store: s3://BUCKET/PREFIX/NAME
    sync: 30s                    (absent: pushes on demand only)
    last push: s3://BUCKET/PREFIX/NAME@SEQ (ID) at TIME (AGO ago)
    unpushed changes: yes|no     (changed since the last push; yes before
                                 this daemon's first push, after a resume too)
    behind: yes|no
    failing since: TIME (AGO ago, N failed pushes)
    last error: ...
    pushing since: TIME (AGO ago)  (a push in progress, retrying perhaps)
    fenced: yes|no

behind is yes while pushes fail (the store unreachable, say: the sync loop
tries again every interval, and the workspace works on locally) or have
stopped: fenced is yes once another daemon took the workspace over
(--take-over), and this one pushes no more. A store that is behind does
not change the exit code: the mount is live. The same is JSON-RPC
store.status on the control socket.`

// statusStoreTimeout bounds the question to the daemon: status answers a
// readiness probe, and must not hang on it.
const statusStoreTimeout = 3 * time.Second

// printStoreStatus prints the store section of the workspace served at
// mountpoint (abs), when it has a store; nothing when it has none or no
// control socket answers (a workspace mounted by another program).
func printStoreStatus(ctx context.Context, w io.Writer, abs string) {
	st, ok := storeStatus(ctx, abs)
	if !ok {
		return
	}
	now := time.Now()
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	ago := func(t time.Time) string {
		return t.UTC().Format(time.RFC3339) + " (" + now.Sub(t).Round(time.Second).String() + " ago"
	}
	fmt.Fprintf(w, "store: %s\n", st.URL)
	if st.Sync != "" {
		fmt.Fprintf(w, "  sync: %s\n", st.Sync)
	}
	if p := st.LastPush; p != nil {
		fmt.Fprintf(w, "  last push: %s (%s) at %s)\n", p.URL, p.ID, ago(p.Time))
	} else {
		fmt.Fprintf(w, "  last push: none\n")
	}
	fmt.Fprintf(w, "  unpushed changes: %s\n", yes(st.Unpushed))
	fmt.Fprintf(w, "  behind: %s\n", yes(st.Behind))
	if st.FailingSince != nil {
		fmt.Fprintf(w, "  failing since: %s, %d failed pushes)\n", ago(*st.FailingSince), st.Failures)
		fmt.Fprintf(w, "  last error: %s\n", st.LastError)
	}
	if st.PushingSince != nil {
		fmt.Fprintf(w, "  pushing since: %s)\n", ago(*st.PushingSince))
	}
	fmt.Fprintf(w, "  fenced: %s\n", yes(st.Fenced))
	if st.Fenced {
		fmt.Fprintf(w, "  fenced by: %s\n", st.Why)
	}
}

// storeStatus asks the daemon serving abs for store.status; false when
// it has no store or does not answer.
func storeStatus(ctx context.Context, abs string) (jsonrpc.StoreStatusResult, bool) {
	var st jsonrpc.StoreStatusResult
	sock, err := workspace.ControlPath(filepath.Clean(abs))
	if err != nil {
		return st, false
	}
	conn, err := net.DialTimeout("unix", sock, statusStoreTimeout)
	if err != nil {
		return st, false
	}
	c := jsonrpc.NewClient(conn)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, statusStoreTimeout)
	defer cancel()
	if err := c.Call(ctx, "store.status", nil, &st); err != nil {
		return st, false // no store (invalid params), or no answer
	}
	return st, true
}
