package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vfsmount/vfsmount/internal/fsmhook"
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
// The client and its wire protocol are package fsmhook's, which the small
// vfsmount-fsmonitor program shares: where that program is beside this
// binary, the .git names it instead (fsmonitorHook), as it starts faster.

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
			ans, err := fsmhook.Query(cmd.Context(), args[0], args[1], args[2])
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			_, err = cmd.OutOrStdout().Write(ans)
			return err
		},
	}
}

// fsmonitorHookHelper is the small program that answers the hook as the
// fsmonitor command does (cmd/vfsmount-fsmonitor).
const fsmonitorHookHelper = "vfsmount-fsmonitor"

// fsmonitorHook is the command git runs as a writable git mount's
// fsmonitor hook, before SOCKET VERSION TOKEN: vfsmount-fsmonitor beside
// this binary when it is there (it starts in about a quarter of this
// binary's time, which every git status pays), else this binary's
// fsmonitor command; none without a binary (self "").
func fsmonitorHook(self string) []string {
	if self == "" {
		return nil
	}
	helper := filepath.Join(filepath.Dir(self), fsmonitorHookHelper)
	if st, err := os.Stat(helper); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return []string{helper}
	}
	return []string{self, "fsmonitor"}
}
