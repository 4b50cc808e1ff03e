package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestCompletionMentionsEverything: each script names every command and
// every flag of every command, so none is left out when the table grows.
func TestCompletionMentionsEverything(t *testing.T) {
	spec := completionSpec()
	// How each script spells a long flag.
	spell := map[string]func(string) string{
		"bash": func(f string) string { return "--" + f },
		"zsh":  func(f string) string { return "--" + f },
		"fish": func(f string) string { return "-l " + f + " " },
	}
	for _, shell := range completionShells {
		t.Run(shell, func(t *testing.T) {
			script, _ := completionScript(t, shell)
			require.NotEmpty(t, script)
			has := func(s string) bool { return strings.Contains(script, s) }
			for _, c := range spec.Commands {
				assert.True(t, has(c.Name), "command %s", c.Name)
				for _, f := range c.Flags {
					assert.True(t, has(spell[shell](f.Long)), "flag --%s of %s", f.Long, c.Name)
				}
			}
			for _, f := range spec.Globals {
				assert.True(t, has(spell[shell](f.Long)), "global flag --%s", f.Long)
			}
			assert.True(t, has("cursor claude codex"), "the dialects")
		})
	}
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

// TestCompletionBash drives the bash completion function as readline would:
// COMP_WORDS holds the words typed, COMP_CWORD the one under the cursor.
func TestCompletionBash(t *testing.T) {
	_, path := completionScript(t, "bash")
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "mnt"), 0o755))
	writeFile(t, filepath.Join(dir, "ws.yaml"), "mounts: []\n")

	tests := []struct {
		name  string
		words []string // the last one is under the cursor
		want  []string
	}{
		{"command", []string{"mo"}, []string{"mount"}},
		{"every command", []string{""}, commandNames(completionSpec())},
		{"global flag", []string{"--log-"}, []string{"--log-format"}},
		{"global flag value", []string{"--log-format", ""}, []string{"text", "json"}},
		{"command after global flag", []string{"--log-format", "json", "ums"}, nil},
		{"command after global flag value", []string{"--log-format", "json", "umo"}, []string{"umount"}},
		{"flag of the command", []string{"mount", "--con"}, []string{"--config"}},
		{"flag of another command", []string{"umount", "--con"}, nil},
		{"dialect", []string{"call", "--dialect", "c"}, []string{"cursor", "claude", "codex"}},
		{"dialect after =", []string{"mcp", "--dialect", "=", "cl"}, []string{"claude"}},
		{"config file", []string{"mount", "--config", "ws"}, []string{"ws.yaml"}},
		{"config file, short flag", []string{"serve", "-c", "ws."}, []string{"ws.yaml"}},
		{"mountpoint is a directory", []string{"mount", ""}, []string{"mnt"}},
		{"status mountpoint", []string{"status", "m"}, []string{"mnt"}},
		{"a spec is not guessed", []string{"mount", "--mount", ""}, nil},
		{"shells", []string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{"help takes a command", []string{"help", "ser"}, []string{"serve"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			words := append([]string{"vfsmount"}, tc.words...)
			var quoted []string
			for _, w := range words {
				quoted = append(quoted, "'"+w+"'")
			}
			prog := `source "$1"
COMP_WORDS=(` + strings.Join(quoted, " ") + `)
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_vfsmount
printf '%s\n' "${COMPREPLY[@]}"`
			cmd := exec.Command("bash", "-c", prog, "bash", path)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			got := strings.Fields(string(out))
			assert.ElementsMatch(t, tc.want, got, "completing %q", strings.Join(words, " "))
		})
	}
}

// TestCompletionFish asks fish itself what it would complete.
func TestCompletionFish(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Log("fish not installed: TestCompletionMentionsEverything covers its script")
		return
	}
	_, path := completionScript(t, "fish")
	tests := []struct {
		line string
		want []string
	}{
		{"vfsmount mo", []string{"mount"}},
		{"vfsmount call --dialect ", []string{"cursor", "claude", "codex"}},
		{"vfsmount --log-format ", []string{"text", "json"}},
		{"vfsmount mount --con", []string{"--config"}},
		{"vfsmount completion ", []string{"bash", "zsh", "fish"}},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			out, err := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, path, tc.line).CombinedOutput()
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
		t.Log("zsh not installed: TestCompletionMentionsEverything covers its script")
		return
	}
	_, path := completionScript(t, "zsh")
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
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "zsh", "-f", capture, path, tc.line)
			cmd.Dir = dir
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

func TestCompletionFlagKinds(t *testing.T) {
	spec := completionSpec()
	kinds := map[string]valueKind{}
	for _, f := range spec.Globals {
		kinds[f.Long] = f.Kind
	}
	for _, c := range spec.Commands {
		for _, f := range c.Flags {
			kinds[f.Long] = f.Kind
		}
	}
	for flag, want := range map[string]valueKind{
		"config": valueFile, "audit": valueFile, "cache-dir": valueDir, "mountpoint": valueDir,
		"dialect": valueEnum, "log-format": valueEnum, "mount": valueFree, "debug": valueNone,
	} {
		assert.Equal(t, want, kinds[flag], "--%s", flag)
	}
}
