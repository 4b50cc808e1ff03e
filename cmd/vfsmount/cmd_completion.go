package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// The completion scripts are generated from the command table and the flag
// sets the commands register, so a new command or flag is completed without
// touching this file. Two things the flag sets cannot say come from here:
// the values of an enumerated flag ([enumValues]) and what a positional
// argument is ([argKindOf]). Whether a flag's value is a file or a
// directory comes from its usage placeholder: `FILE` or `DIR`.

var completionShells = []string{"bash", "zsh", "fish"}

// enumValues lists the values of the flags that take one of a fixed set.
func enumValues() map[string][]string {
	return map[string][]string{
		"dialect":    agentbridge.Dialects,
		"log-format": {"text", "json"},
	}
}

func completionCommand() *command {
	return &command{
		Name:    "completion",
		Summary: "print a shell completion script: bash, zsh or fish",
		Usage:   strings.Join(completionShells, "|"),
		Help: `Prints a script that completes, in the named shell, vfsmount's commands, their
flags, the values of --dialect and --log-format, file names for --config and
--audit, and directories for a MOUNTPOINT. make install puts all three
scripts where the shells look for them.

Example:
  $ vfsmount completion bash > /usr/share/bash-completion/completions/vfsmount
  $ source <(vfsmount completion bash)        # this shell only
  $ vfsmount completion zsh > "${fpath[1]}/_vfsmount"
  $ vfsmount completion fish > ~/.config/fish/completions/vfsmount.fish`,
		NArgs: 1,
		Setup: func(fs *pflag.FlagSet) runFunc {
			return func(ctx context.Context, a *app, args []string) error {
				spec := completionSpec()
				switch args[0] {
				case "bash":
					writeBash(a.stdout, spec)
				case "zsh":
					writeZsh(a.stdout, spec)
				case "fish":
					writeFish(a.stdout, spec)
				default:
					return usageErrorf("completion: unknown shell %q (want %s)", args[0], strings.Join(completionShells, ", "))
				}
				return nil
			}
		},
	}
}

// valueKind says how to complete a flag's value.
type valueKind int

const (
	valueNone valueKind = iota // a boolean flag: no value
	valueFree                  // a value nobody can guess (a spec, a size)
	valueEnum                  // one of compFlag.Values
	valueFile                  // a host file
	valueDir                   // a host directory
)

// argKind says what a command's positional arguments are.
type argKind int

const (
	argNone        argKind = iota
	argDir                 // a MOUNTPOINT
	argCommand             // a vfsmount command (help)
	argShell               // a shell name (completion)
	argHostCommand         // a program to run (exec)
)

type compFlag struct {
	Long, Short string
	Usage       string
	Kind        valueKind
	Values      []string // for valueEnum
	Repeatable  bool
}

type compCommand struct {
	Name, Summary string
	Flags         []compFlag // the command's own flags and -h, without the globals
	Args          argKind
}

type compSpec struct {
	Commands []compCommand
	Globals  []compFlag
}

// completionSpec reads the command table and the flag sets.
func completionSpec() compSpec {
	g := defaultGlobals()
	spec := compSpec{Globals: compFlags(g.flagSet())}
	for _, c := range commands() {
		fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
		fs.SortFlags = false
		c.Setup(fs)
		fs.BoolP("help", "h", false, "show this help")
		spec.Commands = append(spec.Commands, compCommand{
			Name: c.Name, Summary: c.Summary, Flags: compFlags(fs), Args: argKindOf(c),
		})
	}
	return spec
}

func argKindOf(c *command) argKind {
	switch {
	case c.Name == "help":
		return argCommand
	case c.Name == "completion":
		return argShell
	case c.Name == "exec":
		return argHostCommand
	case strings.Contains(c.Usage, "MOUNTPOINT"):
		return argDir
	}
	return argNone
}

