package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/workspace"
)

// unmountGrace is how long a signalled mount keeps retrying a clean unmount
// while something holds the mountpoint busy, before it detaches lazily.
const unmountGrace = 5 * time.Second

// retryUnmount is the pause between two clean unmounts of a busy mount.
const retryUnmount = 200 * time.Millisecond

func mountCommand(a *app) *cobra.Command {
	var wf workspaceFlags
	var noPassthrough bool
	cmd := &cobra.Command{
		Use:   "mount [--config FILE] [--mount SPEC]... MOUNTPOINT",
		Short: "build a workspace and serve it at MOUNTPOINT, in the foreground",
		Long: `Builds the workspace from the config file and the --mount flags (flags add to
the file's mounts) and serves it at MOUNTPOINT, an existing directory, until
SIGINT or SIGTERM (Ctrl-C): then it unmounts cleanly and exits 0. If a
program holds the mount busy, it retries for ` + unmountGrace.String() + ` and then detaches lazily;
a second Ctrl-C detaches at once.

A stale mount at MOUNTPOINT (left by a crashed vfsmount; "transport endpoint
is not connected") is cleared first. A live mount there is an error, and so
is an incomplete one (see vfsmount help status).

Readiness: until every part of the workspace is mounted (a git mount is
served on a FUSE connection of its own, stacked on MOUNTPOINT at its path),
no other process gets an answer from MOUNTPOINT: its requests wait. So the
first thing any program sees is the whole workspace, and "vfsmount status
MOUNTPOINT" exits 0 only then; use it as the readiness check.

With no mount given, the workspace is ` + defaultWorkspace + `.

A mount SPEC is comma-separated key=value pairs (Docker style); a bare key
means true. Every type takes type= and dst= (an absolute, clean path in the
workspace). Mount types:
` + mountTypes().help() + `
Policy binds the kernel face and the tool face alike (see README "Policy"):
--deny-read and --deny-write take gitignore-style patterns on workspace
paths (a denied read or write is EACCES; the entry stays listed),
--read-only PREFIX makes a subtree EROFS, --audit FILE appends a JSON Lines
line per change (with the writer's pid and uid), and --dry-run mounts the
workspace read-only.

The config file says the same in YAML (unknown keys are errors):
  mounts:
    - {type: memory, dst: /memory}
    - type: memory
      dst: /scratch
  policy: {deny_read: ["*.env"], deny_write: ["/repo/.git/"], read_only: [/repo]}
  audit: {path: audit.jsonl, max_bytes: 64MiB}`,
		Example: `  $ mkdir -p mnt
  $ vfsmount mount --mount type=memory,dst=/memory mnt &
  $ echo hi > mnt/memory/x && cat mnt/memory/x
  hi
  $ vfsmount umount mnt`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMount(cmd.Context(), a, &wf, !noPassthrough, args[0])
		},
	}
	wf.register(cmd.Flags())
	wf.Store.register(cmd.Flags())
	registerNoPassthrough(cmd.Flags(), &noPassthrough)
	return cmd
}

func runMount(ctx context.Context, a *app, wf *workspaceFlags, passthrough bool, mountpoint string) error {
	log := a.logger
	// Order matters: everything that can reject bad input runs before
	// anything changes on the machine, so bad input leaves nothing mounted
	// and no stale mount cleared.
	wf.Self = a.self
	cfg, err := wf.load(ctx, log)
	if err != nil {
		return err
	}
	abs, state, err := inspectMountpoint(mountpoint)
	if err != nil {
		return err
	}
	if err := checkUppers(cfg.Mounts, abs); err != nil {
		return err
	}
	// git runs at the mountpoint here, not in the shell tool's namespace,
	// and names it by its real path.
	cfg.WorktreeRoot = abs
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		cfg.WorktreeRoot = real
	}
	switch state {
	case fusefs.StateLive:
		return &exitError{code: exitFailure, err: fmt.Errorf(
			"mountpoint %s: a live FUSE mount is already there (stop it, or run: vfsmount umount %s)", mountpoint, mountpoint)}
	case fusefs.StateIncomplete:
		// Its server still answers: clearing it would take a running
		// vfsmount's mount away, so it is left to the user, as a live one.
		return &exitError{code: exitFailure, err: fmt.Errorf(
			"mountpoint %s: a live FUSE mount missing a stacked connection is there (stop it, or run: vfsmount umount %s)", mountpoint, mountpoint)}
	}
	// The store: its lease is taken, and the checkpoint to resume
	// fetched, before any mount is built (a workspace another daemon
	// holds mounts nothing).
	var run *storeRun
	if cfg.Store != nil {
		if run, err = startStore(ctx, cfg.Store, log); err != nil {
			return err
		}
		cfg.resume = run.resume
	}
	ws, err := buildWorkspace(ctx, cfg, log)
	if err != nil {
		if run != nil {
			run.release()
		}
		return err
	}
	defer func() {
		if err := ws.Close(); err != nil {
			log.Warn("closing the workspace", "err", err)
		}
	}()
	if run != nil {
		if err := run.attach(ws, log); err != nil {
			run.release()
			return err
		}
	}
	if state == fusefs.StateStale {
		if err := fusefs.ForceUnmount(abs); err != nil {
			return fmt.Errorf("mountpoint %s: clearing a stale mount: %w", mountpoint, err)
		}
		log.Warn("cleared a stale FUSE mount", "mountpoint", abs)
		if _, _, err := inspectMountpoint(mountpoint); err != nil {
			return err
		}
	}

	for _, m := range ws.Mounts() {
		access := "ro"
		if m.Writable {
			access = "rw"
		}
		log.Info("mount", "prefix", m.Prefix, "type", m.Type, "source", m.Source, "access", access)
	}
	sock, err := workspace.ControlPath(abs)
	if err != nil {
		return err
	}
	// Read-only twice: a workspace no mount can change (or a dry run) is
	// also mounted read-only, so the kernel refuses writes itself; and a
	// reset through the control socket drops the kernel's caches of what
	// it changed (see package workspace).
	srv, err := ws.MountKernel(abs, fusefs.Options{
		Logger:           log,
		Debug:            a.globals.Debug,
		AllowOther:       a.globals.AllowOther,
		FSName:           "vfsmount",
		Passthrough:      passthrough,
		StackConnections: true,
	})
	if err != nil {
		return fmt.Errorf("mount at %s: %w", mountpoint, err)
	}
	stopControl, err := ws.ServeControl(ctx, sock, abs)
	if err != nil {
		// The workspace works without it; only diff, commit and reset
		// cannot reach it.
		log.Warn("no control socket: vfsmount diff, commit, reset and checkpoint cannot reach this mount", "err", err)
		stopControl = func() {}
	}
	defer stopControl()
	log.Info("serving", "mountpoint", abs, "stop", "Ctrl-C, or vfsmount umount "+mountpoint)

	done := make(chan struct{})
	go func() {
		srv.Wait()
		close(done)
	}()
	select {
	case <-done:
		log.Info("unmounted from outside", "mountpoint", abs)
		return nil
	case <-ctx.Done():
		log.Info("unmounting", "why", context.Cause(ctx).Error())
	}
	return shutdown(srv, abs, done, a.again, log)
}

