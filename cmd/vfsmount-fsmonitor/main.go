// Command vfsmount-fsmonitor is git's fsmonitor hook for the .git of a
// writable git mount, as `vfsmount fsmonitor` is, in a program small
// enough to start in a fraction of vfsmount's time: git runs the hook at
// every status. vfsmount names it as the hook when it finds it beside its
// own binary (make build puts it there).
//
// Usage (git appends VERSION and TOKEN to what core.fsmonitor says):
//
//	vfsmount-fsmonitor SOCKET VERSION TOKEN
//
// It prints what the vfsmount serving the mount answers over SOCKET: the
// next token, NUL, and each path changed since TOKEN, NUL-terminated. Exit
// 1 when the daemon cannot answer (git then checks every file itself), 2
// on a usage error.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/vfsmount/vfsmount/internal/fsmhook"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: vfsmount-fsmonitor SOCKET VERSION TOKEN (git's fsmonitor hook for a vfsmount writable git mount; run by git)")
		os.Exit(2)
	}
	ans, err := fsmhook.Query(context.Background(), os.Args[1], os.Args[2], os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "vfsmount-fsmonitor:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(ans); err != nil {
		os.Exit(1)
	}
}
