package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/workspace"
)

const checkpointLong = `
MOUNTPOINT is where "vfsmount mount" serves the workspace; the command asks
that vfsmount over its control socket. A checkpoint holds every writable
layer of the workspace at once: memory mounts, and the upper layers of
writable git mounts (memory, or persist= files). Immutable mounts (git
commits) need no freezing; a host directory cannot be frozen, and the
manifest and restore say so. Checkpoints of persisted layers (persist=)
live in their files and survive a restart; the others live as long as the
vfsmount serving the mount.`

func checkpointCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint create|list|diff|restore|delete|push MOUNTPOINT ...",
		Short: "take, list, diff, restore and delete checkpoints of a running workspace",
		Long: `Checkpoints of the whole workspace, instant and restorable: whatever changed
it, the tools or a shell on the mount.` + checkpointLong,
		Example: `  $ vfsmount checkpoint create mnt --name "before the refactor"
  $ vfsmount checkpoint list mnt
  $ vfsmount checkpoint diff mnt c1
  $ vfsmount checkpoint restore mnt c1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("checkpoint: a subcommand is required: create, list, diff, restore, delete or push")
			}
			return usageErrorf("checkpoint: unknown subcommand %q: want create, list, diff, restore, delete or push", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error { return nil },
	}
	cmd.AddCommand(checkpointCreateCommand(), checkpointListCommand(), checkpointDiffCommand(),
		checkpointRestoreCommand(), checkpointDeleteCommand(), checkpointPushCommand(), checkpointPullCommand())
	return cmd
}

func checkpointCreateCommand() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "create MOUNTPOINT [--name NAME]",
		Short: "take a checkpoint of every writable layer; prints its id on the last line",
		Long: `Takes a checkpoint of every writable layer of the workspace at once. It costs
in what changed since the previous checkpoint, not in the size of the
workspace. Prints what backs each mount, then the new id alone on the last
line. A workspace with no writable layer exits 2.` + checkpointLong,
		Example:           `  $ id=$(vfsmount checkpoint create mnt | tail -1)`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			var res jsonrpc.CheckpointInfo
			if err := controlCall(cmd.Context(), args, "checkpoint.create", func([]string) any {
				return jsonrpc.CheckpointCreateParams{Name: name}
			}, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, m := range res.Manifest {
				src := m.Source
				if m.Commit != "" && !strings.Contains(src, m.Commit) {
					src += " (commit " + m.Commit + ")"
				}
				fmt.Fprintf(w, "%-12s %-11s %s\n", m.Prefix, m.Coverage, src)
			}
			fmt.Fprintln(w, res.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "a `NAME` for the checkpoint, shown by list")
	return cmd
}

func checkpointListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "list MOUNTPOINT [--json]",
		Short:             "list the checkpoints, oldest first: id, time, size of what each holds, name",
		Long:              `Lists the checkpoints, oldest first.` + checkpointLong,
		Args:              exactArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			var res jsonrpc.CheckpointListResult
			if err := controlCall(cmd.Context(), args, "checkpoint.list", func([]string) any { return struct{}{} }, &res); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			if len(res.Checkpoints) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no checkpoints")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tSIZE\tENTRIES\tNAME")
			for _, c := range res.Checkpoints {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", c.ID, c.Time.Local().Format(time.DateTime), workspace.HumanBytes(c.Bytes), c.Inodes, c.Name)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON, manifests included")
	return cmd
}

func checkpointDiffCommand() *cobra.Command {
	var stat, nameStatus bool
	var to string
	cmd := &cobra.Command{
		Use:   "diff MOUNTPOINT ID [--to ID2] [--stat | --name-status] [PATH]...",
		Short: "print what changed since a checkpoint (or between two), as git diff",
		Long: `Prints the changes from checkpoint ID to now, or to checkpoint --to ID2, as
a git diff: for a writable git mount the same diff as "vfsmount diff" (names
of the repository), for a memory mount with names under its mount point
(memory/notes.md). --stat and --name-status print what git diff does with
them. No change prints "no changes" on stderr.` + checkpointLong,
		Example: `  $ vfsmount checkpoint diff mnt c3
  $ vfsmount checkpoint diff mnt c1 --to c2 --stat /repo/src`,
		Args:              minArgs(2),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := diffFormatOf(stat, nameStatus)
			if err != nil {
				return err
			}
			id := args[1]
			var res jsonrpc.DiffResult
			if err := controlCall(cmd.Context(), append([]string{args[0]}, args[2:]...), "checkpoint.diff", func(paths []string) any {
				return jsonrpc.CheckpointDiffParams{From: id, To: to, Paths: paths, Format: format}
			}, &res); err != nil {
				return err
			}
			return printDiff(cmd, res.Text)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "diff to checkpoint `ID2` rather than to now")
	cmd.Flags().BoolVar(&stat, "stat", false, "print a diffstat, as git diff --stat")
	cmd.Flags().BoolVar(&nameStatus, "name-status", false, "print names and status letters, as git diff --name-status")
	return cmd
}

func checkpointRestoreCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore MOUNTPOINT ID [PATH]...",
		Short: "bring the workspace (or PATHs in it) back to a checkpoint",
		Long: `Brings every writable layer back to checkpoint ID at once: a reader sees the
workspace before or after, never a mix, and the kernel's caches of every
changed name are dropped, so cat shows the restored bytes at once. A file
held open keeps reading what it had. With PATHs, only they (and what is
below them) are restored, as git checkout ID -- PATH does; a PATH at or
above a mount point restores that mount whole. Mounts a checkpoint cannot hold (host directories) are named on
stderr: they are left as they are. The checkpoints are kept, so restoring
a newer one undoes a restore. An unknown ID exits 2 and changes nothing.` + checkpointLong,
		Example: `  $ vfsmount checkpoint restore mnt c1
  $ vfsmount checkpoint restore mnt c1 mnt/repo/src/main.go /memory`,
		Args:              minArgs(2),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[1]
			var res jsonrpc.CheckpointRestoreResult
			if err := controlCall(cmd.Context(), append([]string{args[0]}, args[2:]...), "checkpoint.restore", func(paths []string) any {
				return jsonrpc.CheckpointRestoreParams{ID: id, Paths: paths}
			}, &res); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s to %s (%d names changed)\n", strings.Join(res.Restored, ", "), id, len(res.Changed))
			for _, p := range res.NotCovered {
				fmt.Fprintf(cmd.ErrOrStderr(), "not covered: %s (a host directory: a checkpoint cannot hold it; left as it is)\n", p)
			}
			return nil
		},
	}
	return cmd
}

func checkpointDeleteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "delete MOUNTPOINT ID...",
		Short:             "drop checkpoints",
		Long:              `Drops each checkpoint ID. What a newer checkpoint still needs is kept.` + checkpointLong,
		Example:           `  $ vfsmount checkpoint delete mnt c1 c2`,
		Args:              minArgs(2),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, id := range args[1:] {
				var res jsonrpc.CheckpointDeleteResult
				if err := controlCall(cmd.Context(), args[:1], "checkpoint.delete", func([]string) any {
					return jsonrpc.CheckpointDeleteParams{ID: id}
				}, &res); err != nil {
					return err
				}
			}
			return nil
		},
	}
	return cmd
}
