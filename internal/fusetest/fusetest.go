// Package fusetest holds the one rule every test that mounts through the
// kernel follows: skip where FUSE is unavailable, but fail when
// VFSMOUNT_REQUIRE_FUSE=1 (CI sets it), so a silent skip never looks like a
// pass.
package fusetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Required reports whether the environment demands FUSE tests run.
func Required() bool { return os.Getenv("VFSMOUNT_REQUIRE_FUSE") == "1" }

// Need skips t when /dev/fuse cannot be opened, or fails it when FUSE is
// required. Call it first in every kernel test.
func Need(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err == nil {
		f.Close()
		return
	}
	if Required() {
		t.Fatalf("FUSE required (VFSMOUNT_REQUIRE_FUSE=1) but /dev/fuse is unusable: %v", err)
	}
	t.Skipf("FUSE unavailable: %v", err)
}

// MountFailed reports a failed mount: fatal when FUSE is required, a skip
// otherwise.
func MountFailed(t testing.TB, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("mount failed with VFSMOUNT_REQUIRE_FUSE=1: %v", err)
	}
	t.Skipf("mount failed: %v", err)
}

// Abort aborts the FUSE connections mounted at mountpoint and below, as
// writing to /sys/fs/fuse/connections/N/abort does: every request pending
// on them fails, so a server that is stuck (one killed while a thread of
// its own waited on its own mount, say mount(2) of a stacked connection)
// can exit. It mounts fusectl for the while when nothing is mounted there.
// It is a test's last resort, for cleanup; it needs root.
func Abort(mountpoint string) error {
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return err
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var conns []string
	for _, line := range strings.Split(string(data), "\n") {
		// "36 35 0:52 / /mnt rw,... - fuse.vfsmount vfsmount rw,..."
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		mp := f[4]
		if mp != abs && !strings.HasPrefix(mp, abs+"/") {
			continue
		}
		for i := 6; i < len(f)-1; i++ {
			if t := f[i+1]; f[i] == "-" && (t == "fuse" || t == "fuseblk" || strings.HasPrefix(t, "fuse.")) {
				if _, minor, ok := strings.Cut(f[2], ":"); ok {
					conns = append(conns, minor)
				}
			}
		}
	}
	if len(conns) == 0 {
		return nil
	}
	const ctl = "/sys/fs/fuse/connections"
	if ents, _ := os.ReadDir(ctl); len(ents) == 0 {
		if err := unix.Mount("none", ctl, "fusectl", 0, ""); err != nil {
			return fmt.Errorf("mount fusectl: %w", err)
		}
		defer unix.Unmount(ctl, 0)
	}
	var errs []error
	for _, c := range conns {
		errs = append(errs, os.WriteFile(filepath.Join(ctl, c, "abort"), []byte("1"), 0))
	}
	return errors.Join(errs...)
}
