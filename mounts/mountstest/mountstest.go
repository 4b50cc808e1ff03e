// Package mountstest is the conformance suite every mount passes, in the
// manner of testing/fstest.TestFS.
//
// # What it checks
//
// [Run] takes a constructor of fresh mounts and checks, each in its own
// subtest with its own mount:
//
//   - the read side, through [mounts.IOFS] with fstest.TestFS, plus the
//     contract's own rules (ReadDir sorted and deterministic, Open of a
//     directory is ErrIsDir, Open of a symlink is ErrLoop, ...). A writable
//     mount is handed empty and the suite seeds a small tree through the
//     mount's own write verbs first (files, nested directories, a symlink, an
//     empty file, names with spaces and non-ASCII letters); a read-only
//     mount comes pre-populated and [Expect] says what it holds;
//   - for each capability the mount offers, round trips with exact
//     assertions (write then read back, O_EXCL, O_APPEND, truncate, mkdir,
//     unlink and rmdir, rename incl. over an existing target and
//     RenameNoReplace, symlink, hard link, chmod, chown, chtimes with
//     nanoseconds, xattrs, statfs);
//   - for each mutating capability it lacks, that the helper of package
//     mounts returns an error wrapping [mounts.ErrReadOnly] (the mount cannot
//     change anything) or [mounts.ErrNotSupported] (it is writable, but not
//     in this way), and that nothing changed;
//   - a table of bad names ("/x", "a//b", "a/../b", "..", "./a", "a/", NUL,
//     control characters, a 256-byte component): every read method and every
//     write method present fails with fs.ErrInvalid (or
//     [mounts.ErrNameTooLong]) as a *fs.PathError, and nothing changed.
//
// Every error a mount returns must be a *fs.PathError whose Path is one of
// the names the caller passed.
//
// # Through the kernel
//
// [RunOS] runs the same read side, round trips and missing-capability checks
// with system calls against a directory: a FUSE mount point (the integration
// tests) or a t.TempDir (this package's own tests, which prove the suite's
// expectations are those of a real Linux file system). The round trips are
// one table driving either flavour through a small internal interface, so the
// two cannot drift apart. The bad-name table is library-only: such names
// cannot be spelt through the kernel.
//
// # Wrappers
//
// [RunWrapper] checks a wrapper (a decorator built on mounts.Intercept or
// mounts.Watch, or any other) rather than a mount: that over fakes with
// each capability subset it reports exactly what it wraps and forwards
// every verb, the files it opens and the mount table exactly as the fake
// answers them. A wrapper's tests call it next to Run.
//
// # Differential
//
// [Differential] (Linux only) runs seeded random operation sequences on a
// mount and on a real directory (a t.TempDir) side by side: mkdir,
// create/write with O_EXCL, O_TRUNC and O_APPEND, ftruncate, unlink, rmdir,
// rename with each flag, link, symlink, user xattrs, FIFOs and sockets made
// by mknod, chmod with setuid, setgid and sticky, and (as root) lchown.
// Names come from a tiny universe ({a,b,c} up to three deep), so that
// collisions, non-empty directories and renames into subtrees come up
// often. Every step must give both sides the same errno ([ErrnoOf]); before
// the first step, every 100 steps and at the end both trees must hold the
// same names, types, modes, owners, user xattrs, link counts, sizes,
// contents and targets, with inode numbers paired one to one (hard links
// shared alike) and listed by ReadDir as Stat gives them. A name keeps its
// number across a change of its content or attributes, a rename carries it
// and a link shares it. [DifferentialOptions] say how to build the mount
// (New), whether it starts from a random tree (Lower: an overlay's lower,
// filled by the harness and copied to the directory), whether it can
// exchange names, and the seeds, stream and steps; VFSMOUNT_DIFF_SEED=n
// replays seed n alone. A wrapper the mount needs (an upper that cannot
// exchange, say) is built by the caller's New.
//
// The integration tests' differentials through the kernel are not this
// harness: they pick names from the tree as it is, compare the trees once,
// after the kernel's attribute cache expires, and check mount-specific
// state (the host directory behind the mount, an overlay's changes).
//
// # Options
//
// Options describe the mount; none of them turns a check off. An
// unprivileged owner ([UnprivilegedChown]) still checks chown, expecting
// EPERM where root would succeed.
package mountstest

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
)

// Option describes the mount under test.
type Option func(*config)

type config struct {
	files        map[string]string // Expect
	links        map[string]string // ExpectSymlinks
	dirs         []string          // ExpectDirs
	expectSet    bool
	caps         mounts.Capability
	capsSet      bool
	unprivileged bool
	dir          string // At; "." is the root
}

