package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// globalFlags are accepted before the subcommand and by every subcommand
// (the persistent flags of the root command).
type globalFlags struct {
	LogFormat  string
	Debug      bool
	AllowOther bool
}

func defaultGlobals() globalFlags { return globalFlags{LogFormat: "text"} }

// register binds the global flags to g; the current values of g are the
// defaults.
func (g *globalFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.LogFormat, "log-format", g.LogFormat, "log format on stderr: `text` or json")
	fs.BoolVar(&g.Debug, "debug", g.Debug, "debug logs, including every FUSE request")
	fs.BoolVar(&g.AllowOther, "allow-other", g.AllowOther, "let other users see the mount (FUSE allow_other; needs user_allow_other in /etc/fuse.conf unless root)")
}

// app is what a running command gets: where to write, the parsed global
// flags and the logger built from them.
type app struct {
	stdout, stderr io.Writer
	globals        globalFlags
	logger         *slog.Logger
	// again delivers the signals after the first (which cancels the
	// context); nil when the process does not watch signals (tests).
	again <-chan os.Signal
	// self is this program's path when the process is the vfsmount
	// binary (main sets it): it may then re-execute itself (into a mount
	// namespace of its own) and name itself as git's fsmonitor hook. ""
	// when the command line runs in-process in another program (a test):
	// neither is done then.
	self string
}

func newApp(stdout, stderr io.Writer) *app {
	return &app{stdout: stdout, stderr: stderr, globals: defaultGlobals()}
}

// main runs the command line args and returns the exit code. On failure it
// prints one line, "vfsmount: problem", to stderr.
func (a *app) main(ctx context.Context, args []string) int {
	root := a.rootCommand()
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != nil {
			fmt.Fprintf(a.stderr, "vfsmount: %s\n", errorLine(err))
		}
	}
	return exitCode(err)
}

// commands lists every subcommand, in the order help shows them. Adding
// one is a new cmd_NAME.go returning a *cobra.Command, plus a line here.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		mountCommand(a),
		umountCommand(a),
		statusCommand(a),
		toolsCommand(a),
		callCommand(a),
		serveCommand(a),
		mcpCommand(a),
		execCommand(a),
		diffCommand(a),
		commitCommand(a),
		resetCommand(a),
		checkpointCommand(a),
		storeCommand(a),
		forkCommand(a),
		fsmonitorCommand(a),
		peerCommand(a),
		completionCommand(a),
		versionCommand(a),
		helpCommand(a),
	}
}

// rootCommand builds the command tree. cobra parses the command line,
// dispatches and generates the completion scripts; where its defaults
// differ from this program's contract they are overridden here: errors
// are printed once, by main, as one line and with their exit code (2 for
// a bad flag, argument or command), usage is not dumped after an error,
// and help keeps its own layout (a usage line, the description, a worked
// example, the flags).
func (a *app) rootCommand() *cobra.Command {
	cmds := a.commands()
	root := &cobra.Command{
		Use:   "vfsmount",
		Short: "build an agent's workspace and serve it as a FUSE filesystem and as tools",
		Long: `vfsmount builds an agent's workspace from several sources and serves it as
one FUSE filesystem, and as the file and shell tools agents call.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// With subcommands and no Args, cobra would take an unknown
		// command for the root's argument.
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(args[0])
			}
			return nil
		},
		// A bare "vfsmount" is a usage error: the list of commands, on
		// stderr, exit 2.
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(a.stderr, mainUsage(cmd, cmds))
			return &exitError{code: exitUsage}
		},
		PersistentPreRunE: func(*cobra.Command, []string) error {
			logger, err := newLogger(a.stderr, a.globals)
			a.logger = logger
			return err
		},
		// completionCommand is ours: bash, zsh and fish, with this
		// program's help and exit codes.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	a.globals.register(root.PersistentFlags())
	root.Flags().BoolP("help", "h", false, "show this help")
	root.SetFlagErrorFunc(flagError)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			fmt.Fprint(a.stdout, mainUsage(root, cmds))
			return
		}
		fmt.Fprint(a.stdout, commandHelp(c))
	})
	for _, c := range cmds {
		// Use spells out the flags that matter; cobra would append
		// "[flags]".
		c.DisableFlagsInUseLine = true
		// Flags are listed in the order the command registers them.
		c.Flags().SortFlags = false
		c.Flags().BoolP("help", "h", false, "show this help")
		root.AddCommand(c)
		if c.Name() == "help" {
			root.SetHelpCommand(c)
		}
	}
	registerCompletions(root)
	return root
}

func unknownCommand(name string) error {
	return usageErrorf("unknown command %q (see vfsmount help)", name)
}

// flagError turns a flag that does not parse into a usage error naming
// the command.
func flagError(cmd *cobra.Command, err error) error {
	if !cmd.HasParent() {
		// A word before the bad flag that is no flag was meant as the
		// command, and is the first thing wrong.
		if args := cmd.Flags().Args(); len(args) > 0 {
			return unknownCommand(args[0])
		}
		return usageErrorf("%v (see vfsmount help)", err)
	}
	return usageErrorf("%s: %v (see vfsmount help %s)", cmd.Name(), err, cmd.Name())
}

// exactArgs is cobra.ExactArgs with the usage line in the message and
// exit 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s: want %d argument(s), got %d (usage: %s)", cmd.Name(), n, len(args), cmd.UseLine())
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with the usage line in the message and
// exit 2.
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErrorf("%s: want at least %d argument(s), got %d (usage: %s)", cmd.Name(), n, len(args), cmd.UseLine())
		}
		return nil
	}
}

// newLogger builds the stderr logger the global flags ask for.
func newLogger(w io.Writer, g globalFlags) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if g.Debug {
		opts.Level = slog.LevelDebug
	}
	switch g.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", g.LogFormat)
}

// mainUsage is the help of vfsmount itself: what it is, the commands and
// the global flags.
func mainUsage(root *cobra.Command, cmds []*cobra.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  vfsmount [global flags] COMMAND [flags] [args]\n\nCommands:\n", strings.TrimSpace(root.Long))
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.Name()))
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.Name(), c.Short)
	}
	b.WriteString("\nGlobal flags (also accepted after COMMAND):\n")
	b.WriteString(root.PersistentFlags().FlagUsages())
	b.WriteString(`
Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.
Run "vfsmount help COMMAND" (or COMMAND --help) for a command's flags and an example.
`)
	return b.String()
}

// commandHelp is the help of one command: its usage line, what it does, a
// worked example, its flags and the global ones.
func commandHelp(c *cobra.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n%s\n", c.UseLine(), strings.TrimSpace(c.Long))
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExample:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	fmt.Fprintf(&b, "\nFlags:\n%s", c.LocalFlags().FlagUsages())
	fmt.Fprintf(&b, "\nGlobal flags:\n%s", c.InheritedFlags().FlagUsages())
	return b.String()
}

func helpCommand(*app) *cobra.Command {
	return &cobra.Command{
		Use:               "help [COMMAND]",
		Short:             "show help for vfsmount or one command",
		Long:              `Prints the list of commands, or the flags and a worked example of one command.`,
		Example:           `  $ vfsmount help mount`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeCommandName,
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch len(args) {
			case 0:
				root.HelpFunc()(root, nil)
				return nil
			case 1:
				for _, c := range root.Commands() {
					if c.Name() == args[0] && !c.Hidden {
						c.HelpFunc()(c, nil)
						return nil
					}
				}
				return usageErrorf("help: unknown command %q", args[0])
			}
			return usageErrorf("help: want at most one COMMAND, got %d", len(args))
		},
	}
}
