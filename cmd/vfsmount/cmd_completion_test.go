package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// completionScript runs "vfsmount completion SHELL" in-process and saves
// the script to a file.
func completionScript(t *testing.T, shell string) (script, path string) {
	t.Helper()
	code, stdout, stderr := runCLI("completion", shell)
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stderr)
	path = filepath.Join(t.TempDir(), "vfsmount."+shell)
	writeFile(t, path, stdout)
	return stdout, path
}

// completionEnv is the environment a shell completes vfsmount in: the
// scripts run "vfsmount __complete ..." to ask what to offer, so the
// vfsmount under test is first on $PATH, next to an executable for exec
// to complete.
func completionEnv(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(binary(t), filepath.Join(dir, "vfsmount")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vfsmount-probe"), []byte("#!/bin/sh\n"), 0o755))
	return append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// complete asks the command line, in-process, what to offer for the last
// of args, the way the scripts ask the binary.
func complete(t *testing.T, args ...string) (words []string, directive cobra.ShellCompDirective) {
	t.Helper()
	code, stdout, stderr := runCLI(append([]string{cobra.ShellCompRequestCmd}, args...)...)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, ":"), "the directive ends the output: %q", stdout)
	n, err := strconv.Atoi(last[1:])
	require.NoError(t, err, stdout)
	for _, l := range lines[:len(lines)-1] {
		word, _, _ := strings.Cut(l, "\t")
		words = append(words, word)
	}
	return words, cobra.ShellCompDirective(n)
}

// TestCompletionOffersEverything: every command, and every flag of every
// command, is offered, so none is left out when the commands grow; and
// each script is cobra's, asking the binary what to offer.
func TestCompletionOffersEverything(t *testing.T) {
	for _, shell := range completionShells {
		script, _ := completionScript(t, shell)
		assert.Contains(t, script, cobra.ShellCompRequestCmd, "the %s script asks vfsmount", shell)
	}
	got, _ := complete(t, "")
	assert.ElementsMatch(t, commandNames(), got, "every command")
	root := newApp(io.Discard, io.Discard).rootCommand()
	for _, c := range root.Commands() {
		var want []string
		add := func(f *pflag.Flag) {
			want = append(want, "--"+f.Name)
			if f.Shorthand != "" {
				want = append(want, "-"+f.Shorthand)
			}
		}
		c.LocalFlags().VisitAll(add)
		c.InheritedFlags().VisitAll(add)
		got, _ := complete(t, c.Name(), "-")
		assert.ElementsMatch(t, want, got, "the flags of %s and the global ones", c.Name())
	}
	got, _ = complete(t, "call", "--dialect", "")
	assert.Equal(t, agentbridge.Dialects, got, "the dialects")
}

func TestCompletionSyntax(t *testing.T) {
	for _, shell := range completionShells {
		t.Run(shell, func(t *testing.T) {
			_, path := completionScript(t, shell)
			bin, err := exec.LookPath(shell)
			if err != nil {
				// bash is everywhere this runs; zsh and fish are checked
				// where installed and by the content test otherwise.
				require.NotEqual(t, "bash", shell, "bash must be installed")
				t.Logf("%s not installed: syntax not checked", shell)
				return
			}
			out, err := exec.Command(bin, "-n", path).CombinedOutput()
			assert.NoError(t, err, "%s -n: %s", shell, out)
		})
	}
}

// bashCompletion is the bash-completion package's library, which the bash
// script cobra generates builds on.
const bashCompletion = "/usr/share/bash-completion/bash_completion"

// bashWords splits a command line into COMP_WORDS as readline does: at
// blanks, and with each "=" a word of its own ("=" is in COMP_WORDBREAKS).
// A line ending in a blank ends with an empty word, the one being typed.
func bashWords(line string) []string {
	var words []string
	for _, field := range strings.Split(line, " ") {
		parts := strings.Split(field, "=")
		for i, p := range parts {
			if i > 0 {
				words = append(words, "=")
			}
			if p != "" || len(parts) == 1 {
				words = append(words, p)
			}
		}
	}
	return words
}

