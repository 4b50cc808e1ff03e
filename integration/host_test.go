package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
	"github.com/vfsmount/vfsmount/mounts/skillsfs"
	"github.com/vfsmount/vfsmount/union"
)

// hostWorkspace is a union with a host mount of src on /host and a memory
// mount on /memory, mounted through the kernel at dir.
type hostWorkspace struct {
	dir string // mount point
	src string // the host directory behind /host
}

func (w *hostWorkspace) host(name string) string {
	return filepath.Join(w.dir, "host", filepath.FromSlash(name))
}

func newHostWorkspace(t *testing.T, src string) *hostWorkspace {
	t.Helper()
	fusetest.Need(t)
	h, err := hostfs.Open(src, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.(*hostfs.FS).Close() })
	u, err := union.New(map[string]mounts.FS{"/host": h, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	dir, _ := mountKernel(t, u)
	return &hostWorkspace{dir: dir, src: src}
}

// TestHostMountsTestThroughKernel runs the conformance suite with system
// calls against a writable host mount.
func TestHostMountsTestThroughKernel(t *testing.T) {
	w := newHostWorkspace(t, t.TempDir())
	mountstest.RunOS(t, w.host("."))
}

// hostPOSIXUnsupported lists the posixtest checks that cannot pass on a host
// mount through this kernel face, and why. They are skipped by name with the
// reason; every other check of posixtest.All runs.
var hostPOSIXUnsupported = map[string]string{
	"Fallocate": "the mounts contract has no verb to reserve space, so the kernel face omits FALLOCATE " +
		"(EOPNOTSUPP), even though the host file system could",
	"FallocateKeepSize": "as Fallocate",
	"FcntlFlockLocksFile": "record locks are kept by the kernel (go-fuse EnableLocks is off); the check takes " +
		"both locks from one process and expects EAGAIN, which needs a server-side lock manager",
	"RenameOpenDir": "fstat of an open directory that a rename replaced: the kernel face is path based, so " +
		"the node has no name left to stat (go-fuse issue 55)",
	"Tmpfile": "O_TMPFILE needs a file with no name, which the mounts contract cannot create",
}

// TestHostPOSIX runs go-fuse's POSIX checks on a writable host mount.
func TestHostPOSIX(t *testing.T) {
	w := newHostWorkspace(t, t.TempDir())
	runPOSIX(t, func(check string) string { return w.host("posix-" + check) }, hostPOSIXUnsupported)
}

// escapeLayout builds parent/{src,outside}: a secret outside, and links in
// src that climb out of it in every relative way. (Absolute targets are
// resolved by the kernel in the caller's own namespace, as on any file
// system; the library table in package hostfs covers them, and here the
// mount must serve them verbatim.)
func escapeLayout(t *testing.T) (parent, src, outside string) {
	t.Helper()
	parent = t.TempDir()
	src, outside = filepath.Join(parent, "src"), filepath.Join(parent, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "odir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sub", "deeper"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "file"), []byte("inside"), 0o644))
	for name, target := range map[string]string{
		"abs":          outside,
		"rel":          "../outside",
		"relfile":      "../outside/secret",
		"sub/up":       "../../outside",
		"sub/deeper/r": "../../../outside",
		"dotdot":       "..",
		"loop":         "loop",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(src, filepath.FromSlash(name))))
	}
	return parent, src, outside
}

