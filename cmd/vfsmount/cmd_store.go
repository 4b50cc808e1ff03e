package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/store"
	"github.com/vfsmount/vfsmount/workspace"
)

const storeLong = `
A store is S3-compatible object storage (AWS S3, MinIO, versitygw, ...) at
s3://BUCKET/PREFIX; a workspace in it is s3://BUCKET/PREFIX/NAME, and one
of its checkpoints NAME@N (N as "store ls" lists it). Credentials come from
the standard AWS chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, shared
files, an instance role); --endpoint (or AWS_ENDPOINT_URL) names a server
other than AWS. A bad URL exits 2; a missing bucket, refused credentials or
an unreachable store exit 1, naming the store.`

// storeConn are the flags that reach a store from the command line.
type storeConn struct {
	Endpoint, Region string
}

func (c *storeConn) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.Endpoint, "endpoint", "", "the S3 endpoint `URL` of a server other than AWS (or AWS_ENDPOINT_URL)")
	fs.StringVar(&c.Region, "region", "", "the store's `REGION` (default: the AWS chain's, else us-east-1)")
}

func storeCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store ls|gc s3://BUCKET/PREFIX",
		Short: "list the workspaces of an object store, collect its garbage",
		Long:  `Works on an object store of checkpoints directly (no mount needed).` + storeLong,
		Example: `  $ vfsmount store ls s3://sessions/prod
  $ vfsmount store gc s3://sessions/prod --dry-run`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("store: a subcommand is required: ls or gc")
			}
			return usageErrorf("store: unknown subcommand %q: want ls or gc", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error { return nil },
	}
	cmd.AddCommand(storeLsCommand(a), storeGCCommand(a))
	return cmd
}

func storeLsCommand(a *app) *cobra.Command {
	var conn storeConn
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls s3://BUCKET/PREFIX [--json]",
		Short: "list the workspaces of the store and their checkpoints",
		Long:  `Lists every workspace of the store with its checkpoints, oldest first.` + storeLong,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := openStore(ctx, &storeSettings{URL: args[0], Endpoint: conn.Endpoint, Region: conn.Region}, a.logger)
			if err != nil {
				return err
			}
			names, err := s.Workspaces(ctx)
			if err != nil {
				return storeError(err)
			}
			var heads []*store.Head
			for _, n := range names {
				h, err := s.Head(ctx, n)
				if err != nil {
					return storeError(err)
				}
				heads = append(heads, h)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(heads)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKSPACE\tCHECKPOINT\tID\tTIME\tMANIFEST\tNAME")
			for _, h := range heads {
				for _, r := range h.Checkpoints {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", h.Workspace, r.Seq, r.ID, r.Time.Local().Format(time.DateTime), r.Manifest[:12], r.Name)
				}
			}
			return tw.Flush()
		},
	}
	conn.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the heads as JSON")
	return cmd
}

func storeGCCommand(a *app) *cobra.Command {
	var conn storeConn
	var grace time.Duration
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "gc s3://BUCKET/PREFIX [--grace DURATION] [--dry-run]",
		Short: "delete the manifests no workspace names and the chunks no kept manifest names",
		Long: `Deletes the checkpoints no workspace names any more (dropped by keep:, or of a
deleted workspace) and then the chunks no kept checkpoint names. It never
deletes what a push in progress is about to name: while a push runs, gc
exits 1 saying so (run it again); a push that starts during gc waits for it.
What is younger than --grace is kept whatever names it.` + storeLong,
		Example: `  $ vfsmount store gc s3://sessions/prod --dry-run`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if grace < 0 {
				return usageErrorf("--grace: must not be negative, got %v", grace)
			}
			s, err := openStore(ctx, &storeSettings{URL: args[0], Endpoint: conn.Endpoint, Region: conn.Region}, a.logger)
			if err != nil {
				return err
			}
			g := grace
			if g == 0 {
				g = -1 // none: the lock protocol keeps pushes' chunks
			}
			res, err := s.GC(ctx, store.GCOptions{Grace: g, DryRun: dryRun, Holder: "vfsmount store gc"})
			if err != nil {
				return storeError(err)
			}
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d workspaces; %s %d of %d manifests, %d of %d chunks and %d of %d packs (%s)\n",
				res.Workspaces, verb, res.ManifestsDeleted, res.Manifests, res.ChunksDeleted, res.Chunks, res.PacksDeleted, res.Packs, workspace.HumanBytes(res.BytesDeleted))
			return nil
		},
	}
	conn.register(cmd.Flags())
	cmd.Flags().DurationVar(&grace, "grace", time.Hour, "keep what is younger than `DURATION` (0: keep nothing for its age alone)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count what would go; delete nothing")
	return cmd
}

