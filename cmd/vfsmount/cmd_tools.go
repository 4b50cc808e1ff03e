package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/workspace"
)

// bridgeFlags are the flags of the tool-face subcommands (tools, call,
// serve, mcp, exec): the workspace flags, a dialect and an allowlist.
type bridgeFlags struct {
	ws      workspaceFlags
	dialect string
	tools   []string
	// noPassthrough turns FUSE passthrough off in the kernel face.
	noPassthrough bool
}

func (b *bridgeFlags) register(fs *pflag.FlagSet, withDialect bool) {
	b.ws.register(fs)
	if withDialect {
		fs.StringVar(&b.dialect, "dialect", agentbridge.DialectCursor, "tool names and arguments of `D`: "+strings.Join(agentbridge.Dialects, ", "))
	}
	registerNoPassthrough(fs, &b.noPassthrough)
	fs.StringSliceVar(&b.tools, "tools", nil, "offer only these tools (`LIST` of canonical names: read,ls,glob,grep,write,edit,delete,shell, readLints with a lints: config section, semSearch with a semsearch: one); naming one the workspace cannot serve is an error")
}

func (b *bridgeFlags) checkDialect() error {
	for _, d := range agentbridge.Dialects {
		if b.dialect == "" || b.dialect == d {
			return nil
		}
	}
	return usageErrorf("--dialect: unknown dialect %q (known: %s)", b.dialect, strings.Join(agentbridge.Dialects, ", "))
}

// kernelMode says whether a tool-face command needs the kernel face.
type kernelMode int

const (
	noKernel      kernelMode = iota // no shell
	probeKernel                     // no mount, but offer shell when bubblewrap works (tools)
	privateKernel                   // mount at a private temporary directory
)

// bridge is a built tool face: the workspace, its kernel face when there
// is one, and the agentbridge.Workspace over both.
type bridge struct {
	ws      *workspace.Workspace
	srv     *fusefs.Server
	private string // a temporary mountpoint to remove on Close
	tools   *agentbridge.Workspace
	log     *slog.Logger
}

// openBridge builds the workspace and, as mode asks, its kernel face at
// mountpoint (a private temporary directory when mountpoint is ""), then
// the tool face over the same tree, as workspace.stack stacked them. Once
// the kernel face is mounted, tool writes reach it as change notices, so
// it drops its caches for them at once.
func openBridge(ctx context.Context, a *app, f *bridgeFlags, mode kernelMode, mountpoint string) (_ *bridge, err error) {
	if err := f.checkDialect(); err != nil {
		return nil, err
	}
	f.ws.Self = a.self
	ws, cfg, err := f.ws.open(ctx, a.logger)
	if err != nil {
		return nil, err
	}
	b := &bridge{ws: ws, log: a.logger}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	// The linters run in the shell's namespace: readLints is offered
	// where there is a shell (lints_config.go).
	opts := agentbridge.Options{Tools: f.tools, Logger: a.logger, Lints: cfg.Lints}
	if opts.Tools == nil && cfg.File != nil {
		// --tools replaces the config file's list; either may only
		// narrow what the mounts can serve.
		opts.Tools = cfg.File.Tools
	}
	if cfg.SemSearch != nil {
		if opts.SemSearch, err = cfg.SemSearch.engine(f.ws.Git.CacheDir); err != nil {
			return nil, err
		}
	}
	switch mode {
	case probeKernel:
		// tools lists what serve and mcp offer: the shell is there when
		// bubblewrap works. The directory is only a placeholder for the
		// probe, which binds nothing.
		opts.Shell = &agentbridge.ShellOptions{Mountpoint: os.TempDir()}
	case privateKernel:
		if mountpoint == "" {
			if mountpoint, err = os.MkdirTemp("", "vfsmount-ws-"); err != nil {
				return nil, fmt.Errorf("private mountpoint: %w", err)
			}
			b.private = mountpoint
		}
		abs, state, err := inspectMountpoint(mountpoint)
		if err != nil {
			return nil, err
		}
		if state == fusefs.StateStale {
			// A --mountpoint is the host's to see: one a killed server
			// left is cleared here, as mount clears one.
			if err := fusefs.ForceUnmount(abs); err != nil {
				return nil, fmt.Errorf("mountpoint %s: clearing a stale mount: %w", mountpoint, err)
			}
			a.logger.Warn("cleared a stale FUSE mount", "mountpoint", abs)
			state = fusefs.StateNone
		}
		if state != fusefs.StateNone {
			return nil, &exitError{code: exitFailure, err: fmt.Errorf("mountpoint %s: a FUSE mount is already there (run: vfsmount umount %s)", mountpoint, mountpoint)}
		}
		b.srv, err = ws.MountKernel(abs, fusefs.Options{Logger: a.logger, Debug: a.globals.Debug, AllowOther: a.globals.AllowOther, FSName: "vfsmount",
			Passthrough: !f.noPassthrough, StackConnections: true})
		if err != nil {
			return nil, fmt.Errorf("mount at %s: %w", mountpoint, err)
		}
		env := []string{}
		if t := os.Getenv("TERM"); t != "" {
			env = append(env, "TERM="+t)
		}
		opts.Shell = &agentbridge.ShellOptions{Mountpoint: abs, Env: env}
	}
	b.tools, err = ws.ToolFace(opts)
	if err != nil {
		return nil, usageError(err)
	}
	return b, nil
}

// Close takes the kernel face down and releases the workspace.
func (b *bridge) Close() error {
	var errs []error
	if b.tools != nil {
		// First: a process a session left running keeps the mount busy.
		errs = append(errs, b.tools.Close())
	}
	if b.srv != nil {
		if err := b.srv.Unmount(); err != nil {
			b.log.Warn("unmount busy; detaching", "err", err)
			errs = append(errs, fusefs.ForceUnmount(b.srv.Mountpoint()))
		}
		b.srv = nil
	}
	if b.private != "" {
		errs = append(errs, os.Remove(b.private))
		b.private = ""
	}
	errs = append(errs, b.ws.Close())
	return errors.Join(errs...)
}

func toolsCommand(a *app) *cobra.Command {
	var bf bridgeFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools [--config FILE] [--mount SPEC]... [--dialect D] [--json]",
		Short: "print the tool definitions a harness registers for this workspace",
		Long: `Prints the tools of the workspace's tool face, in the dialect a harness
expects (cursor is canonical; claude and codex rename and reshape): name,
description and the JSON Schema of the input. Only what this workspace can
serve is listed: no write tools when every mount is read-only, shell only
when bubblewrap works here (serve, mcp and call provide the kernel face it
runs in). With --json the output is a JSON array of
{name, description, inputSchema, annotations}.`,
		Example: `  $ vfsmount tools --mount type=memory,dst=/memory --dialect claude --json | jq '.[].name'
  "Read"
  "LS"
  ...`,
		Args:              exactArgs(0),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := openBridge(cmd.Context(), a, &bf, probeKernel, "")
			if err != nil {
				return err
			}
			defer b.Close()
			defs, err := b.tools.Tools(bf.dialect)
			if err != nil {
				return usageError(err)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(defs)
			}
			for i, d := range defs {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				fmt.Fprintf(a.stdout, "%s\n  %s\n  input: %s\n", d.Name, d.Description, d.InputSchema)
			}
			return nil
		},
	}
	bf.register(cmd.Flags(), true)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
