package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/vfsmount/vfsmount/agentbridge/mcpserver"
)

func mcpCommand(a *app) *cobra.Command {
	var bf bridgeFlags
	cmd := &cobra.Command{
		Use:   "mcp [--config FILE] [--mount SPEC]... [--dialect D]",
		Short: "serve the workspace's tools as an MCP server over stdio",
		Long: `Builds one workspace, mounts its kernel face for the shell tool in a mount
namespace of its own (as root: no one else sees it, and it goes with the
process however that ends) and serves its tools over MCP on stdin/stdout,
in the dialect's names. The tool annotations say which tools are read-only,
destructive or idempotent; the server's instructions are the workspace brief
(the mount table: which paths are read-only). Logs go to stderr. At EOF on
stdin it answers the requests already read (waiting up to 30 s for calls
still running, then cancelling them), unmounts and exits; SIGINT or SIGTERM
stops it at once.

Name the server "vfsmount" in the harness's config: Claude Code reserves
"workspace" and does not load a server of that name. Claude Code waits for
approval of a project .mcp.json server unless settings outside the
repository enable it; Codex refuses destructive tools unless the server's
default_tools_approval_mode approves them; and both keep their own host
tools beside these (claude --tools "" leaves only the MCP tools).
examples/claude-code, examples/cursor and examples/codex hold configs that
load, with what each setting costs.`,
		Example: `  $ vfsmount mcp --mount type=git,src=.,dst=/repo --mount type=memory,dst=/memory --dialect claude

The same in a harness's MCP config (.mcp.json):
  {"mcpServers": {"vfsmount": {"command": "vfsmount",
    "args": ["mcp", "--mount", "type=git,src=.,dst=/repo", "--dialect", "claude"]}}}`,
		Args:              exactArgs(0),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			// The kernel face is the shell's alone: in a mount namespace
			// of this process's own where it can be (ns_private.go).
			b, err := openBridge(ctx, a, &bf, privateKernel, privateMountpoint(a))
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
			// At the end of stdin, the requests already read are
			// answered first (within mcpserver.DrainGrace).
			t := mcpserver.DrainingTransport(os.Stdin, nopWriteCloser{a.stdout}, mcpserver.DrainGrace, a.logger)
			if err := srv.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		},
	}
	bf.register(cmd.Flags(), true)
	return cmd
}

// nopWriteCloser is stdout for a transport that closes what it writes to
// when it ends: stdout stays open for the rest of the process.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