func compFlags(fs *pflag.FlagSet) []compFlag {
	enums := enumValues()
	var out []compFlag
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		placeholder, usage := pflag.UnquoteUsage(f)
		cf := compFlag{Long: f.Name, Short: f.Shorthand, Usage: firstClause(usage)}
		typ := f.Value.Type()
		cf.Repeatable = strings.HasSuffix(typ, "Array") || strings.HasSuffix(typ, "Slice")
		switch {
		case f.NoOptDefVal != "":
			cf.Kind = valueNone
		case enums[f.Name] != nil:
			cf.Kind, cf.Values = valueEnum, enums[f.Name]
		case placeholder == "FILE":
			cf.Kind = valueFile
		case placeholder == "DIR":
			cf.Kind = valueDir
		default:
			cf.Kind = valueFree
		}
		out = append(out, cf)
	})
	return out
}

// firstClause shortens a flag's usage to what fits a completion menu: up
// to the first "; " or " (".
func firstClause(s string) string {
	for _, sep := range []string{"; ", " ("} {
		if i := strings.Index(s, sep); i > 0 {
			s = s[:i]
		}
	}
	return s
}

func commandNames(spec compSpec) []string {
	names := make([]string, len(spec.Commands))
	for i, c := range spec.Commands {
		names[i] = c.Name
	}
	return names
}

// flagWords lists every spelling of flags: "--config -c --mount -m ...".
func flagWords(flags []compFlag) []string {
	var out []string
	for _, f := range flags {
		out = append(out, "--"+f.Long)
		if f.Short != "" {
			out = append(out, "-"+f.Short)
		}
	}
	return out
}

// valueFlags groups the spellings of every flag that takes a value, over
// all commands and the globals, by how its value completes: a flag name
// means the same thing in every command that has it.
func valueFlags(spec compSpec) (byKind map[valueKind][]string, enums map[string][]string) {
	seen := map[string]bool{}
	byKind = map[valueKind][]string{}
	enums = map[string][]string{}
	add := func(f compFlag) {
		if f.Kind == valueNone || seen[f.Long] {
			return
		}
		seen[f.Long] = true
		words := []string{"--" + f.Long}
		if f.Short != "" {
			words = append(words, "-"+f.Short)
		}
		if f.Kind == valueEnum {
			enums[strings.Join(words, "|")] = f.Values
			return
		}
		byKind[f.Kind] = append(byKind[f.Kind], words...)
	}
	for _, f := range spec.Globals {
		add(f)
	}
	for _, c := range spec.Commands {
		for _, f := range c.Flags {
			add(f)
		}
	}
	return byKind, enums
}