func forkCommand(a *app) *cobra.Command {
	var conn storeConn
	cmd := &cobra.Command{
		Use:   "fork s3://BUCKET/PREFIX/NAME[@CHECKPOINT] NEWNAME",
		Short: "make a new workspace of the store from a checkpoint, copying no data",
		Long: `Makes workspace NEWNAME in the same store, starting at the checkpoint (the
newest of NAME without @CHECKPOINT): a head of its own naming the same
manifest, so nothing is copied whatever the size. Each fork then resumes
(vfsmount mount --resume s3://BUCKET/PREFIX/NEWNAME) and diverges on its
own. A NEWNAME that exists exits 1.` + storeLong,
		Example: `  $ vfsmount fork s3://sessions/prod/base@4 agent-1
  forked base@4 (c4) as s3://sessions/prod/agent-1@1 in 12ms
  $ for i in 2 3 4; do vfsmount fork s3://sessions/prod/base@4 agent-$i; done`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			u, name, ckpt, err := store.ParseWorkspaceURL(args[0])
			if err != nil {
				return usageError(err)
			}
			s, err := openStore(ctx, &storeSettings{URL: u, Endpoint: conn.Endpoint, Region: conn.Region}, a.logger)
			if err != nil {
				return err
			}
			start := time.Now()
			r, err := s.Fork(ctx, name+atCkpt(ckpt), args[1])
			if err != nil {
				return storeError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forked %s@%d (%s) as %s/%s@1 in %v\n", name, r.Seq, r.ID, u, args[1], time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	conn.register(cmd.Flags())
	return cmd
}

func checkpointPushCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "push MOUNTPOINT [ID]",
		Short: "send a checkpoint (a new one without ID) to the workspace's object store",
		Long: `Sends checkpoint ID, or a new checkpoint, to the object store the workspace
was mounted with (--store, --resume, or store: in its config): the content
the store lacks, then its manifest, then the workspace's head. Prints what
changed since the previous push and what was sent, then the checkpoint's
URL alone on the last line. A daemon another one took the workspace from
exits 1 and pushes no more.` + checkpointLong,
		Example:           `  $ vfsmount checkpoint push mnt`,
		Args:              rangeArgs(1, 2),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			var p jsonrpc.StorePushParams
			if len(args) == 2 {
				p.ID = args[1]
			}
			var res jsonrpc.StorePushResult
			if err := controlCall(cmd.Context(), args[:1], "store.push", func([]string) any { return p }, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "pushed %s: %d files (%d read), %s changed, %s sent (%d of %d chunks uploaded)\n",
				res.ID, res.Files, res.Read, workspace.HumanBytes(res.Changed), workspace.HumanBytes(res.Sent), res.Uploaded, res.Chunks)
			fmt.Fprintln(w, res.URL)
			return nil
		},
	}
	return cmd
}

func checkpointPullCommand() *cobra.Command {
	var takeOver bool
	cmd := &cobra.Command{
		Use:   "pull MOUNTPOINT NAME[@CHECKPOINT]|s3://BUCKET/PREFIX/NAME[@CHECKPOINT]",
		Short: "bring a checkpoint of the object store into the running workspace",
		Long: `Brings checkpoint CHECKPOINT (the newest without @) of workspace NAME in the
object store the workspace was mounted with into the running workspace, as
--resume brings one into a new daemon: each writable mount the checkpoint
holds becomes what it was then, the content fetched only for the files
that differ. From then on the daemon pushes to NAME. When NAME is another
workspace, what this one had not pushed is pushed first, NAME is taken (from
the daemon that holds it only with --take-over, whose next push then fails),
and this one's lease is let go. A checkpoint of mounts this workspace lacks,
or over another commit, exits 2 and changes nothing. Prints what changed,
then the checkpoint's URL alone on the last line.` + checkpointLong,
		Example:           `  $ vfsmount checkpoint pull mnt sess@3`,
		Args:              exactArgs(2),
		ValidArgsFunction: completeMountpoint,
		RunE: func(cmd *cobra.Command, args []string) error {
			p := jsonrpc.StoreResumeParams{Ref: args[1], TakeOver: takeOver}
			var res jsonrpc.StoreResumeResult
			if err := controlCall(cmd.Context(), args[:1], "store.resume", func([]string) any { return p }, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "resumed %s (%s, taken %s): %d names changed in %s\n",
				res.Workspace+"@"+strconv.Itoa(res.Seq), res.ID, res.Time.Local().Format(time.DateTime), len(res.Changed), strings.Join(res.Restored, ", "))
			if len(res.Left) > 0 {
				fmt.Fprintf(w, "not in the checkpoint, left as they are: %s\n", strings.Join(res.Left, ", "))
			}
			fmt.Fprintln(w, res.URL)
			return nil
		},
	}
	cmd.Flags().BoolVar(&takeOver, "take-over", false, "take the workspace from the daemon that holds it (its next push fails)")
	return cmd
}

// rangeArgs is cobra.RangeArgs with the usage line in the message and
// exit 2.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageErrorf("%s: want %d to %d arguments, got %d (usage: %s)", cmd.Name(), lo, hi, len(args), cmd.UseLine())
		}
		return nil
	}
}
