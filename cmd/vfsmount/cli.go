package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// command is one subcommand. Adding one is a new cmd_NAME.go returning a
// *command, plus a line in [commands].
type command struct {
	Name string
	// Summary is one line for the command list.
	Summary string
	// Usage follows "vfsmount NAME ": "[--config FILE] MOUNTPOINT".
	Usage string
	// Help is the long description, ending with a worked example.
	Help string
	// NArgs is the exact number of positional arguments, or -1 for any.
	NArgs int
	// Setup registers the command's own flags on fs and returns the
	// function that runs it once fs is parsed.
	Setup func(fs *pflag.FlagSet) runFunc
}

type runFunc func(ctx context.Context, a *app, args []string) error

// commands lists every subcommand, in the order help shows them.
func commands() []*command {
	return []*command{
		mountCommand(),
		umountCommand(),
		statusCommand(),
		toolsCommand(),
		callCommand(),
		serveCommand(),
		mcpCommand(),
		execCommand(),
		completionCommand(),
		versionCommand(),
		helpCommand(),
	}
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// globalFlags are accepted before the subcommand and by every subcommand.
type globalFlags struct {
	LogFormat  string
	Debug      bool
	AllowOther bool
}

func defaultGlobals() globalFlags { return globalFlags{LogFormat: "text"} }

// flagSet binds the global flags to g. The current values of g are the
// defaults, so flags given before the subcommand survive the subcommand's
// own parse.
func (g *globalFlags) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("global", pflag.ContinueOnError)
	fs.StringVar(&g.LogFormat, "log-format", g.LogFormat, "log format on stderr: `text` or json")
	fs.BoolVar(&g.Debug, "debug", g.Debug, "debug logs, including every FUSE request")
	fs.BoolVar(&g.AllowOther, "allow-other", g.AllowOther, "let other users see the mount (FUSE allow_other; needs user_allow_other in /etc/fuse.conf unless root)")
	return fs
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
}

func newApp(stdout, stderr io.Writer) *app {
	return &app{stdout: stdout, stderr: stderr, globals: defaultGlobals()}
}

// run runs the command line args in-process and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return newApp(stdout, stderr).main(ctx, args)
}

// main runs the command line args and returns the exit code. On failure it
// prints one line, "vfsmount: problem", to stderr.
func (a *app) main(ctx context.Context, args []string) int {
	err := a.dispatch(ctx, args)
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != nil {
			fmt.Fprintf(a.stderr, "vfsmount: %s\n", errorLine(err))
		}
	}
	return exitCode(err)
}

func (a *app) dispatch(ctx context.Context, args []string) error {
	top := a.globals.flagSet()
	top.SetOutput(io.Discard)
	top.SetInterspersed(false)
	var help bool
	top.BoolVarP(&help, "help", "h", false, "")
	if err := top.Parse(args); err != nil {
		return usageErrorf("%v (see vfsmount help)", err)
	}
	rest := top.Args()
	if help || len(rest) == 0 {
		w := a.stdout
		if !help {
			w = a.stderr
		}
		fmt.Fprint(w, mainUsage())
		if !help {
			return &exitError{code: exitUsage}
		}
		return nil
	}
	cmd := findCommand(rest[0])
	if cmd == nil {
		return usageErrorf("unknown command %q (see vfsmount help)", rest[0])
	}

	fs := pflag.NewFlagSet("vfsmount "+cmd.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	runCmd := cmd.Setup(fs)
	fs.BoolP("help", "h", false, "show this help")
	fs.AddFlagSet(a.globals.flagSet())
	if err := fs.Parse(rest[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(a.stdout, commandHelp(cmd))
			return nil
		}
		return usageErrorf("%s: %v (see vfsmount help %s)", cmd.Name, err, cmd.Name)
	}
	if h, _ := fs.GetBool("help"); h {
		fmt.Fprint(a.stdout, commandHelp(cmd))
		return nil
	}
	if cmd.NArgs >= 0 && fs.NArg() != cmd.NArgs {
		return usageErrorf("%s: want %d argument(s), got %d (usage: vfsmount %s %s)",
			cmd.Name, cmd.NArgs, fs.NArg(), cmd.Name, cmd.Usage)
	}
	logger, err := newLogger(a.stderr, a.globals)
	if err != nil {
		return err
	}
	a.logger = logger
	return runCmd(ctx, a, fs.Args())
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

func mainUsage() string {
	var b strings.Builder
	b.WriteString(`vfsmount builds an agent's workspace from several sources and serves it as
one FUSE filesystem.

Usage:
  vfsmount [global flags] COMMAND [flags] [args]

Commands:
`)
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.Name))
	}
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
	b.WriteString("\nGlobal flags (also accepted after COMMAND):\n")
	g := defaultGlobals()
	b.WriteString(g.flagSet().FlagUsages())
	b.WriteString(`
Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.
Run "vfsmount help COMMAND" (or COMMAND --help) for a command's flags and an example.
`)
	return b.String()
}

func commandHelp(c *command) string {
	fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
	fs.SortFlags = false
	c.Setup(fs)
	fs.BoolP("help", "h", false, "show this help")
	g := defaultGlobals()
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: vfsmount %s %s\n\n%s\n", c.Name, c.Usage, strings.TrimSpace(c.Help))
	fmt.Fprintf(&b, "\nFlags:\n%s", fs.FlagUsages())
	fmt.Fprintf(&b, "\nGlobal flags:\n%s", g.flagSet().FlagUsages())
	return b.String()
}

func helpCommand() *command {
	return &command{
		Name:    "help",
		Summary: "show help for vfsmount or one command",
		Usage:   "[COMMAND]",
		Help: `Prints the list of commands, or the flags and a worked example of one command.

Example:
  $ vfsmount help mount`,
		NArgs: -1,
		Setup: func(fs *pflag.FlagSet) runFunc {
			return func(ctx context.Context, a *app, args []string) error {
				switch len(args) {
				case 0:
					fmt.Fprint(a.stdout, mainUsage())
					return nil
				case 1:
					c := findCommand(args[0])
					if c == nil {
						return usageErrorf("help: unknown command %q", args[0])
					}
					fmt.Fprint(a.stdout, commandHelp(c))
					return nil
				}
				return usageErrorf("help: want at most one COMMAND, got %d", len(args))
			}
		},
	}
}