func newConfig(opts []Option) *config {
	c := &config{dir: "."}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Expect lists the regular files a pre-populated (read-only) mount must
// contain, name -> content. The read side checks each content and hands the
// names to fstest.TestFS. Writable mounts are handed empty and seeded by the
// suite instead; Run fails if Expect is given for one.
func Expect(files map[string]string) Option {
	return func(c *config) {
		c.expectSet = true
		if c.files == nil {
			c.files = map[string]string{}
		}
		maps.Copy(c.files, files)
	}
}

// ExpectSymlinks lists the symlinks a pre-populated mount must contain,
// name -> target as stored. Each must resolve inside the mount: fstest.TestFS
// opens every entry it finds.
func ExpectSymlinks(links map[string]string) Option {
	return func(c *config) {
		c.expectSet = true
		if c.links == nil {
			c.links = map[string]string{}
		}
		maps.Copy(c.links, links)
	}
}

// ExpectDirs lists directories a pre-populated mount must contain (parents
// of expected files are implied; name the empty ones here).
func ExpectDirs(names ...string) Option {
	return func(c *config) {
		c.expectSet = true
		c.dirs = append(c.dirs, names...)
	}
}

// Caps states the capabilities the mount offers. Run fails unless
// mounts.Capabilities reports exactly these (so a mount's capability set is
// pinned by its test). For RunOS, which cannot ask a directory, it says what
// the directory offers: the default is a full POSIX directory
// (every mutating capability plus xattrs and statfs). Capabilities left out
// are checked for their documented errno, not skipped.
func Caps(c mounts.Capability) Option {
	return func(cfg *config) { cfg.caps, cfg.capsSet = c, true }
}

// UnprivilegedChown says owners follow POSIX rules for an unprivileged
// caller: chown to the caller's own ids succeeds, giving a file away fails
// with fs.ErrPermission. Without it a chown to any id must succeed (a memory
// mount, or a host mount run as root).
func UnprivilegedChown() Option {
	return func(c *config) { c.unprivileged = true }
}

// At says the mount under test is the directory dir (a valid name, "agent/notes")
// of the tree newFS returns: a mount point of a union, say, checked through
// the union itself. Every name the suite passes is below dir, and every
// error must name one of those names as passed, dir included; StatFS,
// which names no path, is the one call whose errors name the tree's root
// ("."), which the suite takes for dir. The tree's capabilities are the
// mount's. For Run only: RunOS is given its directory.
func At(dir string) Option {
	return func(c *config) { c.dir = dir }
}

// Run checks fsys's read side and every capability it offers. newFS returns a
// fresh mount for each subtest: writable mounts are handed empty, read-only
// mounts come pre-populated, and [Expect] says with what (without it, a
// read-only mount must be empty: fstest.TestFS with no names demands that).
func Run(t *testing.T, newFS func(t *testing.T) mounts.FS, opts ...Option) {
	t.Helper()
	cfg := newConfig(opts)
	if !mounts.ValidPath(cfg.dir) {
		t.Fatalf("At(%q): not a valid name", cfg.dir)
	}
	probe := newFS(t)
	caps := mounts.Capabilities(probe)
	if cfg.capsSet && caps != cfg.caps {
		t.Errorf("mounts.Capabilities = %v, want %v (Caps option)", caps, cfg.caps)
	}
	if caps&mounts.CapMutating != 0 && cfg.expectSet {
		t.Fatalf("Expect describes pre-populated read-only mounts; this one is writable (%v) and must be handed empty", caps)
	}
	fresh := func(t *testing.T) target {
		fsys := newFS(t)
		if c := mounts.Capabilities(fsys); c != caps {
			t.Fatalf("newFS returned mounts with different capabilities: %v, then %v", caps, c)
		}
		x := &libTarget{ctx: context.Background(), fsys: fsys, dir: cfg.dir}
		if caps&mounts.CapMutating != 0 {
			requireEmpty(t, x)
		}
		return x
	}
	runAll(t, cfg, caps, &libTarget{ctx: context.Background(), fsys: probe, dir: cfg.dir}, fresh, true)
}

// runAll is the driver both flavours share. probe is a mount (or directory)
// like the ones fresh returns, used only to see what a read-only fixture
// holds.
func runAll(t *testing.T, cfg *config, caps mounts.Capability, probe target, fresh func(t *testing.T) target, library bool) {
	newEnv := func(t *testing.T) *env { return &env{cfg: cfg, x: fresh(t), caps: caps, library: library} }
	var notRun []string
	t.Run("ReadSide", func(t *testing.T) { testReadSide(t, newEnv(t)) })
	if library {
		t.Run("BadNames", func(t *testing.T) { testBadNames(t, newEnv(t)) })
	}
	file, dir := fixtureKinds(t, probe, caps)
	for _, ac := range absentCases {
		switch {
		case ac.present(caps):
			continue
		case ac.needs == 'f' && !file, ac.needs == 'd' && !dir:
			// Nothing to call the verb on: a read-only fixture without a
			// regular file, say.
			notRun = append(notRun, "Absent/"+ac.name)
			continue
		}
		t.Run("Absent/"+ac.name, func(t *testing.T) { testAbsent(t, newEnv(t), ac) })
	}
	if library && !caps.Has(mounts.CapXattr|mounts.CapStatFS) {
		t.Run("Absent/xattr-statfs", func(t *testing.T) { testAbsentReadVerbs(t, newEnv(t)) })
	}
	for _, rt := range slices.Concat(roundTrips, specialFileTrips) {
		if !caps.Has(rt.needs) {
			if caps.Has(rt.main) {
				// Not a skip of anything the mount offers: the case
				// needs a second capability to build its fixture (a
				// directory to rename needs mkdir).
				notRun = append(notRun, rt.name)
			}
			continue
		}
		t.Run(rt.name, func(t *testing.T) { rt.run(t, newEnv(t)) })
	}
	if len(notRun) > 0 {
		slices.Sort(notRun)
		t.Logf("checks not applicable to this %v mount: %v", caps, notRun)
	}
}
