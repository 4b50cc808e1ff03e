package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// The completion scripts are cobra's. Each asks the binary being completed
// (its hidden __complete command) what to offer for the words typed so
// far, so the scripts know every command and flag there is without being
// regenerated. What cobra cannot know is said here: the values of a flag,
// by its name ([flagCompletions]), or else by the placeholder of its usage
// (`FILE` a host file, `DIR` a host directory); and, where each command is
// declared, what its positional arguments are (its ValidArgsFunction, one
// of the complete* functions below).

var completionShells = []string{"bash", "zsh", "fish"}

func completionCommand(a *app) *cobra.Command {
	var noDesc bool
	cmd := &cobra.Command{
		Use:   "completion " + strings.Join(completionShells, "|"),
		Short: "print a shell completion script: bash, zsh or fish",
		Long: `Prints a script that completes, in the named shell, vfsmount's commands, their
flags, the values of --dialect and --log-format, the type and keys of a
--mount spec, file names for --config and --audit, and directories for a
MOUNTPOINT. The script asks the vfsmount it completes what to offer (its
hidden __complete command), so it keeps up with that binary. The bash script
needs the bash-completion package. make install puts all three scripts where
the shells look for them.`,
		Example: `  $ vfsmount completion bash > /usr/share/bash-completion/completions/vfsmount
  $ source <(vfsmount completion bash)        # this shell only
  $ vfsmount completion zsh > "${fpath[1]}/_vfsmount"
  $ vfsmount completion fish > ~/.config/fish/completions/vfsmount.fish`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeShell,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, w := cmd.Root(), a.stdout
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(w, !noDesc)
			case "zsh":
				if noDesc {
					return root.GenZshCompletionNoDesc(w)
				}
				return root.GenZshCompletion(w)
			case "fish":
				return root.GenFishCompletion(w, !noDesc)
			}
			return usageErrorf("completion: unknown shell %q (want %s)", args[0], strings.Join(completionShells, ", "))
		},
	}
	cmd.Flags().BoolVar(&noDesc, "no-descriptions", false, "leave out the descriptions of commands, flags and values")
	return cmd
}

// flagCompletions completes the values of flags by name: a flag means the
// same in every command that has it.
func flagCompletions() map[string]cobra.CompletionFunc {
	return map[string]cobra.CompletionFunc{
		"dialect":    fixedValues(agentbridge.Dialects...),
		"log-format": fixedValues("text", "json"),
		"mount":      completeMountSpec,
	}
}

// completeMountSpec completes a --mount SPEC as it is typed, one key=value
// pair at a time, from the mount type registry: type= offers every type,
// and a key the keys the chosen type accepts (type and dst until a type is
// chosen), less those already given. The pairs typed so far are kept; no
// value but the type is guessed.
//
// Past an "=" that follows a comma, only a unique completion is offered.
// bash splits words at "=", and cobra's bash script, given several
// candidates there, inserts them unescaped over a word in which bash
// escaped the comma ("\,"), garbling the line; one candidate it escapes
// and inserts right. Every shell gets the same, so they behave alike.
func completeMountSpec(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	out, directive := mountSpecCandidates(toComplete)
	if eq := strings.LastIndexByte(toComplete, '='); len(out) > 1 && strings.Contains(toComplete[:max(eq, 0)], ",") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return out, directive
}

func mountSpecCandidates(toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	// The spec goes on after a completion: no space, and no file names.
	const more = cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	reg := mountTypes()
	done, cur := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done, cur = toComplete[:i+1], toComplete[i+1:]
	}
	typ, given := "", map[string]bool{}
	for _, item := range strings.Split(done, ",") {
		k, v, _ := strings.Cut(item, "=")
		k = canonicalKey(strings.TrimSpace(k))
		given[k] = true
		if k == "type" {
			typ = v
		}
	}
	if prefix, ok := strings.CutPrefix(cur, "type="); ok {
		var out []cobra.Completion
		for _, name := range sortedKeys(reg) {
			if strings.HasPrefix(name, prefix) {
				out = append(out, cobra.CompletionWithDesc(done+"type="+name+",", reg[name].Doc))
			}
		}
		return out, more
	}
	if strings.Contains(cur, "=") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	keys := map[string]keySpec{
		"type": {Doc: "the mount type: " + reg.names()},
		"dst":  {Doc: "where it appears: an absolute workspace path such as /memory"},
	}
	if mt, ok := reg[typ]; ok {
		for k, ks := range mt.Keys {
			keys[k] = ks
		}
	}
	var out []cobra.Completion
	for _, k := range sortedKeys(keys) {
		if given[k] || !strings.HasPrefix(k, cur) {
			continue
		}
		word := done + k
		if keys[k].Kind != kindBool { // a bare boolean key means true
			word += "="
		}
		out = append(out, cobra.CompletionWithDesc(word, keys[k].Doc))
	}
	return out, more
}

// registerCompletions gives the value of every flag of the tree its
// completion: by name ([flagCompletions]), a host file for a `FILE`, a host
// directory for a `DIR`, and none for any other value (a spec, a size, an
// address: nobody can guess it, and file names would mislead). A boolean
// flag takes no value.
func registerCompletions(root *cobra.Command) {
	byName := flagCompletions()
	register := func(c *cobra.Command, fs *pflag.FlagSet) {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.NoOptDefVal != "" {
				return
			}
			placeholder, _ := pflag.UnquoteUsage(f)
			fn := byName[f.Name]
			switch {
			case fn != nil:
			case placeholder == "FILE":
				fn = completeFile
			case placeholder == "DIR":
				fn = completeDir
			default:
				fn = cobra.NoFileCompletions
			}
			// Each flag is registered once, the global ones on the
			// root and every other one on its own command, so an
			// error is a bug in this function.
			if err := c.RegisterFlagCompletionFunc(f.Name, fn); err != nil {
				panic(err)
			}
		})
	}
	register(root, root.PersistentFlags())
	for _, c := range root.Commands() {
		register(c, c.LocalNonPersistentFlags())
	}
}

// fixedValues completes one of values.
func fixedValues(values ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(values, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func withPrefix(words []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// completeFile completes a host file. No extension to filter by means
// every file; unlike ShellCompDirectiveDefault, which leaves bash to
// readline's fallback, it has each script list the files itself (bash by
// bash-completion's _filedir), so every shell offers the same.
func completeFile(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterFileExt
}

// completeDir completes a host directory.
func completeDir(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// completeMountpoint completes the MOUNTPOINT of mount, umount and status,
// their one argument: a host directory.
func completeMountpoint(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeDir(nil, nil, toComplete)
}

// completeShell completes the shell completion takes.
func completeShell(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return fixedValues(completionShells...)(nil, nil, toComplete)
}

// completeCommandName completes the COMMAND help takes.
func completeCommandName(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, c := range cmd.Root().Commands() {
		if !c.Hidden && strings.HasPrefix(c.Name(), toComplete) {
			out = append(out, cobra.CompletionWithDesc(c.Name(), c.Short))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeProgram completes the CMD of exec as a shell completes a command
// name, from the directories of $PATH (a name with a slash is a path);
// its arguments are host files.
func completeProgram(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 || strings.Contains(toComplete, "/") {
		return nil, cobra.ShellCompDirectiveDefault
	}
	var out []cobra.Completion
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if seen[name] || !strings.HasPrefix(name, toComplete) {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}
