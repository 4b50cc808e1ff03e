package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
)

// The export commands talk to the vfsmount serving MOUNTPOINT through its
// control socket (package workspace): it alone holds the overlays.

const exportLong = `
MOUNTPOINT is where "vfsmount mount" serves a workspace with a writable git
mount (type=git,...,writable); the command asks that vfsmount over its
control socket. A PATH is a path under MOUNTPOINT (mnt/repo/src) or a
workspace path (/repo/src); none means every writable git mount.`

func diffCommand(a *app) *cobra.Command {
	var stat, nameStatus bool
	cmd := &cobra.Command{
		Use:   "diff [--stat | --name-status] MOUNTPOINT [PATH]...",
		Short: "print the changes of writable git mounts against their pinned commits, as git diff",
		Long: `Prints the changes of the writable git mounts as a git diff against the pinned
commit (renames found, binary files as git binary patches): "git apply"
on a checkout of that commit reproduces them. --stat and --name-status print
what git diff does with them. No change prints "no changes" on stderr and
exits 0, with nothing on stdout.` + exportLong,
		Example: `  $ vfsmount diff mnt > work.patch
  $ git -C ~/src/project apply work.patch
  $ vfsmount diff --stat mnt /repo/src`,
		Args:              minArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := diffFormatOf(stat, nameStatus)
			if err != nil {
				return err
			}
			var res jsonrpc.DiffResult
			if err := controlCall(cmd.Context(), args, "workspace.diff", func(paths []string) any {
				return jsonrpc.DiffParams{Paths: paths, Format: format}
			}, &res); err != nil {
				return err
			}
			return printDiff(cmd, res.Text)
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "print a diffstat, as git diff --stat")
	cmd.Flags().BoolVar(&nameStatus, "name-status", false, "print names and status letters, as git diff --name-status")
	return cmd
}

func commitCommand(a *app) *cobra.Command {
	var p jsonrpc.CommitParams
	cmd := &cobra.Command{
		Use:   "commit MOUNTPOINT -m MSG --branch NAME [--force] [--dst PREFIX]",
		Short: "commit a writable git mount's changes to a branch of its source repository",
		Long: `Writes the state of a writable git mount as a commit on top of its pinned
commit, into the source repository under refs/heads/NAME, and prints the
commit's SHA. The source's HEAD, index, working tree and checked-out
branches are never touched. An existing branch is refused (exit 1) unless
--force replaces it; a branch checked out in the source never is moved. No
change prints "no changes" and exits 0. With several writable git mounts,
--dst says which.` + exportLong,
		Example: `  $ vfsmount commit mnt -m "fix the parser" --branch agent/fix
  $ git -C ~/src/project log --oneline -1 agent/fix`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			if p.Branch == "" {
				return usageErrorf("--branch: required")
			}
			if !cmd.Flags().Changed("message") {
				return usageErrorf("-m/--message: required")
			}
			var res jsonrpc.CommitResult
			if err := controlCall(cmd.Context(), args, "workspace.commit", func([]string) any { return p }, &res); err != nil {
				return err
			}
			if res.Commit == "" {
				fmt.Fprintln(cmd.OutOrStdout(), "no changes")
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", res.Commit, res.Ref)
			return nil
		},
	}
	cmd.Flags().StringVarP(&p.Message, "message", "m", "", "the commit message")
	cmd.Flags().StringVar(&p.Branch, "branch", "", "the branch to write: refs/heads/`NAME`")
	cmd.Flags().BoolVar(&p.Force, "force", false, "replace the branch if it exists")
	cmd.Flags().StringVar(&p.Dst, "dst", "", "the writable git mount to commit (its `PREFIX`, e.g. /repo), when there are several")
	return cmd
}

func resetCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset MOUNTPOINT [PATH]...",
		Short: "discard the changes of writable git mounts",
		Long: `Discards the changes at and below each PATH, as git checkout COMMIT -- PATH
does: afterwards it shows the pinned commit's content. No PATH discards
every change of every writable git mount. A path inside a directory that
was renamed or replaced is refused (exit 2): reset that directory.` + exportLong,
		Example: `  $ vfsmount reset mnt mnt/repo/src/main.go
  $ vfsmount reset mnt`,
		Args:              minArgs(1),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			var res jsonrpc.ResetResult
			return controlCall(cmd.Context(), args, "workspace.reset", func(paths []string) any {
				return jsonrpc.ResetParams{Paths: paths}
			}, &res)
		},
	}
	return cmd
}

// controlCall calls method on the control socket of args[0], with the
// params params makes of the workspace paths of args[1:]. An answer of
// invalid params exits 2, any other failure 1.
func controlCall(ctx context.Context, args []string, method string, params func(paths []string) any, result any) error {
	mountpoint := args[0]
	paths, err := workspacePaths(mountpoint, args[1:])
	if err != nil {
		return err
	}
	c, err := dialControl(mountpoint)
	if err != nil {
		return err
	}
	defer c.Close()
	err = c.Call(ctx, method, params(paths), result)
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams:
		return usageErrorf("%s", rpcErr.Message)
	case errors.As(err, &rpcErr):
		return &exitError{code: exitFailure, err: errors.New(rpcErr.Message)}
	case err != nil:
		return fmt.Errorf("%s: %w", mountpoint, err)
	}
	return nil
}

// workspacePaths turns PATH arguments into workspace paths: a path under
// the mountpoint (relative to the working directory, or absolute) is the
// workspace path it shows; any other absolute path is taken as a
// workspace path already.
func workspacePaths(mountpoint string, args []string) ([]string, error) {
	mp, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, usageErrorf("mountpoint %s: %v", mountpoint, err)
	}
	var out []string
	for _, a := range args {
		abs, err := filepath.Abs(a)
		if err != nil {
			return nil, usageErrorf("path %s: %v", a, err)
		}
		if rel, err := filepath.Rel(mp, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if rel == "." {
				rel = ""
			}
			out = append(out, "/"+filepath.ToSlash(rel))
			continue
		}
		if !strings.HasPrefix(a, "/") {
			return nil, usageErrorf("path %s: not under %s (give a path in the mount, or a workspace path such as /repo/src)", a, mountpoint)
		}
		out = append(out, filepath.ToSlash(filepath.Clean(a)))
	}
	return out, nil
}

// diffFormatOf is the diff format the --stat and --name-status flags ask
// for, as the export methods name it.
func diffFormatOf(stat, nameStatus bool) (string, error) {
	switch {
	case stat && nameStatus:
		return "", usageErrorf("--stat and --name-status exclude each other")
	case stat:
		return "stat", nil
	case nameStatus:
		return "name-status", nil
	}
	return "patch", nil
}

// printDiff prints a diff, or "no changes" on stderr when it is empty.
func printDiff(cmd *cobra.Command, text string) error {
	if text == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "no changes")
		return nil
	}
	_, err := io.WriteString(cmd.OutOrStdout(), text)
	return err
}