// TestCompletionBash drives the bash completion function as readline
// would: COMP_LINE holds the line typed, COMP_WORDS its words, COMP_CWORD
// the one under the cursor, at the end of the line.
func TestCompletionBash(t *testing.T) {
	_, err := os.Stat(bashCompletion)
	require.NoError(t, err, "the bash-completion package must be installed")
	_, path := completionScript(t, "bash")
	env := completionEnv(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "mnt"), 0o755))
	writeFile(t, filepath.Join(dir, "ws.yaml"), "mounts: []\n")

	tests := []struct {
		name string
		line string // the cursor is at its end
		want []string
	}{
		{"command", "vfsmount mo", []string{"mount"}},
		{"every command", "vfsmount ", commandNames()},
		{"global flag", "vfsmount --log-", []string{"--log-format"}},
		{"global flag value", "vfsmount --log-format ", []string{"text", "json"}},
		{"command after global flag", "vfsmount --log-format json ums", nil},
		{"command after global flag value", "vfsmount --log-format json umo", []string{"umount"}},
		{"flag of the command", "vfsmount mount --con", []string{"--config"}},
		{"flag of another command", "vfsmount umount --con", nil},
		{"dialect", "vfsmount call --dialect c", []string{"cursor", "claude", "codex"}},
		{"dialect after =", "vfsmount mcp --dialect=cl", []string{"claude"}},
		{"config file", "vfsmount mount --config ws", []string{"ws.yaml"}},
		{"config file, short flag", "vfsmount serve -c ws.", []string{"ws.yaml"}},
		{"mountpoint is a directory", "vfsmount mount ", []string{"mnt"}},
		{"status mountpoint", "vfsmount status m", []string{"mnt"}},
		{"spec: type or dst first", "vfsmount mount --mount ", []string{"type=", "dst="}},
		// bash replaces only the text after the last "=", so that is
		// what COMPREPLY holds.
		{"spec: the types", "vfsmount mount --mount type=", []string{"git,", "host,", "memory,", "remote,", "skills,"}},
		// A single candidate is escaped as it will be inserted.
		{"spec: one type", "vfsmount mount -m type=me", []string{`memory\,`}},
		{"spec: the keys of the type", `vfsmount mount --mount type=memory\,`,
			[]string{"memory,dst=", "memory,max_bytes=", "memory,max_files=", "memory,persist="}},
		{"spec: one key further on", `vfsmount mount --mount type=host\,dst=/h\,s`, []string{`/h\,src=`}},
		{"spec: no list further on", `vfsmount mount --mount type=host\,dst=/h\,`, nil},
		{"spec: a value is not guessed", `vfsmount mount --mount type=host\,src=`, nil},
		{"shells", "vfsmount completion ", []string{"bash", "zsh", "fish"}},
		{"help takes a command", "vfsmount help ser", []string{"serve"}},
		{"exec takes a program", "vfsmount exec -- vfsmount-pr", []string{"vfsmount-probe"}},
	}
	prog := `source "$1" && source "$2" || exit
COMP_LINE=$3
COMP_POINT=${#COMP_LINE}
COMP_WORDS=("${@:4}")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_TYPE=9 # a Tab
__start_vfsmount
printf '%s\n' "${COMPREPLY[@]}"`
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-c", prog, "bash", bashCompletion, path, tc.line}, bashWords(tc.line)...)
			cmd := exec.Command("bash", args...)
			cmd.Dir, cmd.Env = dir, env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "%s", stderr.String())
			if stderr.Len() > 0 {
				// compopt complains outside a real completion; the
				// candidates are what counts.
				t.Log(stderr.String())
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				// A candidate may be followed by its description.
				if f := strings.Fields(l); len(f) > 0 {
					got = append(got, f[0])
				}
			}
			assert.ElementsMatch(t, tc.want, got, "completing %q", tc.line)
		})
	}
}

