// Package gittest builds the git repositories the tests of gitfs and of
// its object store read, with the git CLI, so the objects under test are
// exactly what git writes: loose objects, packs, and deltas.
//
// # The main fixture
//
// [MainFixture] is built once per test binary and removed by [Main]: a
// test package that uses it runs its tests through Main from its TestMain.
package gittest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
)

// Time is the committer time of the first fixture commit; commit i is i
// hours later. It is the shared helpers' [testutil.GitTime].
var Time = testutil.GitTime

// BigSize is the size of the large blob at the main fixture's HEAD.
const BigSize = 50 << 20

// Env isolates git from the machine's configuration and dates its commits
// at when: [testutil.GitEnv].
func Env(when time.Time) []string { return testutil.GitEnv(when) }

// GitAt runs git in dir at when, with stdin when non-nil, and returns its
// trimmed stdout: [testutil.GitAt].
func GitAt(t testing.TB, dir string, when time.Time, stdin []byte, args ...string) string {
	t.Helper()
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	return testutil.GitAt(t, dir, when, in, args...)
}

// Git runs git in dir at Time and returns its trimmed stdout.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return GitAt(t, dir, Time, nil, args...)
}

// WriteFile writes content to dir/name with mode, making its directories.
func WriteFile(t testing.TB, dir, name, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), mode))
	require.NoError(t, os.Chmod(p, mode))
}

// InitRepo makes an empty non-bare repository on branch main.
func InitRepo(t testing.TB, dir string) {
	t.Helper()
	testutil.GitInit(t, dir)
}

// CommitAll commits the worktree at Time + i hours and returns the SHA.
func CommitAll(t testing.TB, dir string, i int, msg string) string {
	t.Helper()
	return testutil.GitCommitAt(t, dir, Time.Add(time.Duration(i)*time.Hour), nil, msg)
}

// BigContent returns the large blob's content: text lines, so it
// compresses and deltifies as source files do, n bytes long.
func BigContent(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %09d %016x the quick brown fox jumps over the lazy dog\n", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	return b.Bytes()[:n]
}

// Fixture is the main repository of the tests.
type Fixture struct {
	Dir     string   // its worktree
	Commits []string // oldest first; the last is HEAD
	Big     []byte   // big.bin at HEAD
	Sub     string   // the SHA the submodule entry pins
}

// Head is the SHA of HEAD.
func (fx *Fixture) Head() string { return fx.Commits[len(fx.Commits)-1] }

// HeadTime is the committer time of HEAD.
func (fx *Fixture) HeadTime() time.Time {
	return Time.Add(time.Duration(len(fx.Commits)-1) * time.Hour)
}

var (
	fixtureOnce sync.Once
	fixtureVal  *Fixture
	fixtureRoot string
)

// Main runs the tests of m, removes the main fixture if they built it, and
// exits with their status.
func Main(m *testing.M) {
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

// MainFixture builds the main fixture once per test binary: nested
// directories, an executable, symlinks (relative, to a directory,
// absolute, dangling), a submodule entry, an empty blob, a 50 MiB blob,
// names with spaces and non-ASCII letters, and a history repacked so the
// pack holds deltas (the large blob at HEAD among them).
func MainFixture(t testing.TB) *Fixture {
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

func buildMainFixture(t testing.TB, dir string) *Fixture {
	fx := &Fixture{Dir: dir}
	InitRepo(t, dir)
	big := BigContent(BigSize + 100<<10)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644))
	var gen strings.Builder
	for i := 0; i < 20; i++ {
		for j := 0; j < 200; j++ {
			fmt.Fprintf(&gen, "commit %d line %d: some source text that changes a little\n", i, j)
		}
		WriteFile(t, dir, "src/gen.txt", gen.String(), 0o644)
		fx.Commits = append(fx.Commits, CommitAll(t, dir, i, fmt.Sprintf("commit %d", i)))
	}
	WriteFile(t, dir, "README.md", "# fixture\n", 0o644)
	WriteFile(t, dir, "a/b/c/deep.txt", "deep\n", 0o644)
	WriteFile(t, dir, "a/b/sibling.txt", "sibling\n", 0o644)
	WriteFile(t, dir, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755)
	WriteFile(t, dir, "dir with space/naïve ünïcode.txt", "unicode\n", 0o644)
	WriteFile(t, dir, "empty.txt", "", 0o644)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "links"), 0o755))
	for name, target := range map[string]string{
		"rel": "../a/b/c/deep.txt", "dir": "../a/b", "abs": "/etc/hostname", "dangling": "nowhere/at/all",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, "links", name)))
	}
	// HEAD's big blob is the smaller one, so git stores it as a delta
	// against the previous version.
	fx.Big = big[:BigSize]
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.bin"), fx.Big, 0o644))
	fx.Sub = fx.Commits[0]
	WriteFile(t, dir, ".gitmodules", "[submodule \"vendor/sub\"]\n\tpath = vendor/sub\n\turl = https://example.com/sub.git\n", 0o644)
	// The gitlink goes in after "add -A", which would stage its removal
	// (there is no checkout of the submodule).
	when := Time.Add(time.Duration(len(fx.Commits)) * time.Hour)
	GitAt(t, dir, when, nil, "add", "-A")
	GitAt(t, dir, when, nil, "update-index", "--add", "--cacheinfo", "160000,"+fx.Sub+",vendor/sub")
	GitAt(t, dir, when, nil, "commit", "-q", "-m", "the tree")
	fx.Commits = append(fx.Commits, GitAt(t, dir, when, nil, "rev-parse", "HEAD"))
	Git(t, dir, "tag", "light", fx.Commits[5])
	GitAt(t, dir, Time, nil, "tag", "-a", "-m", "annotated", "annotated", fx.Commits[10])
	Git(t, dir, "repack", "-adfq", "--depth=50", "--window=50")
	return fx
}

// SmallRepo makes a repository whose only commit holds files (name ->
// content) and returns its directory and HEAD: [testutil.GitRepo].
func SmallRepo(t testing.TB, files map[string]string) (string, string) {
	t.Helper()
	return testutil.GitRepo(t, files)
}

// Waiting counts the goroutines blocked in state (as a stack trace says
// it: "select", "chan receive", "sync.WaitGroup.Wait") with a call of fn
// in their stack, fn as a stack trace names it
// ("golang.org/x/sync/singleflight.(*Group).Do"). A test of concurrent
// callers waits on it to know that they all reached the point where they
// wait, rather than hoping they did.
func Waiting(state, fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, body, _ := strings.Cut(g, "\n")
		// "goroutine 7 [select]:" or "goroutine 7 [select, 2 minutes]:"
		_, st, _ := strings.Cut(header, "[")
		st, _, _ = strings.Cut(st, "]")
		st, _, _ = strings.Cut(st, ",")
		if st == state && strings.Contains(body, fn+"(") {
			count++
		}
	}
	return count
}
