// Package stress holds the stress test that `make stress` runs: concurrent
// writers, readers and renamers on a memory mount, a persistent memory
// mount and a host mount, all through the kernel, against a daemon built
// with the race detector; then the final tree is checked against a model
// of what it must hold.
//
// The test is behind the "stress" build tag, so `go test ./...` does not
// build a race binary and run for minutes:
//
//	go test -tags stress -count=1 -v ./stress
//
// STRESS_OPS scales the number of operations per worker (default 1500);
// STRESS_SEED changes the random choices (default 1), so a failure can be
// replayed; VFSMOUNT_BINARY tests a prebuilt binary instead of building one.
package stress
