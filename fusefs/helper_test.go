package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vfsmount/vfsmount/internal/fusetest"
)

// startHelper re-executes the test binary as a helper (see TestMain),
// serving a memory mount at dir from a child process, and waits until it is
// mounted.
func startHelper(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s != "ready" {
			fusetest.MountFailed(t, errNotReadyf(s))
		}
	case <-time.After(30 * time.Second):
		fusetest.MountFailed(t, errNotReadyf("timeout"))
	}
	return cmd
}

// errNotReady is reported when the helper does not report its mount.
var errNotReady = errors.New("helper did not mount")

func errNotReadyf(detail string) error { return fmt.Errorf("%w: %s", errNotReady, detail) }
