package integration

import (
	"testing"

	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// TestMountsTestThroughKernel runs the conformance suite with system calls
// against the memory mounts of the workspace: a top-level one and the one
// nested in another mount.
func TestMountsTestThroughKernel(t *testing.T) {
	w := newWorkspace(t)
	for _, name := range []string{"memory", "agent/notes"} {
		t.Run(name, func(t *testing.T) {
			mountstest.RunOS(t, w.path(name))
		})
	}
}

// posixUnsupported lists the posixtest checks that cannot pass on a memory
// mount through this kernel face, and why. They are skipped by name with
// the reason, never silently; every other check of posixtest.All runs.
var posixUnsupported = map[string]string{
	"Fallocate": "fallocate(2) promises that later writes will not fail for lack of space; " +
		"the mounts contract has no verb to reserve space, so the kernel face omits FALLOCATE (EOPNOTSUPP)",
	"FallocateKeepSize": "as Fallocate: no allocate verb in the mounts contract (EOPNOTSUPP)",
	"FcntlFlockLocksFile": "record locks are kept by the kernel (go-fuse EnableLocks is off), and POSIX " +
		"locks of one process never conflict; the check takes both locks from the test process and " +
		"expects EAGAIN, which only a server-side lock manager treating each open file as an owner gives",
	"Tmpfile": "O_TMPFILE needs a file with no name, which the mounts contract cannot create; " +
		"go-fuse answers EOPNOTSUPP",
}

// TestPOSIX runs go-fuse's POSIX checks on the memory mount, each in a
// fresh directory of its own.
func TestPOSIX(t *testing.T) {
	w := newWorkspace(t)
	runPOSIX(t, func(check string) string { return w.path("memory/posix-" + check) }, posixUnsupported)
}