// writeBash writes a bash script: one function that finds the command in
// the words typed so far, completes the value of the flag before the
// cursor, and otherwise offers the command's flags or its positional
// arguments.
func writeBash(w io.Writer, spec compSpec) {
	byKind, enums := valueFlags(spec)
	// A pattern that matches no word stands in when no global flag takes
	// a value, so the case stays valid bash.
	globalValue := []string{"--=="}
	for _, f := range spec.Globals {
		if f.Kind != valueNone {
			globalValue = append(globalValue, "--"+f.Long)
		}
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p(`# bash completion for vfsmount. Generated by "vfsmount completion bash".
# Load it in this shell with: source <(vfsmount completion bash)
# or install it as /usr/share/bash-completion/completions/vfsmount.

_vfsmount() {
    local cur prev cmd="" i w args=""
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    # bash splits "--flag=value" at the "=" (COMP_WORDBREAKS).
    if [[ $cur == "=" ]]; then
        cur=""
    elif [[ $prev == "=" ]] && ((COMP_CWORD >= 2)); then
        prev=${COMP_WORDS[COMP_CWORD-2]}
    fi

    # The command is the first word that is neither a global flag nor its value.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        case $w in
        %s)
            ((i++))
            [[ ${COMP_WORDS[i]} == "=" ]] && ((i++))
            ;;
        -*) ;;
        *)
            cmd=$w
            break
            ;;
        esac
    done

    case $prev in
`, strings.Join(globalValue, "|"))
	if fl := byKind[valueFile]; len(fl) > 0 {
		p("    %s)\n        compopt -o filenames 2>/dev/null\n        mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n        return\n        ;;\n", strings.Join(fl, "|"))
	}
	if fl := byKind[valueDir]; len(fl) > 0 {
		p("    %s)\n        compopt -o filenames 2>/dev/null\n        mapfile -t COMPREPLY < <(compgen -d -- \"$cur\")\n        return\n        ;;\n", strings.Join(fl, "|"))
	}
	for _, k := range sortedKeys(enums) {
		p("    %s)\n        mapfile -t COMPREPLY < <(compgen -W %q -- \"$cur\")\n        return\n        ;;\n", k, strings.Join(enums[k], " "))
	}
	if fl := byKind[valueFree]; len(fl) > 0 {
		p("    %s)\n        return\n        ;;\n", strings.Join(fl, "|"))
	}
	p(`    esac

    local flags=%q
    case $cmd in
    "")
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "$flags --help -h" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W %q -- "$cur")
        fi
        return
        ;;
`, strings.Join(flagWords(spec.Globals), " "), strings.Join(commandNames(spec), " "))
	for _, c := range spec.Commands {
		args := map[argKind]string{argDir: "dirs", argCommand: "commands", argShell: "shells", argHostCommand: "programs"}[c.Args]
		p("    %s)\n        flags+=%q\n        args=%s\n        ;;\n", c.Name, " "+strings.Join(flagWords(c.Flags), " "), args)
	}
	p(`    *)
        return
        ;;
    esac

    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
        return
    fi
    case $args in
    dirs)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        ;;
    commands) mapfile -t COMPREPLY < <(compgen -W %q -- "$cur") ;;
    shells) mapfile -t COMPREPLY < <(compgen -W %q -- "$cur") ;;
    programs) mapfile -t COMPREPLY < <(compgen -c -- "$cur") ;;
    esac
}

complete -F _vfsmount vfsmount
`, strings.Join(commandNames(spec), " "), strings.Join(completionShells, " "))
}

// zshQuote quotes s for a single-quoted zsh word.
func zshQuote(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }

// zshDesc escapes s for the [description] of an _arguments spec and the
// description of a _describe entry.
func zshDesc(s string) string {
	s = strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
	return zshQuote(s)
}

// zshFlagSpecs returns the _arguments specs of flags, one word each.
func zshFlagSpecs(flags []compFlag) []string {
	var out []string
	for _, f := range flags {
		long := "--" + f.Long
		if f.Kind != valueNone {
			long += "="
		}
		var names, excl string
		switch {
		case f.Repeatable:
			excl = "'*'"
		case f.Short != "":
			excl = "'(-" + f.Short + " --" + f.Long + ")'"
		default:
			excl = "'(--" + f.Long + ")'"
		}
		if f.Short != "" {
			names = "{-" + f.Short + "," + long + "}"
		} else {
			names = "'" + long + "'"
		}
		action := ""
		switch f.Kind {
		case valueFree:
			action = ":" + strings.ToLower(f.Long) + ": "
		case valueEnum:
			action = ":" + f.Long + ":(" + strings.Join(f.Values, " ") + ")"
		case valueFile:
			action = ":file:_files"
		case valueDir:
			action = ":directory:_directories"
		}
		out = append(out, excl+names+"'["+zshDesc(f.Usage)+"]"+zshQuote(action)+"'")
	}
	return out
}

// writeZsh writes a zsh completion function for the fpath (#compdef) that
// also works when sourced.
func writeZsh(w io.Writer, spec compSpec) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p(`#compdef vfsmount
# zsh completion for vfsmount. Generated by "vfsmount completion zsh".
# Install it as _vfsmount in a directory of $fpath, or load it in this shell
# with: source <(vfsmount completion zsh)

_vfsmount() {
    local curcontext=$curcontext state line ret=1
    local -a globals commands
    globals=(
`)
	for _, s := range zshFlagSpecs(spec.Globals) {
		p("        %s\n", s)
	}
	p("    )\n    commands=(\n")
	for _, c := range spec.Commands {
		p("        '%s:%s'\n", c.Name, zshDesc(c.Summary))
	}
	p(`    )

    _arguments -C $globals '(-h --help)'{-h,--help}'[show help]' \
        '1:command:->command' '*::argument:->argument' && ret=0
    case $state in
    command)
        _describe -t commands 'vfsmount command' commands && ret=0
        ;;
    argument)
        curcontext=${curcontext%%:*:*}:vfsmount-$words[1]:
        case $words[1] in
`)
	for _, c := range spec.Commands {
		p("        %s)\n            _arguments $globals", c.Name)
		for _, s := range zshFlagSpecs(c.Flags) {
			p(" \\\n                %s", s)
		}
		switch c.Args {
		case argDir:
			p(" \\\n                ':mountpoint:_directories'")
		case argCommand:
			p(" \\\n                '::command:(%s)'", strings.Join(commandNames(spec), " "))
		case argShell:
			p(" \\\n                ':shell:(%s)'", strings.Join(completionShells, " "))
		case argHostCommand:
			p(" \\\n                '*::program:_normal'")
		}
		p(" && ret=0\n            ;;\n")
	}
	p(`        esac
        ;;
    esac
    return ret
}

if [[ $funcstack[1] == _vfsmount ]]; then
    _vfsmount "$@"
else
    compdef _vfsmount vfsmount
fi
`)
}

