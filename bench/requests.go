package main

// The requests table (see requests_fixture_test.go for how it measures):
// the FUSE requests each file of a small-file workload costs, by opcode,
// on each writable kind of mount. The counts live in the serving process,
// so the workspace is mounted in-process by the library; this package's
// own code drives only the built binaries (internal/layering), so the
// table is printed by the package's test binary, built here and run with
// reqFilesEnv set.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// reqFilesEnv, set to a number of files, makes the bench package's test
// binary print the requests table instead of running its tests.
const reqFilesEnv = "VFSMOUNT_BENCH_REQUEST_FILES"

// reqRepsEnv is the number of runs of each workload on each side; the
// best time counts.
const reqRepsEnv = "VFSMOUNT_BENCH_REQUEST_REPS"

// runRequests prints the requests table: it builds the package's test
// binary and runs it with reqFilesEnv.
func runRequests(o *options, _ string, verbose bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "vfsmount-bench-req-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bench.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./bench")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go test -c ./bench: %w", err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), reqFilesEnv+"="+strconv.Itoa(o.reqFiles), reqRepsEnv+"="+strconv.Itoa(o.reps))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("requests table: %w", err)
	}
	return nil
}
