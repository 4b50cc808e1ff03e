package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
)

func callCommand(a *app) *cobra.Command {
	var bf bridgeFlags
	var server string
	cmd := &cobra.Command{
		Use:   "call [--server ADDR | --config FILE | --mount SPEC...] [--dialect D] [--dry-run] TOOL JSON",
		Short: "call one tool of the workspace and print its result",
		Long: `Calls TOOL with the JSON object of arguments and prints the result. The exit
status is 0 for a result, 1 when the result is a tool error (the message is
printed all the same), 2 for a usage error.

With --server ADDR (unix:PATH or tcp:HOST:PORT) the call goes to a running
"vfsmount serve". Otherwise the workspace is built for this one call, with a
private kernel mount when the tool is the shell or readLints (in a mount
namespace of its own, as root).

With --dry-run the workspace changes nothing: a read-only tool runs, an
effectful one reports what it would do (write: the size and whether it
creates; edit and apply_patch: the unified diff; delete: what it would
remove; shell: the command, not run). With --server, where the server's
workspace is not in a dry run, --dry-run only checks the call (the tool
exists, the arguments are a JSON object) and runs it if it is read-only.`,
		Example: `  $ vfsmount call --mount type=memory,dst=/memory write '{"path": "/memory/a.txt", "fileText": "hi"}'
  created /memory/a.txt (2 bytes)`,
		Args:              exactArgs(2),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, fs := cmd.Context(), cmd.Flags()
			tool, raw := args[0], json.RawMessage(args[1])
			dryRun := bf.ws.Policy.DryRun
			if server != "" {
				if fs.Changed("config") || fs.Changed("mount") || fs.Changed("tools") {
					return usageErrorf("call: --server uses the server's workspace; drop --config, --mount and --tools")
				}
				for _, f := range []string{"audit", "deny-read", "deny-write", "read-only", "approval", "approval-on", "approval-timeout"} {
					if fs.Changed(f) {
						return usageErrorf("call: --server uses the server's policy; drop --%s", f)
					}
				}
				return callRemote(ctx, a, server, bf.dialect, tool, raw, dryRun)
			}
			return callLocal(ctx, a, &bf, tool, raw)
		},
	}
	bf.register(cmd.Flags(), true)
	cmd.Flags().StringVar(&server, "server", "", "call a running vfsmount serve at `ADDR` (unix:PATH or tcp:HOST:PORT)")
	return cmd
}

// printResult prints a result and maps a tool error to exit status 1.
func printResult(a *app, res agentbridge.Result) error {
	fmt.Fprint(a.stdout, res.Text)
	if !strings.HasSuffix(res.Text, "\n") {
		fmt.Fprintln(a.stdout)
	}
	if res.IsError {
		return &exitError{code: exitFailure}
	}
	return nil
}

func callLocal(ctx context.Context, a *app, bf *bridgeFlags, tool string, raw json.RawMessage) error {
	mode, mountpoint := noKernel, ""
	if isShellTool(bf.dialect, tool) || tool == agentbridge.VerbReadLints {
		// The shell's kernel face (readLints runs the linters in the
		// shell's namespace): in a mount namespace of this process's
		// own where it can be (ns_private.go).
		mode, mountpoint = privateKernel, privateMountpoint(a)
	}
	b, err := openBridge(ctx, a, bf, mode, mountpoint)
	if err != nil {
		return err
	}
	defer func() {
		if err := b.Close(); err != nil {
			a.logger.Warn("closing the workspace", "err", err)
		}
	}()
	// In a dry run the workspace itself reports instead of changing.
	return printResult(a, b.tools.Call(ctx, bf.dialect, tool, raw))
}

// dryRunResult runs the call only when the tool is read-only.
func dryRunResult(defs []agentbridge.ToolDef, tool string, raw json.RawMessage, run func() agentbridge.Result) agentbridge.Result {
	for _, d := range defs {
		if d.Name != tool {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return agentbridge.Result{Text: fmt.Sprintf("%s: arguments must be a JSON object", tool), IsError: true}
		}
		if d.Annotations.ReadOnly {
			return run()
		}
		return agentbridge.Result{Text: fmt.Sprintf("dry run: %s changes the workspace and was not run", tool)}
	}
	return agentbridge.Result{Text: fmt.Sprintf("unknown tool %q", tool), IsError: true}
}

// isShellTool reports whether tool is the shell verb in dialect.
func isShellTool(dialect, tool string) bool {
	return agentbridge.ShellTool(dialect, tool)
}

// dialServer connects to a serve address: unix:PATH or tcp:HOST:PORT.
func dialServer(ctx context.Context, addr string) (net.Conn, error) {
	network, where, ok := strings.Cut(addr, ":")
	if !ok || (network != "unix" && network != "tcp") || where == "" {
		return nil, usageErrorf("--server %q: want unix:PATH or tcp:HOST:PORT", addr)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, network, where)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return c, nil
}

func callRemote(ctx context.Context, a *app, server, dialect, tool string, raw json.RawMessage, dryRun bool) error {
	conn, err := dialServer(ctx, server)
	if err != nil {
		return err
	}
	c := jsonrpc.NewClient(conn)
	defer c.Close()
	call := func() agentbridge.Result {
		var res agentbridge.Result
		if err := c.Call(ctx, "tools.call", jsonrpc.ToolsCallParams{Name: tool, Arguments: raw, Dialect: dialect}, &res); err != nil {
			return agentbridge.Result{Text: fmt.Sprintf("call %s: %v", server, err), IsError: true}
		}
		return res
	}
	if dryRun {
		var list jsonrpc.ToolsListResult
		if err := c.Call(ctx, "tools.list", jsonrpc.ToolsListParams{Dialect: dialect}, &list); err != nil {
			return fmt.Errorf("call %s: %w", server, err)
		}
		return printResult(a, dryRunResult(list.Tools, tool, raw, call))
	}
	return printResult(a, call())
}
