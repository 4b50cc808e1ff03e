// Package integration holds the tests that mount a workspace for real
// through the kernel and look at it from the test process with plain system
// calls: the conformance suite of package mountstest, go-fuse's POSIX checks,
// and the behaviour only a kernel mount shows (EROFS in synthetic
// directories, EXDEV across mounts, EBUSY on mount points, the library API
// and the kernel seeing one tree).
//
// The tests need /dev/fuse. Without it they skip, unless
// VFSMOUNT_REQUIRE_FUSE=1 (CI sets it), which makes a missing device or a
// failed mount a failure.
package integration
