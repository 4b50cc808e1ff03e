// Package testutil holds small helpers shared by tests across packages.
package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Buffer collects a child process's output (or a logger's) while the test
// reads it: an io.Writer safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// builds are the vfsmount binaries built by this test binary, by flags.
var builds struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// Binary builds cmd/vfsmount with the given go build flags, once per test
// binary and set of flags, outside any FUSE mount, and returns its path;
// cmd/vfsmount-fsmonitor is built beside it, as make build does.
// Without flags, $VFSMOUNT_BINARY (a release candidate to test as it is)
// is used instead when set. Tests that use it call [Main] from TestMain.
func Binary(tb testing.TB, flags ...string) string {
	tb.Helper()
	if p := os.Getenv("VFSMOUNT_BINARY"); p != "" && len(flags) == 0 {
		return p
	}
	builds.Lock()
	defer builds.Unlock()
	key := strings.Join(flags, "\x00")
	if p, ok := builds.bins[key]; ok {
		return p
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "vfsmount-test-bin-")
		if err != nil {
			tb.Fatalf("build vfsmount: %v", err)
		}
		builds.dir, builds.bins = dir, map[string]string{}
		// Beside every binary, as make build puts it: the small program
		// the binaries name as git's fsmonitor hook when it is there.
		args := []string{"build", "-o", filepath.Join(dir, "vfsmount-fsmonitor"), "github.com/vfsmount/vfsmount/cmd/vfsmount-fsmonitor"}
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			tb.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	p := filepath.Join(builds.dir, fmt.Sprintf("vfsmount-%d", len(builds.bins)))
	args := append(append([]string{"build"}, flags...), "-o", p, "github.com/vfsmount/vfsmount/cmd/vfsmount")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		tb.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	builds.bins[key] = p
	return p
}

// Main runs the tests and removes the binaries [Binary] built; TestMain
// is `os.Exit(testutil.Main(m))`.
func Main(m *testing.M) int {
	code := m.Run()
	builds.Lock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.Unlock()
	return code
}
