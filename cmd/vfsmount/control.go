package main

import (
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/workspace"
)

// The control socket (package workspace serves it, at
// workspace.ControlPath of the mountpoint) is how vfsmount diff, commit,
// reset and checkpoint reach the vfsmount serving a mountpoint.

// dialControl connects to the vfsmount serving mountpoint.
func dialControl(mountpoint string) (*jsonrpc.Client, error) {
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, usageErrorf("mountpoint %s: %v", mountpoint, err)
	}
	sock, err := workspace.ControlPath(abs)
	if err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, &exitError{code: exitFailure, err: fmt.Errorf(
			"%s: no vfsmount serves it (no answer on %s)", mountpoint, sock)}
	}
	return jsonrpc.NewClient(c), nil
}