// fishQuote quotes s as a single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// fishFlag writes the complete line of one flag under condition cond ("" for
// everywhere).
func fishFlag(w io.Writer, cond string, f compFlag) {
	var b strings.Builder
	b.WriteString("complete -c vfsmount")
	if cond != "" {
		b.WriteString(" -n " + fishQuote(cond))
	}
	if f.Short != "" {
		b.WriteString(" -s " + f.Short)
	}
	b.WriteString(" -l " + f.Long)
	switch f.Kind {
	case valueFree:
		b.WriteString(" -x")
	case valueEnum:
		b.WriteString(" -x -a " + fishQuote(strings.Join(f.Values, " ")))
	case valueFile:
		b.WriteString(" -r -F")
	case valueDir:
		b.WriteString(" -x -a '(__fish_complete_directories (commandline -ct))'")
	}
	b.WriteString(" -d " + fishQuote(f.Usage))
	fmt.Fprintln(w, b.String())
}

// writeFish writes fish complete commands: file completion is off unless a
// flag or argument asks for it.
func writeFish(w io.Writer, spec compSpec) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p(`# fish completion for vfsmount. Generated by "vfsmount completion fish".
# Install it as ~/.config/fish/completions/vfsmount.fish, or load it in this
# shell with: vfsmount completion fish | source

complete -c vfsmount -f
`)
	for _, f := range spec.Globals {
		fishFlag(w, "", f)
	}
	for _, c := range spec.Commands {
		p("complete -c vfsmount -n __fish_use_subcommand -a %s -d %s\n", c.Name, fishQuote(c.Summary))
	}
	for _, c := range spec.Commands {
		cond := "__fish_seen_subcommand_from " + c.Name
		p("\n# vfsmount %s\n", c.Name)
		for _, f := range c.Flags {
			fishFlag(w, cond, f)
		}
		switch c.Args {
		case argDir:
			p("complete -c vfsmount -n %s -a '(__fish_complete_directories (commandline -ct))'\n", fishQuote(cond))
		case argCommand:
			p("complete -c vfsmount -n %s -a %s\n", fishQuote(cond), fishQuote(strings.Join(commandNames(spec), " ")))
		case argShell:
			p("complete -c vfsmount -n %s -a %s\n", fishQuote(cond), fishQuote(strings.Join(completionShells, " ")))
		case argHostCommand:
			p("complete -c vfsmount -n %s -a '(__fish_complete_command)'\n", fishQuote(cond))
		}
	}
}