// outsideSnapshot records everything under parent but src (see the library
// test in package hostfs for why atime is left out).
func outsideSnapshot(t *testing.T, parent, src string) string {
	t.Helper()
	var lines []string
	require.NoError(t, filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == src {
			return filepath.SkipDir
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		line := fmt.Sprintf("%s %o %d:%d size=%d nlink=%d m=%d.%d c=%d.%d", strings.TrimPrefix(p, parent),
			st.Mode, st.Uid, st.Gid, st.Size, st.Nlink, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:8])
		}
		lines = append(lines, line)
		return nil
	}))
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestHostEscapesThroughKernel is the escape table driven with system calls
// through the kernel mount.
func TestHostEscapesThroughKernel(t *testing.T) {
	parent, src, outside := escapeLayout(t)
	w := newHostWorkspace(t, src)
	h := w.host
	errs := func(e ...error) []error { return e }
	cases := []struct {
		name string
		do   func() error
		want []error // empty: must succeed (and stay confined)
	}{
		{"read via relative dir link", func() error { _, err := os.ReadFile(h("rel/secret")); return err }, errs(syscall.ENOENT)},
		{"read relative file link", func() error { _, err := os.ReadFile(h("relfile")); return err }, errs(syscall.ENOENT)},
		{"read via link in subdir", func() error { _, err := os.ReadFile(h("sub/up/secret")); return err }, errs(syscall.ENOENT)},
		{"read via deep link", func() error { _, err := os.ReadFile(h("sub/deeper/r/secret")); return err }, errs(syscall.ENOENT)},
		{"read via dotdot link", func() error { _, err := os.ReadFile(h("dotdot/outside/secret")); return err }, errs(syscall.ENOENT)},
		{"read via dotdot name", func() error { _, err := os.ReadFile(h("../outside/secret")); return err }, errs(syscall.ENOENT)},
		{"loop", func() error { _, err := os.ReadFile(h("loop/x")); return err }, errs(syscall.ELOOP)},
		{"readdir via link", func() error { _, err := os.ReadDir(h("rel/odir")); return err }, errs(syscall.ENOENT)},
		{"write via file link", func() error { return os.WriteFile(h("relfile"), []byte("pwned"), 0o644) }, errs(syscall.ENOENT)},
		{"open nofollow absolute link", func() error {
			f, err := os.OpenFile(h("abs"), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
			if err == nil {
				f.Close()
			}
			return err
		}, errs(syscall.ELOOP)},
		{"truncate via file link", func() error { return os.Truncate(h("relfile"), 0) }, errs(syscall.ENOENT)},
		{"chmod via file link", func() error { return os.Chmod(h("relfile"), 0o777) }, errs(syscall.ENOENT)},
		{"mkdir via dir link", func() error { return os.Mkdir(h("rel/newdir"), 0o755) }, errs(syscall.ENOENT)},
		{"rename into dir link", func() error { return os.Rename(h("file"), h("rel/stolen")) }, errs(syscall.ENOENT)},
		{"rename out of the mount", func() error { return os.Rename(h("file"), filepath.Join(outside, "stolen")) }, errs(syscall.EXDEV)},
		{"rename in from outside", func() error { return os.Rename(filepath.Join(outside, "secret"), h("stolen")) }, errs(syscall.EXDEV)},
		{"hard link out", func() error { return os.Link(h("file"), filepath.Join(outside, "hard")) }, errs(syscall.EXDEV)},
		{"hard link in", func() error { return os.Link(filepath.Join(outside, "secret"), h("hard")) }, errs(syscall.EXDEV)},
		{"hard link via dir link", func() error { return os.Link(h("rel/secret"), h("hard")) }, errs(syscall.ENOENT)},
		{"lchown file link", func() error { return os.Lchown(h("relfile"), os.Getuid(), os.Getgid()) }, nil},
		{"utimes nofollow on link", func() error {
			ts := []unix.Timespec{{Sec: 1}, {Sec: 1}}
			return unix.UtimesNanoAt(unix.AT_FDCWD, h("relfile"), ts, unix.AT_SYMLINK_NOFOLLOW)
		}, nil},
		{"lsetxattr on link", func() error { return unix.Lsetxattr(h("relfile"), "user.pwned", []byte("1"), 0) }, errs(syscall.EPERM)},
		{"absolute link served verbatim", func() error {
			target, err := os.Readlink(h("abs"))
			if err == nil && target != outside {
				return fmt.Errorf("readlink = %q, want %q", target, outside)
			}
			return err
		}, nil},
		{"symlink created verbatim", func() error {
			if err := os.Symlink("/etc/shadow", h("sub/newlink")); err != nil {
				return err
			}
			target, err := os.Readlink(filepath.Join(src, "sub/newlink"))
			if err == nil && target != "/etc/shadow" {
				return fmt.Errorf("host readlink = %q", target)
			}
			return err
		}, nil},
		{"unlink a link removes the link", func() error { return os.Remove(h("relfile")) }, nil},
	}
	require.GreaterOrEqual(t, len(cases), 20)
	before := outsideSnapshot(t, parent, src)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.do()
			if len(c.want) == 0 {
				assert.NoError(t, err)
			} else {
				matched := false
				for _, e := range c.want {
					matched = matched || errors.Is(err, e)
				}
				assert.True(t, matched, "got %v, want one of %v", err, c.want)
			}
			assert.Equal(t, before, outsideSnapshot(t, parent, src), "something outside the source changed")
		})
	}
}

