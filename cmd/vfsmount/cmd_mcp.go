package main

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/agentbridge/mcpserver"
)

func mcpCommand() *command {
	return &command{
		Name:    "mcp",
		Summary: "serve the workspace's tools as an MCP server over stdio",
		Usage:   "[--config FILE] [--mount SPEC]... [--dialect D]",
		Help: `Builds one workspace, mounts its kernel face at a private temporary directory
(for the shell tool) and serves its tools over MCP on stdin/stdout, in the
dialect's names. The tool annotations say which tools are read-only,
destructive or idempotent; the server's instructions are the workspace brief
(the mount table: which paths are read-only). Logs go to stderr. EOF on
stdin, SIGINT or SIGTERM stops it and unmounts.

Example:
  $ vfsmount mcp --mount type=git,src=.,dst=/repo --mount type=memory,dst=/memory --dialect claude

The same in a harness's MCP config (.mcp.json):
  {"mcpServers": {"workspace": {"command": "vfsmount",
    "args": ["mcp", "--mount", "type=git,src=.,dst=/repo", "--dialect", "claude"]}}}`,
		NArgs: 0,
		Setup: func(fs *pflag.FlagSet) runFunc {
			var bf bridgeFlags
			bf.register(fs, true)
			return func(ctx context.Context, a *app, _ []string) (err error) {
				b, err := openBridge(ctx, a, &bf, privateKernel, "")
				if err != nil {
					return err
				}
				defer func() {
					if cerr := b.Close(); cerr != nil && err == nil {
						err = cerr
					}
				}()
				srv, err := mcpserver.New(b.tools, bf.dialect, &mcp.Implementation{Name: "vfsmount", Version: version})
				if err != nil {
					return usageError(err)
				}
				if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
					return err
				}
				return nil
			}
		},
	}
}
