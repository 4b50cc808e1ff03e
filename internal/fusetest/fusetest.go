// Package fusetest holds the one rule every test that mounts through the
// kernel follows: skip where FUSE is unavailable, but fail when
// VFSMOUNT_REQUIRE_FUSE=1 (CI sets it), so a silent skip never looks like a
// pass.
package fusetest

import (
	"os"
	"testing"
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
