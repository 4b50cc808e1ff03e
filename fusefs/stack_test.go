package fusefs

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
)

// inMountWindow returns the seams of a mount that runs during between the
// main connection's mount and the stacked ones (seams.mainMounted), with
// held receiving a value each time the gate starts holding a request of
// another process. The mount waits for during to return.
func inMountWindow(during func(mountpoint string, held <-chan struct{})) seams {
	held := make(chan struct{}, 64)
	return seams{
		held: func() {
			select {
			case held <- struct{}{}:
			default:
			}
		},
		mainMounted: func(mp string) { during(mp, held) },
	}
}

// failSafe bounds a wait that only a broken gate would make endless; it is
// a failure detector, not synchronisation.
const failSafe = 20 * time.Second

// TestForeignCallerSeesTheWholeWorkspace: between the main connection's
// mount and the stacked one's, another process's stat of /repo is held, and
// when it is answered it reports the stacked connection's device. This
// process's own stat in that window passes (mount(2) walks the path the
// same way), and what the kernel learnt from it must not answer the other
// process from the cache.
func TestForeignCallerSeesTheWholeWorkspace(t *testing.T) {
	fusetest.Need(t)
	u, _, _ := immutableWorkspace(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")

	type result struct {
		out string
		err error
	}
	child := make(chan result, 1)
	var mainDev uint64
	heldFirst := false
	window := inMountWindow(func(mp string, held <-chan struct{}) {
		var st syscall.Stat_t
		if err := syscall.Stat(root, &st); err != nil {
			t.Errorf("own stat of %s in the window: %v", root, err)
		}
		mainDev = st.Dev
		cmd := exec.Command("stat", "-c", "%d", root)
		go func() {
			out, err := cmd.Output()
			child <- result{strings.TrimSpace(string(out)), err}
		}()
		select {
		case <-held:
			heldFirst = true
		case r := <-child:
			child <- r // answered at once: reported below
		case <-time.After(failSafe):
			t.Error("the child's stat neither finished nor was held")
		}
	})
	mountStacked(t, dir, u, window)

	var r result
	select {
	case r = <-child:
	case <-time.After(failSafe):
		t.Fatal("the child's stat was not answered after Mount returned")
	}
	require.NoError(t, r.err)
	assert.True(t, heldFirst, "the child's stat was held until the workspace was whole")
	stackedDev := statT(t, root).Dev
	require.NotEqual(t, mainDev, stackedDev, "the window showed the main connection's /repo")
	assert.Equal(t, strconv.FormatUint(stackedDev, 10), r.out,
		"the child saw the stacked connection's device, not the main one's (%d)", mainDev)
}

// TestHeldRequestIsInterruptible: a held request of a process that gets a
// signal is answered (EINTR) at once, and the gate keeps the others.
func TestHeldRequestIsInterruptible(t *testing.T) {
	fusetest.Need(t)
	u, _, _ := immutableWorkspace(t)
	dir := t.TempDir()
	exited := make(chan error, 1)
	window := inMountWindow(func(mp string, held <-chan struct{}) {
		cmd := exec.Command("stat", mp)
		if err := cmd.Start(); err != nil {
			t.Errorf("start stat: %v", err)
			return
		}
		select {
		case <-held:
		case <-time.After(failSafe):
			t.Error("the child's stat was not held")
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			exited <- err
		case <-time.After(failSafe):
			t.Error("a killed caller stays stuck in the gate")
		}
	})
	mountStacked(t, dir, u, window)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, "signal: killed", ee.String())
	default:
		t.Fatal("the window ended without the child")
	}
	st, err := Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateLive, st)
}

// TestProbeIncomplete: a workspace whose stacked connection is gone is not
// live, although its main connection answers.
func TestProbeIncomplete(t *testing.T) {
	u, _, _ := immutableWorkspace(t)
	_, dir := mountFS(t, u, Options{StackConnections: true})
	root := filepath.Join(dir, "repo")

	v := make([]byte, 64)
	n, err := unix.Getxattr(dir, StackedXattr, v)
	require.NoError(t, err)
	assert.Equal(t, "repo\n", string(v[:n]), "the root lists its stacked connections")
	assert.ErrorIs(t, unix.Setxattr(dir, StackedXattr, []byte("x\n"), 0), syscall.EPERM, "read-only")
	st, err := Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateLive, st)

	require.NoError(t, unix.Unmount(root, 0), "unmount the stacked connection by hand")
	st, err = Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateIncomplete, st, "the main connection answers, /repo is not its own")
	assert.Equal(t, "incomplete", st.String())
	below, err := MountsBelow(dir)
	require.NoError(t, err)
	assert.Empty(t, below)
}

// TestProbeWithoutStackedRoots: a workspace with nothing stacked has an
// empty list, and is live.
func TestProbeWithoutStackedRoots(t *testing.T) {
	_, dir := mountMem(t)
	n, err := unix.Getxattr(dir, StackedXattr, make([]byte, 16))
	require.NoError(t, err)
	assert.Zero(t, n)
	st, err := Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateLive, st)
}

// mountStacked mounts u at dir with repo on a connection of its own, with
// the seams sm, until the test ends.
func mountStacked(t *testing.T, dir string, u mounts.FS, sm seams) *Server {
	t.Helper()
	srv, err := mount(dir, u, Options{StackConnections: true}, sm)
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			_ = ForceUnmount(dir)
		}
	})
	return srv
}
