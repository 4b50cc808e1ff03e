package mountstest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// In the child process: the populated directory and the mount point.
const roSrcEnv, roDstEnv = "MOUNTSTEST_RO_SRC", "MOUNTSTEST_RO_DST"

// TestRunOSReadOnly runs RunOS against a read-only bind mount of a populated
// directory, so the read-only half of the OS flavour (every missing verb is
// EROFS) is checked against Linux as the writable half is. The bind mount is
// made by a child process in its own mount namespace: it vanishes with the
// child and is never seen by the host.
func TestRunOSReadOnly(t *testing.T) {
	if src, dst := os.Getenv(roSrcEnv), os.Getenv(roDstEnv); src != "" && dst != "" {
		runReadOnlyChild(t, src, dst)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("a bind mount in a private mount namespace needs root")
	}
	src, dst := t.TempDir(), t.TempDir()
	for name, data := range fixtureFiles {
		p := filepath.Join(src, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	for name, target := range fixtureLinks {
		require.NoError(t, os.Symlink(target, filepath.Join(src, filepath.FromSlash(name))))
	}
	require.NoError(t, os.Mkdir(filepath.Join(src, "docs"), 0o755))

	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestRunOSReadOnly$", "-test.v", "-test.count=1", "-test.timeout=120s")
	cmd.Env = append(os.Environ(), roSrcEnv+"="+src, roDstEnv+"="+dst)
	// Go marks / recursively private in the new namespace before exec.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	require.NoErrorf(t, err, "the read-only run failed:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestRunOSReadOnly/Absent/mkdir", "the child ran the suite")
	entries, err := os.ReadDir(dst)
	require.NoError(t, err)
	require.Empty(t, entries, "the bind mount leaked out of the child's namespace")
}

func runReadOnlyChild(t *testing.T, src, dst string) {
	require.NoError(t, syscall.Mount(src, dst, "", syscall.MS_BIND, ""), "bind mount")
	require.NoError(t, syscall.Mount("", dst, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""), "remount read-only")
	t.Cleanup(func() { _ = syscall.Unmount(dst, 0) })
	mountstest.RunOS(t, dst,
		mountstest.Caps(0),
		mountstest.Expect(fixtureFiles),
		mountstest.ExpectSymlinks(fixtureLinks),
		mountstest.ExpectDirs("docs"),
	)
}
