package main

import (
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
)

// The remote side of a remote mount: `vfsmount peer DIR` serves DIR and
// runs commands next to it for one daemon, over stdin and stdout (an ssh
// channel, `kubectl exec -i`, `docker exec -i`). DIR is confined exactly
// as a host mount is: no .., symlink, hard link or rename leaves it,
// whatever the daemon asks. docs/remote-protocol.md describes the
// protocol.

func peerCommand(a *app) *cobra.Command {
	var readOnly, allowRoot bool
	var backSock string
	cmd := &cobra.Command{
		Use:   "peer DIR",
		Short: "serve DIR to a remote mount over stdin and stdout (run by the daemon, not by hand)",
		Long: `Serves DIR, and commands run in it, to the vfsmount daemon of a remote mount
over stdin and stdout. The daemon starts it over ssh (installing this binary in
the remote user's cache when the remote has none of the same build), or
through the mount's command: (kubectl exec -i POD -- vfsmount peer DIR).
DIR is confined as a host mount is. Serving / is refused unless --allow-root.
The peer ends when its input ends, and kills the commands it started.`,
		Example: `  $ vfsmount peer /srv/work < /dev/null   # serves until its input ends
  # a remote mount of a pod's /workspace, in the daemon's config:
  #   - {type: remote, dst: /workspace, command: [kubectl, exec, -i, dev-0, --, vfsmount, peer, /workspace]}`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return usageError(err)
			}
			if dir == "/" && !allowRoot {
				return usageErrorf("peer: refusing to serve / (the whole machine): give a directory, or --allow-root")
			}
			// A daemon gone mid-answer is an EPIPE that ends Serve, whose
			// cleanup then runs, not a SIGPIPE that kills the peer.
			signal.Ignore(syscall.SIGPIPE)
			fsys, err := hostfs.Open(dir, hostfs.Options{ReadOnly: readOnly, Logger: a.logger})
			if errors.Is(err, hostfs.ErrBadSource) {
				return usageErrorf("peer: %v", err)
			}
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			defer fsys.(interface{ Close() error }).Close()
			shell := peer.HostShell{Dir: dir, Bwrap: peer.FindBwrap()}
			if backSock != "" && shell.Bwrap != "" {
				b, err := newBackMount(a, backSock)
				if err != nil {
					return &exitError{code: exitFailure, err: err}
				}
				if b != nil {
					defer b.close()
					shell.Back = b.binds
				}
			}
			err = peer.Serve(cmd.Context(), os.Stdin, os.Stdout, fsys, peer.Options{
				Dir: dir, Build: version, Logger: a.logger, Shell: shell,
			})
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&readOnly, "ro", false, "serve read-only: every change is refused (EROFS)")
	cmd.Flags().BoolVar(&allowRoot, "allow-root", false, "allow serving / itself")
	cmd.Flags().StringVar(&backSock, "back", "", "(set by the daemon) a Unix socket it listens on here, in a new directory the peer makes (0700): commands see the rest of the workspace through it")
	return cmd
}