// TestHostEscapeRaceThroughKernel swaps a directory of the source for a
// symlink climbing out, from the host side and as fast as it can, while a
// second goroutine mutates through the directory's name in the kernel mount.
// The kernel's cached node for the directory makes the mount see names
// through the symlink; they must be refused, and nothing outside change.
func TestHostEscapeRaceThroughKernel(t *testing.T) {
	parent, src, _ := escapeLayout(t)
	d := filepath.Join(src, "d")
	require.NoError(t, os.Mkdir(d, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, "secret"), []byte("inside"), 0o644))
	require.NoError(t, os.Symlink("../outside", filepath.Join(src, "swap")))
	w := newHostWorkspace(t, src)
	before := outsideSnapshot(t, parent, src)

	var stop atomic.Bool
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, filepath.Join(src, "swap"), unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("flip: %v", err)
				return
			}
			flips.Add(1)
		}
	})
	ops := []func(i int) error{
		func(i int) error { return os.WriteFile(w.host("d/secret"), []byte("pwned"), 0o644) },
		func(i int) error { return os.WriteFile(w.host(fmt.Sprintf("d/new%d", i)), nil, 0o644) },
		func(i int) error { return os.Truncate(w.host("d/secret"), 0) },
		func(i int) error { return os.Chmod(w.host("d/secret"), 0o777) },
		func(i int) error { return os.Lchown(w.host("d/secret"), 1, 1) },
		func(i int) error { return unix.Lsetxattr(w.host("d/secret"), "user.pwned", []byte("1"), 0) },
		func(i int) error { return os.Mkdir(w.host(fmt.Sprintf("d/dir%d", i)), 0o755) },
		func(i int) error { return os.Remove(w.host("d/secret")) },
		func(i int) error { return os.Remove(w.host("d/odir")) },
		func(i int) error { return os.Rename(w.host("d/secret"), w.host("stolen")) },
		func(i int) error { return os.Link(w.host("d/secret"), w.host(fmt.Sprintf("hard%d", i))) },
		func(i int) error { _, err := os.ReadFile(w.host("d/secret")); return err },
	}
	deadline := time.Now().Add(2 * time.Second)
	n := 0
	for i := 0; time.Now().Before(deadline); i++ {
		for _, op := range ops {
			n++
			_ = op(i) // any outcome but a change outside is fine
		}
		if data, err := os.ReadFile(w.host("stolen")); err == nil {
			assert.NotEqual(t, "secret", string(data), "read the outside secret")
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d operations against %d flips", n, flips.Load())
	assert.Greater(t, flips.Load(), int64(100), "the race actually ran")
	assert.Equal(t, before, outsideSnapshot(t, parent, src), "something outside the source changed")
}

// TestHostDifferential applies one seeded random sequence of operations to a
// plain directory and, through the kernel, to a host mount of another, then
// compares the trees and every operation's outcome.
func TestHostDifferential(t *testing.T) {
	src := t.TempDir()
	w := newHostWorkspace(t, src)
	hostDifferential(t, w.host("."), src)
}

// hostDifferential is the differential of a mount at mnt that serves the
// host directory src (a host mount, or a remote mount's peer). The
// directory behind the mount must show every write once fsync of the
// mount's directory returned (a remote mount posts changes made through
// the kernel; that fsync waits for them).
func hostDifferential(t *testing.T, mnt, src string) {
	const ops = 2500
	rng := diffRand(t)
	ref := t.TempDir()

	names := []string{"a", "b", "c", "d", "e"}
	tp := &treePicker{rng: rng, ref: ref, names: names}
	scan, pick, existing, fresh := tp.scan, tp.pick, tp.existing, tp.fresh
	type op struct {
		desc string
		do   func(root string) error
	}
	gen := func() op {
		scan()
		p, q := existing(), fresh()
		switch k := rng.IntN(11); k {
		case 0, 1:
			if rng.IntN(2) == 0 {
				p = fresh()
			}
			data := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(9000))
			off := int64(rng.IntN(20000))
			return op{fmt.Sprintf("write %s @%d len %d", p, off, len(data)), func(root string) error {
				f, err := os.OpenFile(filepath.Join(root, p), os.O_WRONLY|os.O_CREATE, 0o644)
				if err != nil {
					return err
				}
				_, werr := f.WriteAt(data, off)
				return errors.Join(werr, f.Close())
			}}
		case 2:
			size := int64(rng.IntN(30000))
			return op{fmt.Sprintf("truncate %s %d", p, size), func(root string) error { return os.Truncate(filepath.Join(root, p), size) }}
		case 3:
			return op{fmt.Sprintf("rename %s %s", p, q), func(root string) error { return os.Rename(filepath.Join(root, p), filepath.Join(root, q)) }}
		case 4:
			return op{"unlink " + p, func(root string) error { return unix.Unlink(filepath.Join(root, p)) }}
		case 5, 6:
			p = fresh()
			return op{"mkdir " + p, func(root string) error { return os.Mkdir(filepath.Join(root, p), 0o755) }}
		case 7:
			return op{"rmdir " + p, func(root string) error { return unix.Rmdir(filepath.Join(root, p)) }}
		case 8:
			// Targets never hold "..", so they resolve the same in both trees.
			target := pick(names)
			if rng.IntN(2) == 0 {
				target = existing()
			}
			p = fresh()
			return op{fmt.Sprintf("symlink %s -> %s", p, target), func(root string) error { return os.Symlink(target, filepath.Join(root, p)) }}
		case 9:
			mode := fs.FileMode(rng.IntN(0o1000)) | 0o600
			return op{fmt.Sprintf("chmod %s %o", p, mode), func(root string) error { return os.Chmod(filepath.Join(root, p), mode) }}
		default:
			return op{fmt.Sprintf("link %s %s", p, q), func(root string) error { return os.Link(filepath.Join(root, p), filepath.Join(root, q)) }}
		}
	}
	var diverged []string
	succeeded, i := 0, 0
	// ops operations, and more while the tree is too small to be worth
	// comparing (a seed whose removals took most of it away), as the last
	// operation left it.
	for ; i < ops || (tp.small() && i < 4*ops); i++ {
		o := gen()
		want, got := errnoOf(o.do(ref)), errnoOf(o.do(mnt))
		if want != got {
			diverged = append(diverged, fmt.Sprintf("op %d %s: plain %v, mount %v", i, o.desc, want, got))
		}
		if want == nil {
			succeeded++
		}
	}
	assert.Empty(t, diverged, "operations with different outcomes")
	want := treeOf(t, ref)
	t.Logf("%d of %d operations succeeded; %d entries in the final tree", succeeded, i, len(want))
	require.Greater(t, succeeded, i/4, "the sequence must mostly do things, not fail")
	require.Greater(t, len(want), 10, "the sequence must leave a tree worth comparing")
	d, err := os.Open(mnt)
	require.NoError(t, err)
	require.NoError(t, d.Sync(), "fsync of the mount's directory")
	require.NoError(t, d.Close())
	assert.Equal(t, want, treeOf(t, src), "the host directory behind the mount")
	// Attributes the kernel cached expire after a second (fusefs's
	// mutable timeout); then the view through the mount must agree too.
	time.Sleep(1100 * time.Millisecond)
	assert.Equal(t, want, treeOf(t, mnt), "the tree seen through the mount")
}

