package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
)

func serveCommand(a *app) *cobra.Command {
	var bf bridgeFlags
	var listen, mountpoint string
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--mount SPEC]... --listen unix:PATH|tcp:127.0.0.1:PORT|stdio [--mountpoint DIR]",
		Short: "serve the workspace's tools over JSON-RPC, with its kernel face",
		Long: `Builds one workspace, mounts its kernel face at --mountpoint (or, for the
shell tool, in a mount namespace of its own: as root, no one else sees it and
it goes with the process however that ends) and serves JSON-RPC 2.0, one
JSON message per line, on --listen: a unix socket, a TCP address, or stdio.
Methods:
  tools.list      {dialect?}                   -> {tools: [...]}
  tools.call      {name, arguments?, dialect?} -> {text, isError?}
  workspace.brief {}                           -> {brief}
Calls run concurrently. At the end of stdin (--listen stdio) the requests
already read are answered first, within 30 s. SIGINT or SIGTERM stops
serving, unmounts and exits 0. A stale mount at --mountpoint (left by a
killed server) is cleared.`,
		Example: `  $ vfsmount serve --mount type=memory,dst=/memory --listen unix:/tmp/ws.sock &
  $ vfsmount call --server unix:/tmp/ws.sock ls '{"path": "/"}'
  memory/  [memory, writable]`,
		Args:              exactArgs(0),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), a, &bf, listen, mountpoint)
		},
	}
	bf.register(cmd.Flags(), false)
	cmd.Flags().StringVar(&listen, "listen", "", "where to serve: `ADDR` unix:PATH, tcp:HOST:PORT or stdio (required)")
	cmd.Flags().StringVar(&mountpoint, "mountpoint", "", "serve the kernel face at `DIR` (default: a private temporary directory)")
	return cmd
}

func runServe(ctx context.Context, a *app, bf *bridgeFlags, listen, mountpoint string) (err error) {
	if listen == "" {
		return usageErrorf("serve: --listen is required (unix:PATH, tcp:HOST:PORT or stdio)")
	}
	network, where, _ := strings.Cut(listen, ":")
	if listen != "stdio" && ((network != "unix" && network != "tcp") || where == "") {
		return usageErrorf("serve: --listen %q: want unix:PATH, tcp:HOST:PORT or stdio", listen)
	}
	if network == "tcp" {
		host, _, err := net.SplitHostPort(where)
		if err != nil {
			return usageErrorf("serve: --listen %q: %v", listen, err)
		}
		// The JSON-RPC face has no authentication and offers a shell:
		// it is for this machine only.
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return usageErrorf("serve: --listen %q: only loopback addresses (127.0.0.1, ::1, localhost) are allowed; the JSON-RPC face has no authentication", listen)
		}
	}
	if mountpoint == "" {
		// The kernel face is the shell's alone: in a mount namespace of
		// this process's own where it can be (ns_private.go).
		mountpoint = privateMountpoint(a)
	}
	b, err := openBridge(ctx, a, bf, privateKernel, mountpoint)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	rpc := jsonrpc.NewServer(b.tools, a.logger)
	if b.ws.Export != nil {
		// A harness hands the agent's work back over the same connection.
		rpc.SetExporter(b.ws.Export)
	}
	if b.ws.Checkpoints != nil {
		// And rewinds it.
		rpc.SetCheckpointer(b.ws.Checkpoints)
	}
	if listen == "stdio" {
		a.logger.Info("serving JSON-RPC on stdio", "mountpoint", b.srv.Mountpoint())
		if err := rpc.ServeStream(ctx, os.Stdin, a.stdout); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	if network == "unix" {
		removeStaleSocket(where)
	}
	l, err := net.Listen(network, where)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("listen on %s: %w", listen, err)}
	}
	if network == "unix" {
		defer os.Remove(where)
	}
	a.logger.Info("serving JSON-RPC", "listen", listen, "mountpoint", b.srv.Mountpoint())
	if err := rpc.ServeListener(ctx, l); err != nil {
		return err
	}
	a.logger.Info("stopping", "why", context.Cause(ctx).Error())
	return nil
}

// removeStaleSocket removes a unix socket nobody listens on, left by a
// crashed server; a live one is left alone (listen then fails with
// EADDRINUSE, naming the address).
func removeStaleSocket(path string) {
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 {
		return
	}
	c, err := net.Dial("unix", path)
	if err == nil {
		c.Close()
		return
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		os.Remove(path)
	}
}