// shutdown unmounts srv: cleanly if it can within unmountGrace, otherwise
// (or on a second signal, from again) by a lazy detach, which removes the
// mount from the namespace at once and lets the kernel drop it when the
// last user lets go.
func shutdown(srv *fusefs.Server, mountpoint string, done <-chan struct{}, again <-chan os.Signal, log *slog.Logger) error {
	deadline := time.After(unmountGrace)
	warned := false
	for {
		err := srv.Unmount()
		if err == nil {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				log.Warn("unmounted, but the server did not stop in time")
			}
			log.Info("unmounted", "mountpoint", mountpoint)
			return nil
		}
		if !warned {
			log.Warn("mountpoint busy, retrying", "err", err, "grace", unmountGrace.String())
			warned = true
		}
		// The retry waits from now, not on a ticker: an Unmount can
		// outlast a tick, and a tick already due would compete at
		// random with a second signal or the deadline that is pending.
		lazy := ""
		select {
		case <-time.After(retryUnmount):
			continue
		case <-done: // unmounted by someone else meanwhile
			log.Info("unmounted", "mountpoint", mountpoint)
			return nil
		case <-deadline:
			lazy = "grace period over"
		case <-again:
			lazy = "second signal"
		}
		if err := fusefs.ForceUnmount(mountpoint); err != nil {
			return fmt.Errorf("unmount %s: %w", mountpoint, err)
		}
		// The detached mount lives until its last user lets go; the
		// kernel aborts it when this process exits.
		select {
		case <-done:
		case <-time.After(time.Second):
		}
		log.Warn("mountpoint was busy: detached lazily", "mountpoint", mountpoint, "why", lazy)
		return nil
	}
}

// inspectMountpoint checks that mountpoint names a directory, or a FUSE
// mount (live or stale: a stale one cannot even be stat'ed), and reports
// which. It changes nothing. A missing path or a non-directory is a usage
// error.
func inspectMountpoint(mountpoint string) (abs string, state fusefs.State, err error) {
	abs, err = filepath.Abs(mountpoint)
	if err != nil {
		return "", fusefs.StateNone, usageErrorf("mountpoint %s: %v", mountpoint, err)
	}
	// Probe first: it stats a FUSE mount with a time limit, where a
	// plain stat of a server that hangs would hang too.
	state, err = fusefs.Probe(abs)
	if err != nil {
		return "", fusefs.StateNone, fmt.Errorf("mountpoint %s: %w", mountpoint, err)
	}
	if state != fusefs.StateNone {
		return abs, state, nil
	}
	fi, statErr := os.Stat(abs)
	switch {
	case errors.Is(statErr, os.ErrNotExist):
		return "", fusefs.StateNone, usageErrorf("mountpoint %s: no such directory (create it: mkdir -p %s)", mountpoint, mountpoint)
	case statErr != nil:
		var pe *os.PathError
		if errors.As(statErr, &pe) {
			statErr = pe.Err
		}
		return "", fusefs.StateNone, usageErrorf("mountpoint %s: %v", mountpoint, statErr)
	case !fi.IsDir():
		return "", fusefs.StateNone, usageErrorf("mountpoint %s: not a directory", mountpoint)
	}
	return abs, state, nil
}

// registerNoPassthrough adds --no-passthrough to a command that serves the
// workspace through the kernel.
func registerNoPassthrough(fs *pflag.FlagSet, p *bool) {
	fs.BoolVar(p, "no-passthrough", false, "serve every read and write of host files through vfsmount instead of letting the kernel do them (FUSE passthrough, used when root on Linux 6.9+)")
}