func errnoOf(err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// treeOf describes every entry under root: name, type and mode, owner and
// group, size (not for directories, whose size is the file system's
// business), content, link target and link count.
func treeOf(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%s mode=%o owner=%d:%d nlink=%d", rel, st.Mode, st.Uid, st.Gid, st.Nlink)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += fmt.Sprintf(" size=%d sha=%s", st.Size, hex.EncodeToString(sum[:8]))
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		}
		out = append(out, line)
		return nil
	}))
	return out
}

// TestSkillsThroughKernel mounts a skills directory at /agent/skills and
// looks at it with system calls: the catalog, exec bits, EROFS, and a skill
// added to the source showing in the catalog once the kernel's attribute
// cache (one second) has expired.
func TestSkillsThroughKernel(t *testing.T) {
	fusetest.Need(t)
	src := t.TempDir()
	write := func(name, content string, perm os.FileMode) {
		p := filepath.Join(src, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), perm))
	}
	write("pdf/SKILL.md", "---\nname: pdf\ndescription: Work with PDFs.\n---\nBody\n", 0o644)
	write("pdf/scripts/run.sh", "#!/bin/sh\necho ok\n", 0o755)
	host, err := hostfs.Open(src, hostfs.Options{ReadOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { host.(interface{ Close() error }).Close() })
	sk, err := skillsfs.New(host, skillsfs.Options{Prefix: "/agent/skills"})
	require.NoError(t, err)
	u, err := union.New(map[string]mounts.FS{"/agent/skills": sk, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	dir, _ := mountKernel(t, u)
	at := func(name string) string { return filepath.Join(dir, "agent", "skills", filepath.FromSlash(name)) }

	cat, err := os.ReadFile(at("SKILLS.md"))
	require.NoError(t, err)
	assert.Contains(t, string(cat), "## pdf\n\nWork with PDFs.\n\nPath: /agent/skills/pdf/SKILL.md\n")
	fi, err := os.Stat(at("pdf/scripts/run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "scripts keep their exec bits")
	assert.ErrorIs(t, os.WriteFile(at("pdf/new.md"), nil, 0o644), syscall.EROFS)
	assert.ErrorIs(t, os.WriteFile(at("SKILLS.md"), nil, 0o644), syscall.EROFS)
	assert.ErrorIs(t, os.Remove(at("pdf/SKILL.md")), syscall.EROFS)

	write("csv/SKILL.md", "---\nname: csv\ndescription: Tables.\n---\n", 0o644)
	time.Sleep(1100 * time.Millisecond)
	cat, err = os.ReadFile(at("SKILLS.md"))
	require.NoError(t, err)
	assert.Contains(t, string(cat), "Path: /agent/skills/csv/SKILL.md\n")
	assert.Contains(t, string(cat), "Path: /agent/skills/pdf/SKILL.md\n", "the catalog is whole, not cut at an old size")
}

// TestHostListingsFollowOutsideChanges: host listings are cached by the
// kernel (FOPEN_CACHE_DIR), but a change made to the host directory behind
// the mount shows in the next listing once the one-second attribute
// timeout has passed — at the mount's own top directory and below it, for
// creations and removals — without anything stat'ing the directory first.
func TestHostListingsFollowOutsideChanges(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(src, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "d", "a"), nil, 0o644))
	w := newHostWorkspace(t, src)

	names := func(dir string) []string {
		t.Helper()
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	for _, sub := range []string{"", "d"} {
		dir := w.host(sub)
		before := names(dir)
		require.Equal(t, before, names(dir), "a listing read twice is the same")

		outside := filepath.Join(src, sub, "new")
		require.NoError(t, os.WriteFile(outside, nil, 0o644))
		time.Sleep(1100 * time.Millisecond)
		assert.Contains(t, names(dir), "new", "%s: a file created behind the mount is listed", dir)

		require.NoError(t, os.Remove(outside))
		time.Sleep(1100 * time.Millisecond)
		assert.NotContains(t, names(dir), "new", "%s: a file removed behind the mount is gone", dir)
	}
}