// TestCompletionFish asks fish itself what it would complete.
func TestCompletionFish(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Log("fish not installed: TestCompletionOffersEverything covers what its script asks for")
		return
	}
	_, path := completionScript(t, "fish")
	env := completionEnv(t)
	tests := []struct {
		line string
		want []string
	}{
		{"vfsmount mo", []string{"mount"}},
		{"vfsmount call --dialect ", []string{"cursor", "claude", "codex"}},
		{"vfsmount --log-format ", []string{"text", "json"}},
		{"vfsmount mount --con", []string{"--config"}},
		{"vfsmount completion ", []string{"bash", "zsh", "fish"}},
		{"vfsmount mount --mount type=m", []string{"type=memory,"}},
		{"vfsmount mount --mount type=host,", []string{"type=host,dst=", "type=host,ro", "type=host,src="}},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			cmd := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, path, tc.line)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				word, _, _ := strings.Cut(line, "\t")
				got = append(got, word)
			}
			assert.ElementsMatch(t, tc.want, got, "completing %q", tc.line)
		})
	}
}

// zshCapture types a command line into an interactive zsh on a pseudo
// terminal (zsh/zpty), presses Tab, and prints every match the completion
// system adds, one per line: zsh has no non-interactive way to ask.
const zshCapture = `zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT=''"
zpty -w z "autoload -U compinit; compinit -u -D"
zpty -w z "source ${(q)1}"
zpty -w z "compadd () { local -a __hits; builtin compadd -O __hits \"\$@\"; print -rl -- \"\${(@)__hits/#/HIT:}\"; builtin compadd \"\$@\" }"
zpty -w z "echo READY"
zpty -r z line '*READY*'
zpty -r z line '*READY*'
zpty -w -n z "$2"$'\t'
integer idle=0
while (( idle < 40 )); do
  if zpty -rt z line; then
    idle=0
    for l in ${(f)line}; do
      l=${l//$'\r'/}
      [[ $l == *HIT:* ]] && print -r -- ${l#*HIT:}
    done
  else
    (( idle++ )); sleep 0.05
  fi
done
zpty -d z
`

// TestCompletionZsh asks zsh itself what it would complete.
func TestCompletionZsh(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Log("zsh not installed: TestCompletionOffersEverything covers what its script asks for")
		return
	}
	_, path := completionScript(t, "zsh")
	env := completionEnv(t)
	dir := t.TempDir()
	capture := filepath.Join(dir, "capture.zsh")
	writeFile(t, capture, zshCapture)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "mnt"), 0o755))
	writeFile(t, filepath.Join(dir, "ws.yaml"), "mounts: []\n")

	tests := []struct {
		line string
		want []string
	}{
		{"vfsmount mo", []string{"mount"}},
		{"vfsmount call --dialect ", []string{"cursor", "claude", "codex"}},
		{"vfsmount --log-format ", []string{"text", "json"}},
		{"vfsmount mount --config w", []string{"ws.yaml"}},
		{"vfsmount status ", []string{"mnt"}},
		{"vfsmount completion ", []string{"bash", "zsh", "fish"}},
		{"vfsmount mount --mount type=host,", []string{"type=host,dst=", "type=host,ro", "type=host,src="}},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "zsh", "-f", capture, path, tc.line)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			seen := map[string]bool{}
			var got []string
			for _, w := range strings.Fields(string(out)) {
				if !seen[w] {
					seen[w] = true
					got = append(got, w)
				}
			}
			assert.ElementsMatch(t, tc.want, got, "completing %q", tc.line)
		})
	}
}

func TestCompletionUnknownShell(t *testing.T) {
	code, stdout, stderr := runCLI("completion", "tcsh")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "vfsmount: completion: unknown shell \"tcsh\" (want bash, zsh, fish)\n", stderr)
}

