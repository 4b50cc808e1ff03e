package main

import (
	"context"
	"errors"
	"os"
	"os/exec"

	"github.com/spf13/cobra"
)

func execCommand(a *app) *cobra.Command {
	var bf bridgeFlags
	var cwd string
	cmd := &cobra.Command{
		Use:   "exec [--config FILE] [--mount SPEC]... [--cwd DIR] -- CMD [ARG]...",
		Short: "run a command in the workspace namespace",
		Long: `Builds the workspace, mounts it for itself and runs CMD in a private mount
namespace (bubblewrap) where every mount appears at its workspace path
(/repo, /memory, ...), with read-only system directories and a private
/tmp: the namespace the shell tool uses. Stdin, stdout and stderr are the
terminal's. The exit status is CMD's.

As for serve, mcp and call, the workspace is mounted in a mount namespace
of the process's own where it can be (root, or CAP_SYS_ADMIN), so the
kernel takes it down with the process however it ends, SIGKILL included;
elsewhere at a temporary directory the host sees.`,
		Example: `  $ vfsmount exec --mount type=memory,dst=/memory -- sh -c 'echo hi > /memory/a; cat /memory/a'
  hi`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeProgram,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("exec: no command given (usage: vfsmount exec [flags] -- CMD [ARG]...)")
			}
			return runExec(cmd.Context(), a, &bf, cwd, args)
		},
	}
	bf.ws.register(cmd.Flags())
	cmd.Flags().StringVar(&cwd, "cwd", "", "working directory, a workspace path (default: the first writable mount)")
	return cmd
}

func runExec(ctx context.Context, a *app, bf *bridgeFlags, cwd string, argv []string) (err error) {
	// In a mount namespace of the process's own where it can be
	// (ns_private.go): a killed exec leaves no mount behind.
	b, err := openBridge(ctx, a, bf, privateKernel, privateMountpoint(a))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	// The command outlives a first Ctrl-C only as long as it takes to
	// deliver it: the terminal sends SIGINT to the whole foreground group.
	cmd, err := b.tools.Command(context.WithoutCancel(ctx), cwd, argv...)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, a.stdout, a.stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = 128 + 9 // killed by a signal
		}
		return &exitError{code: code}
	}
	return err
}
