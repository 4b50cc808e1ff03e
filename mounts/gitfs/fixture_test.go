package gitfs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Fixture repositories are built with the git CLI, so the objects under
// test are exactly what git writes: loose objects, packs, and deltas.

// fixtureTime is the committer time of the first fixture commit; commit i
// is i hours later.
var fixtureTime = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// bigSize is the size of the large blob at HEAD.
const bigSize = 50 << 20

// gitEnv isolates git from the machine's configuration.
func gitEnv(when time.Time) []string {
	date := fmt.Sprintf("@%d +0000", when.Unix())
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@example.com",
		"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@example.com",
		"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date,
	)
}

// gitIn runs git in dir and returns its trimmed stdout.
func gitIn(t testing.TB, dir string, when time.Time, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(when)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoErrorf(t, cmd.Run(), "git %s: %s", strings.Join(args, " "), errb.String())
	return strings.TrimSpace(out.String())
}

func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gitIn(t, dir, fixtureTime, nil, args...)
}

func writeFile(t testing.TB, dir, name, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), mode))
	require.NoError(t, os.Chmod(p, mode))
}

// initRepo makes an empty non-bare repository on branch main.
func initRepo(t testing.TB, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	runGit(t, dir, "init", "-q", "-b", "main")
}

// commitAll commits the worktree at fixtureTime + i hours and returns the SHA.
func commitAll(t testing.TB, dir string, i int, msg string) string {
	t.Helper()
	when := fixtureTime.Add(time.Duration(i) * time.Hour)
	gitIn(t, dir, when, nil, "add", "-A")
	gitIn(t, dir, when, nil, "commit", "-q", "--allow-empty", "-m", msg)
	return gitIn(t, dir, when, nil, "rev-parse", "HEAD")
}

// bigContent returns the large blob's content: text lines, so it compresses
// and deltifies as source files do, n bytes long.
func bigContent(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %09d %016x the quick brown fox jumps over the lazy dog\n", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	return b.Bytes()[:n]
}

// fixture is the main repository of the tests.
type fixture struct {
	dir     string   // its worktree
	commits []string // oldest first; the last is HEAD
	big     []byte   // big.bin at HEAD
	sub     string   // the SHA the submodule entry pins
}

func (fx *fixture) head() string { return fx.commits[len(fx.commits)-1] }

// headTime is the committer time of HEAD.
func (fx *fixture) headTime() time.Time {
	return fixtureTime.Add(time.Duration(len(fx.commits)-1) * time.Hour)
}

var (
	fixtureOnce sync.Once
	fixtureVal  *fixture
	fixtureRoot string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

// mainFixture builds the main fixture once per test binary: nested
// directories, an executable, symlinks (relative, to a directory,
// absolute, dangling), a submodule entry, an empty blob, a 50 MiB blob,
// names with spaces and non-ASCII letters, and a history repacked so the
// pack holds deltas (the large blob at HEAD among them).
func mainFixture(t testing.TB) *fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		root, err := os.MkdirTemp("", "gitfs-fixture-")
		require.NoError(t, err)
		fixtureRoot = root
		fixtureVal = buildMainFixture(t, filepath.Join(root, "repo"))
	})
	require.NotNil(t, fixtureVal, "main fixture failed to build earlier")
	return fixtureVal
}

func buildMainFixture(t testing.TB, dir string) *fixture {
	fx := &fixture{dir: dir}
	initRepo(t, dir)
	big := bigContent(bigSize + 100<<10)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644))
	var gen strings.Builder
	for i := 0; i < 20; i++ {
		for j := 0; j < 200; j++ {
			fmt.Fprintf(&gen, "commit %d line %d: some source text that changes a little\n", i, j)
		}
		writeFile(t, dir, "src/gen.txt", gen.String(), 0o644)
		fx.commits = append(fx.commits, commitAll(t, dir, i, fmt.Sprintf("commit %d", i)))
	}
	writeFile(t, dir, "README.md", "# fixture\n", 0o644)
	writeFile(t, dir, "a/b/c/deep.txt", "deep\n", 0o644)
	writeFile(t, dir, "a/b/sibling.txt", "sibling\n", 0o644)
	writeFile(t, dir, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, dir, "dir with space/naïve ünïcode.txt", "unicode\n", 0o644)
	writeFile(t, dir, "empty.txt", "", 0o644)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "links"), 0o755))
	for name, target := range map[string]string{
		"rel": "../a/b/c/deep.txt", "dir": "../a/b", "abs": "/etc/hostname", "dangling": "nowhere/at/all",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, "links", name)))
	}
	// HEAD's big blob is the smaller one, so git stores it as a delta
	// against the previous version.
	fx.big = big[:bigSize]
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.bin"), fx.big, 0o644))
	fx.sub = fx.commits[0]
	writeFile(t, dir, ".gitmodules", "[submodule \"vendor/sub\"]\n\tpath = vendor/sub\n\turl = https://example.com/sub.git\n", 0o644)
	// The gitlink goes in after "add -A", which would stage its removal
	// (there is no checkout of the submodule).
	when := fixtureTime.Add(time.Duration(len(fx.commits)) * time.Hour)
	gitIn(t, dir, when, nil, "add", "-A")
	gitIn(t, dir, when, nil, "update-index", "--add", "--cacheinfo", "160000,"+fx.sub+",vendor/sub")
	gitIn(t, dir, when, nil, "commit", "-q", "-m", "the tree")
	fx.commits = append(fx.commits, gitIn(t, dir, when, nil, "rev-parse", "HEAD"))
	runGit(t, dir, "tag", "light", fx.commits[5])
	gitIn(t, dir, fixtureTime, nil, "tag", "-a", "-m", "annotated", "annotated", fx.commits[10])
	runGit(t, dir, "repack", "-adfq", "--depth=50", "--window=50")
	return fx
}

// smallRepo makes a repository whose only commit holds files (name ->
// content) and returns its directory and HEAD.
func smallRepo(t testing.TB, files map[string]string) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	initRepo(t, dir)
	for name, content := range files {
		writeFile(t, dir, name, content, 0o644)
	}
	return dir, commitAll(t, dir, 0, "small")
}