// TestCompletionFlagKinds: how each kind of flag value completes, as the
// binary tells the scripts.
func TestCompletionFlagKinds(t *testing.T) {
	tests := []struct {
		flag   string
		args   []string // the last one is being completed
		want   cobra.ShellCompDirective
		values []string
	}{
		{"config", []string{"mount", "--config", ""}, cobra.ShellCompDirectiveFilterFileExt, nil},
		{"audit", []string{"mount", "--audit", ""}, cobra.ShellCompDirectiveFilterFileExt, nil},
		{"cache-dir", []string{"mount", "--cache-dir", ""}, cobra.ShellCompDirectiveFilterDirs, nil},
		{"mountpoint", []string{"serve", "--mountpoint", ""}, cobra.ShellCompDirectiveFilterDirs, nil},
		{"dialect", []string{"call", "--dialect", ""}, cobra.ShellCompDirectiveNoFileComp, agentbridge.Dialects},
		{"log-format", []string{"--log-format", ""}, cobra.ShellCompDirectiveNoFileComp, []string{"text", "json"}},
		{"mount", []string{"mount", "--mount", ""}, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp, []string{"dst=", "type="}},
		{"listen", []string{"serve", "--listen", ""}, cobra.ShellCompDirectiveNoFileComp, nil},
		// --debug takes no value: what follows is the MOUNTPOINT.
		{"debug", []string{"mount", "--debug", ""}, cobra.ShellCompDirectiveFilterDirs, nil},
	}
	for _, tc := range tests {
		got, directive := complete(t, tc.args...)
		assert.Equal(t, tc.want, directive, "--%s", tc.flag)
		assert.Equal(t, tc.values, got, "--%s", tc.flag)
	}
}

// TestCompletionMountSpec: a --mount spec completes from the mount type
// registry, one pair at a time, keeping what was typed.
func TestCompletionMountSpec(t *testing.T) {
	const more = cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	tests := []struct {
		name, typed string
		want        []string
		directive   cobra.ShellCompDirective
	}{
		{"type or dst first", "", []string{"dst=", "type="}, more},
		{"a key by prefix", "t", []string{"type="}, more},
		{"every type", "type=", []string{"type=git,", "type=host,", "type=memory,", "type=remote,", "type=skills,"}, more},
		{"a type by prefix", "type=m", []string{"type=memory,"}, more},
		{"the keys of the type", "type=memory,", []string{"type=memory,dst=", "type=memory,max_bytes=", "type=memory,max_files=", "type=memory,persist="}, more},
		{"a boolean key is bare", "type=host,r", []string{"type=host,ro"}, more},
		{"an alias counts as given", "type=host,target=/h,s", []string{"type=host,target=/h,src="}, more},
		{"dst first, then the type", "dst=/x,t", []string{"dst=/x,type="}, more},
		{"an unknown type has dst", "type=bogus,", []string{"type=bogus,dst="}, more},
		{"a value is not guessed", "type=host,src=", nil, cobra.ShellCompDirectiveNoFileComp},
		{"nothing left", "type=memory,dst=/m,max_bytes=1G,max_files=9,persist=f,", nil, more},
		{"no list past an = after a comma", "type=host,dst=/h,", nil, cobra.ShellCompDirectiveNoFileComp},
		{"one candidate there", "type=host,dst=/h,s", []string{"type=host,dst=/h,src="}, more},
		{"the same with --flag=", "--mount=type=m", []string{"type=memory,"}, more},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"mount", "--mount", tc.typed}
			if strings.HasPrefix(tc.typed, "--") {
				args = []string{"mount", tc.typed}
			}
			got, directive := complete(t, args...)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.directive, directive)
		})
	}
	// Every type offers dst and exactly the keys it declares.
	for name, mt := range mountTypes() {
		want := []string{"type=" + name + ",dst="}
		for _, k := range sortedKeys(mt.Keys) {
			w := "type=" + name + "," + k
			if mt.Keys[k].Kind != kindBool {
				w += "="
			}
			want = append(want, w)
		}
		got, _ := complete(t, "mount", "--mount", "type="+name+",")
		assert.ElementsMatch(t, want, got, "type %s", name)
	}
}
