package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vfsmount/vfsmount/fusefs"
)

func umountCommand(a *app) *cobra.Command {
	var lazy bool
	cmd := &cobra.Command{
		Use:   "umount [--lazy] MOUNTPOINT",
		Short: "unmount a workspace, live or stale",
		Long: `Unmounts the FUSE mount at MOUNTPOINT. A live mount is unmounted cleanly (the
vfsmount serving it then exits 0); if a program holds it busy, umount fails
with exit 1 unless --lazy detaches it anyway. A stale mount (its vfsmount
crashed) is detached. Nothing mounted there is exit 1.`,
		Example: `  $ vfsmount umount mnt
  $ vfsmount status mnt; echo $?
  mnt: not mounted
  2`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(_ *cobra.Command, args []string) error {
			return runUmount(a, args[0], lazy)
		},
	}
	cmd.Flags().BoolVar(&lazy, "lazy", false, "detach even when busy (umount -l)")
	return cmd
}

func runUmount(a *app, mountpoint string, lazy bool) error {
	abs, state, err := inspectMountpoint(mountpoint)
	if err != nil {
		return err
	}
	switch {
	case state == fusefs.StateNone:
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: not mounted", mountpoint)}
	case state == fusefs.StateStale || lazy:
		if err := fusefs.ForceUnmount(abs); err != nil {
			return fmt.Errorf("unmount %s: %w", mountpoint, err)
		}
	default:
		if err := unmountLive(abs); err != nil {
			if errors.Is(err, syscall.EBUSY) {
				return &exitError{code: exitFailure, err: fmt.Errorf("unmount %s: busy (a program uses it; stop it, or use --lazy)", mountpoint)}
			}
			return fmt.Errorf("unmount %s: %w", mountpoint, err)
		}
	}
	a.logger.Info("unmounted", "mountpoint", abs, "was", stateName(state))
	return nil
}

// unmountLive unmounts a live mount without forcing it, so a busy mount
// fails with EBUSY instead of being torn away from its users. The
// connections of immutable mounts, mounted on top of the workspace, go
// first (should the workspace then prove busy, it still serves their
// content itself). Root calls umount(2); anyone else goes through
// fusermount3, which may unmount a FUSE mount its user owns.
func unmountLive(abs string) error {
	below, err := fusefs.MountsBelow(abs)
	if err != nil {
		return err
	}
	for _, mp := range below {
		if err := unmountOne(mp); err != nil {
			return err
		}
	}
	return unmountOne(abs)
}

func unmountOne(abs string) error {
	err := syscall.Unmount(abs, 0)
	if !errors.Is(err, syscall.EPERM) {
		return err
	}
	out, ferr := exec.Command("fusermount3", "-u", abs).CombinedOutput()
	if ferr != nil {
		msg := strings.TrimSpace(string(out))
		if strings.Contains(msg, "busy") {
			return syscall.EBUSY
		}
		return fmt.Errorf("fusermount3 -u: %v: %s", ferr, msg)
	}
	return nil
}

func stateName(s fusefs.State) string {
	switch s {
	case fusefs.StateLive:
		return "live"
	case fusefs.StateStale:
		return "stale"
	case fusefs.StateIncomplete:
		return "incomplete"
	}
	return "not mounted"
}

func statusCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status MOUNTPOINT",
		Short: "report whether MOUNTPOINT is live (exit 0), stale or incomplete (1), or not mounted (2)",
		Long: `Prints "MOUNTPOINT: live", "MOUNTPOINT: stale", "MOUNTPOINT: incomplete" or
"MOUNTPOINT: not mounted" and answers with the exit code:

  0  live: the workspace answers, whole. A git mount served on a FUSE
     connection of its own (stacked on the workspace at its path) is
     mounted and answers too.
  1  stale: the serving vfsmount is gone (clear it with vfsmount umount);
     or incomplete: vfsmount answers, but a stacked connection it mounted is
     missing (unmounted by hand) or does not answer, so that directory is
     not served the way it was mounted. Both are a mount that is there
     but broken, hence the same code; vfsmount umount clears either.
  2  not mounted. A MOUNTPOINT that does not exist is also exit 2, with an
     error line.

A workspace still being mounted answers no other process until all its
connections are mounted, so status (like any program) waits for it rather
than seeing part of it: live means whole, and a readiness probe can rely on
it. A server that does not answer within 5s is reported stale.` + statusStoreLong,
		Example: `  $ vfsmount status mnt && ls mnt
  mnt: live
  memory`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			abs, state, err := inspectMountpoint(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: %s\n", args[0], stateName(state))
			switch state {
			case fusefs.StateLive:
				printStoreStatus(cmd.Context(), a.stdout, abs)
				return nil
			case fusefs.StateStale, fusefs.StateIncomplete:
				return &exitError{code: exitFailure}
			}
			return &exitError{code: exitUsage}
		},
	}
}
