package testutil

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The git helpers make repositories with the git CLI, isolated from the
// machine's configuration (no global or system config), as one fixed
// identity at fixed dates, so a repository of the same files has the same
// commit ids on every machine and every run.

// GitTime is the author and committer date of the commits made by [Git],
// [GitCommit] and [GitRepo].
var GitTime = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// GitName and GitEmail are the author and committer of every commit the
// helpers make.
const (
	GitName  = "Test"
	GitEmail = "test@example.com"
)

// GitEnv is the environment of the helpers' git: the process's own, with
// the machine's git configuration left out and commits by [GitName] at when.
func GitEnv(when time.Time) []string {
	date := fmt.Sprintf("@%d +0000", when.Unix())
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME="+GitName, "GIT_AUTHOR_EMAIL="+GitEmail, "GIT_AUTHOR_DATE="+date,
		"GIT_COMMITTER_NAME="+GitName, "GIT_COMMITTER_EMAIL="+GitEmail, "GIT_COMMITTER_DATE="+date,
	)
}

// GitAt runs git with args in dir, in [GitEnv](when), with stdin when
// non-nil, and returns its stdout with surrounding space trimmed. It fails
// the test with git's stderr when git fails.
func GitAt(tb testing.TB, dir string, when time.Time, stdin io.Reader, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = GitEnv(when)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// Git runs git with args in dir at [GitTime]; see [GitAt].
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return GitAt(tb, dir, GitTime, nil, args...)
}

// GitInit makes dir (and its parents) and an empty repository in it, on
// branch main.
func GitInit(tb testing.TB, dir string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	Git(tb, dir, "init", "-q", "-b", "main")
}

// WriteFiles writes files (slash-separated name relative to dir -> content)
// under dir, mode 0644, making their directories.
func WriteFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// GitCommit writes files (see [WriteFiles]) into the work tree dir,
// commits the whole work tree (`add -A`; the commit may be empty) with
// message msg at [GitTime], and returns the new HEAD.
func GitCommit(tb testing.TB, dir string, files map[string]string, msg string) string {
	tb.Helper()
	return GitCommitAt(tb, dir, GitTime, files, msg)
}

// GitCommitAt is [GitCommit] dated when.
func GitCommitAt(tb testing.TB, dir string, when time.Time, files map[string]string, msg string) string {
	tb.Helper()
	WriteFiles(tb, dir, files)
	GitAt(tb, dir, when, nil, "add", "-A")
	GitAt(tb, dir, when, nil, "commit", "-q", "--allow-empty", "-m", msg)
	return GitAt(tb, dir, when, nil, "rev-parse", "HEAD")
}

// GitRepo makes a repository, in a directory of its own named "repo" under
// a new temporary directory, on branch main, with one commit of files (see
// [WriteFiles]) whose message is "one", and returns the directory and the
// commit's id.
func GitRepo(tb testing.TB, files map[string]string) (dir, commit string) {
	tb.Helper()
	dir = filepath.Join(tb.TempDir(), "repo")
	GitInit(tb, dir)
	return dir, GitCommit(tb, dir, files, "one")
}
