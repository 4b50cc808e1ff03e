package checkpoint_test

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// persisted is a workspace of memory trees, each in a bbolt file of dir
// named after its prefix; a tree of overlays is the upper of an overlay
// (over an empty lower), which is the mount.
type persisted struct {
	dir      string
	prefixes []string
	stores   []*boltstore.Store
	trees    []mounts.FreezeFS
	ws       *checkpoint.Workspace
}

func openPersisted(dir string, prefixes ...string) (*persisted, error) {
	return openPersistedOver(dir, nil, prefixes...)
}

func openPersistedOver(dir string, overlays []string, prefixes ...string) (*persisted, error) {
	p := &persisted{dir: dir, prefixes: prefixes}
	var ms []checkpoint.Mount
	for _, prefix := range prefixes {
		s, err := boltstore.Open(filepath.Join(dir, strings.TrimPrefix(prefix, "/")+".db"), boltstore.Options{LockTimeout: 5 * time.Second})
		if err != nil {
			return nil, err
		}
		t, err := s.Load(memfs.Options{})
		if err != nil {
			return nil, err
		}
		var tree mounts.FreezeFS = t
		if slices.Contains(overlays, prefix) {
			if tree, err = overlayfs.New(context.Background(), memfs.New(memfs.Options{}), t, overlayfs.Options{LowerID: "test"}); err != nil {
				return nil, err
			}
		}
		p.stores, p.trees = append(p.stores, s), append(p.trees, tree)
		ms = append(ms, checkpoint.Mount{Prefix: prefix, Type: "memory", Source: "memory", Tree: tree})
	}
	ws, err := checkpoint.New(ms, checkpoint.Options{})
	if err != nil {
		return nil, err
	}
	p.ws = ws
	return p, nil
}

func (p *persisted) close(t testing.TB) {
	for _, s := range p.stores {
		require.NoError(t, s.Close())
	}
}

// dump is every tree of the workspace: names, modes and contents.
func (p *persisted) dump() (string, error) {
	var b strings.Builder
	for i, tree := range p.trees {
		err := fs.WalkDir(mounts.IOFS(context.Background(), tree), ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s/%s %v", p.prefixes[i], name, d.Type())
			if d.Type().IsRegular() {
				data, err := mounts.ReadFile(context.Background(), tree, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(&b, " %q", data)
			}
			b.WriteByte('\n')
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// build writes two states into every tree, checkpointed as "one" and
// "two"; files is how many files each has (a bigger restore, a longer
// window). The workspace is left at two.
func (p *persisted) build(files int) (one, two string, err error) {
	ctx := context.Background()
	write := func(state string) error {
		for i, tree := range p.trees {
			if err := mounts.MkdirAll(ctx, tree, "d", 0o755); err != nil {
				return err
			}
			for f := range files {
				if err := mounts.WriteFile(ctx, tree, fmt.Sprintf("d/f%d", f), []byte(strings.Repeat(state, 100+i)), 0o644); err != nil {
					return err
				}
			}
			if state == "1" {
				if err := mounts.WriteFile(ctx, tree, "only-one", []byte("1"), 0o644); err != nil {
					return err
				}
			} else if err := mounts.Unlink(ctx, tree, "only-one"); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write("1"); err != nil {
		return "", "", err
	}
	c1, err := p.ws.Create(ctx, "one")
	if err != nil {
		return "", "", err
	}
	if one, err = p.dump(); err != nil {
		return "", "", err
	}
	if err := write("2"); err != nil {
		return "", "", err
	}
	c2, err := p.ws.Create(ctx, "two")
	if err != nil {
		return "", "", err
	}
	if two, err = p.dump(); err != nil {
		return "", "", err
	}
	if c1.ID != "c1" || c2.ID != "c2" {
		return "", "", fmt.Errorf("checkpoints %s, %s: want c1, c2", c1.ID, c2.ID)
	}
	return one, two, nil
}

// TestTwoPhaseRestoreCrashAtEachStep takes, at each step of a restore
// across three persisted trees, the files as a crash there would leave
// them, and loads them: the workspace is wholly before or wholly after,
// and no intent or decision is left behind.
func TestTwoPhaseRestoreCrashAtEachStep(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		step  string
		after bool // the restore happened
	}{
		{"prepared", false},
		{"decided", true},
		{"synced /b", true}, // one participant of two
		{"synced /c", true},
		{"forgotten", true},
	} {
		t.Run(tc.step, func(t *testing.T) {
			dir, crash := t.TempDir(), t.TempDir()
			p, err := openPersisted(dir, "/a", "/b", "/c")
			require.NoError(t, err)
			one, two, err := p.build(20)
			require.NoError(t, err)
			var steps []string
			undo := checkpoint.SetTestHook(p.ws, func(step string) {
				steps = append(steps, step)
				if step != tc.step {
					return
				}
				for i, s := range p.stores {
					require.NoError(t, s.Backup(filepath.Join(crash, strings.TrimPrefix(p.prefixes[i], "/")+".db")))
				}
			})
			res, err := p.ws.Restore(ctx, "c1", nil)
			undo()
			require.NoError(t, err)
			assert.Equal(t, []string{"/a", "/b", "/c"}, res.Restored)
			assert.Equal(t, []string{"prepared", "decided", "synced /b", "synced /c", "forgotten"}, steps)
			got, err := p.dump()
			require.NoError(t, err)
			assert.Equal(t, one, got, "the live workspace is restored")
			p.close(t)

			if tc.step == "prepared" {
				// The files do hold the intents being tested.
				q, err := openTrees(crash, "/b")
				require.NoError(t, err)
				require.NotNil(t, q[0].PendingRestore(), "the participant's intent is in its file")
			}
			r, err := openPersisted(crash, "/a", "/b", "/c")
			require.NoError(t, err)
			defer r.close(t)
			got, err = r.dump()
			require.NoError(t, err)
			want := map[bool]string{false: two, true: one}[tc.after]
			require.Equal(t, want, got, "after a crash at %q the workspace is wholly %s", tc.step, map[bool]string{false: "before", true: "after"}[tc.after])
			for i, tree := range r.trees {
				assert.Nil(t, tree.PendingRestore(), "%s: no intent left", r.prefixes[i])
				assert.Empty(t, tree.DecidedRestores(), "%s: no decision left", r.prefixes[i])
			}
			// And it still restores both ways.
			_, err = r.ws.Restore(ctx, "c2", nil)
			require.NoError(t, err)
			got, err = r.dump()
			require.NoError(t, err)
			assert.Equal(t, two, got)
		})
	}
}

// openTrees loads the files of prefixes in dir without a workspace (no
// recovery), and closes them at once: the trees are as the files hold
// them.
func openTrees(dir string, prefixes ...string) ([]*memfs.FS, error) {
	var out []*memfs.FS
	for _, prefix := range prefixes {
		s, err := boltstore.Open(filepath.Join(dir, strings.TrimPrefix(prefix, "/")+".db"), boltstore.Options{})
		if err != nil {
			return nil, err
		}
		t, err := s.Load(memfs.Options{})
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		if err := s.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TestTwoPhaseRestoreOfPaths: a restore of some paths across persisted
// trees, interrupted after the decision, is finished on load with the same
// paths, and only them.
func TestTwoPhaseRestoreOfPaths(t *testing.T) {
	ctx := context.Background()
	dir, crash := t.TempDir(), t.TempDir()
	p, err := openPersisted(dir, "/a", "/b")
	require.NoError(t, err)
	_, _, err = p.build(3)
	require.NoError(t, err)
	undo := checkpoint.SetTestHook(p.ws, func(step string) {
		if step == "decided" {
			for i, s := range p.stores {
				require.NoError(t, s.Backup(filepath.Join(crash, strings.TrimPrefix(p.prefixes[i], "/")+".db")))
			}
		}
	})
	_, err = p.ws.Restore(ctx, "c1", []string{"/a/d/f1", "/b/d/f2"})
	undo()
	require.NoError(t, err)
	want, err := p.dump()
	require.NoError(t, err)
	p.close(t)

	r, err := openPersisted(crash, "/a", "/b")
	require.NoError(t, err)
	defer r.close(t)
	got, err := r.dump()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Contains(t, got, `/b/d/f2 ---------- "`+strings.Repeat("1", 101)+`"`, "the participant's path is restored")
	assert.Contains(t, got, `/b/d/f1 ---------- "`+strings.Repeat("2", 101)+`"`, "and nothing else of it")
}

// TestTwoPhaseRestoreOfPathsInAnOverlay: the same with an overlay as the
// participant (a writable git mount over a persist file): its intent names
// the upper's names, and the restore finished on load restores the merged
// names asked for, and only them.
func TestTwoPhaseRestoreOfPathsInAnOverlay(t *testing.T) {
	ctx := context.Background()
	dir, crash := t.TempDir(), t.TempDir()
	p, err := openPersistedOver(dir, []string{"/b"}, "/a", "/b")
	require.NoError(t, err)
	_, _, err = p.build(3)
	require.NoError(t, err)
	undo := checkpoint.SetTestHook(p.ws, func(step string) {
		if step == "prepared" {
			pending := p.trees[1].PendingRestore()
			require.NotNil(t, pending)
			assert.Equal(t, []string{"d/f2"}, pending.Paths, "the overlay names its intent's paths as merged names")
		}
		if step == "decided" {
			for i, s := range p.stores {
				require.NoError(t, s.Backup(filepath.Join(crash, strings.TrimPrefix(p.prefixes[i], "/")+".db")))
			}
		}
	})
	_, err = p.ws.Restore(ctx, "c1", []string{"/a/d/f1", "/b/d/f2"})
	undo()
	require.NoError(t, err)
	want, err := p.dump()
	require.NoError(t, err)
	p.close(t)

	r, err := openPersistedOver(crash, []string{"/b"}, "/a", "/b")
	require.NoError(t, err)
	defer r.close(t)
	got, err := r.dump()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Contains(t, got, `/b/d/f2 ---------- "`+strings.Repeat("1", 101)+`"`, "the overlay's path is restored on load")
	assert.Contains(t, got, `/b/d/f1 ---------- "`+strings.Repeat("2", 101)+`"`, "and nothing else of it")
}

// TestOnePersistedTreeHasNoPrepare: with one persisted tree (and one
// without a file) a restore runs no two-phase commit.
func TestOnePersistedTreeHasNoPrepare(t *testing.T) {
	ctx := context.Background()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "a.db"), boltstore.Options{})
	require.NoError(t, err)
	a, err := s.Load(memfs.Options{})
	require.NoError(t, err)
	defer s.Close()
	b := memfs.New(memfs.Options{})
	ws, err := checkpoint.New([]checkpoint.Mount{{Prefix: "/a", Tree: a}, {Prefix: "/b", Tree: b}}, checkpoint.Options{})
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, a, "x", []byte("1"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, b, "x", []byte("1"), 0o644))
	c, err := ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, a, "x", []byte("2"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, b, "x", []byte("2"), 0o644))
	var steps []string
	undo := checkpoint.SetTestHook(ws, func(step string) { steps = append(steps, step) })
	_, err = ws.Restore(ctx, c.ID, nil)
	undo()
	require.NoError(t, err)
	assert.Empty(t, steps)
	assert.Equal(t, "1", read(t, a, "x"))
	assert.Equal(t, "1", read(t, b, "x"))
}

// crashChildEnv makes the test binary the child of
// TestTwoPhaseRestoreSurvivesKill9.
const crashChildEnv = "VFSMOUNT_TWO_PHASE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild builds two states of a workspace of two persisted trees,
// saves their dumps, and restores one and the other for ever, saying
// "restored" after each.
func crashChild(dir string) {
	p, err := openPersisted(dir, "/memory", "/repo")
	must(err)
	one, two, err := p.build(150)
	must(err)
	must(os.WriteFile(filepath.Join(dir, "one.dump"), []byte(one), 0o644))
	must(os.WriteFile(filepath.Join(dir, "two.dump"), []byte(two), 0o644))
	fmt.Println("ready")
	for i := 0; ; i++ {
		_, err := p.ws.Restore(context.Background(), []string{"c1", "c2"}[i%2], nil)
		must(err)
		fmt.Println("restored")
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

// TestTwoPhaseRestoreSurvivesKill9 kills a process restoring a workspace
// of two persisted trees back and forth, after a varying number of
// restores (the next one in flight), and loads both files again: the
// workspace is wholly at one checkpoint or the other.
func TestTwoPhaseRestoreSurvivesKill9(t *testing.T) {
	seen := map[string]int{}
	for round := range 8 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(out)
		require.True(t, lines.Scan(), "child ended early: %s", stderr.String())
		require.Equal(t, "ready", lines.Text())
		kill := rand.IntN(30)
		for i := 0; i < kill; i++ {
			require.True(t, lines.Scan(), "child ended early: %s", stderr.String())
		}
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()

		r, err := openPersisted(dir, "/memory", "/repo")
		require.NoError(t, err, "round %d: the files load", round)
		got, err := r.dump()
		require.NoError(t, err)
		for i, tree := range r.trees {
			assert.Nil(t, tree.PendingRestore(), "%s: no intent left", r.prefixes[i])
		}
		r.close(t)
		one, err := os.ReadFile(filepath.Join(dir, "one.dump"))
		require.NoError(t, err)
		two, err := os.ReadFile(filepath.Join(dir, "two.dump"))
		require.NoError(t, err)
		switch got {
		case string(one):
			seen["one"]++
		case string(two):
			seen["two"]++
		default:
			t.Fatalf("round %d (killed after %d restores): the workspace is neither checkpoint:\n%s\n--- one:\n%s\n--- two:\n%s", round, kill, got, one, two)
		}
	}
	t.Logf("states after the kills: %v", seen)
}

// TestTwoPhaseRestoreAbortsWhenTheCoordinatorFails: a coordinator whose
// store refuses the restore decides nothing: no participant is restored,
// and its intent is discarded, in the tree and in its file.
func TestTwoPhaseRestoreAbortsWhenTheCoordinatorFails(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p, err := openPersisted(dir, "/a", "/b")
	require.NoError(t, err)
	_, two, err := p.build(3)
	require.NoError(t, err)
	require.NoError(t, p.stores[0].Close()) // /a's store now refuses every commit
	var steps []string
	undo := checkpoint.SetTestHook(p.ws, func(step string) { steps = append(steps, step) })
	_, err = p.ws.Restore(ctx, "c1", nil)
	undo()
	require.ErrorIs(t, err, boltstore.ErrClosed)
	assert.Equal(t, []string{"prepared"}, steps, "never decided")
	assert.Nil(t, p.trees[1].PendingRestore())
	require.NoError(t, p.stores[1].Close())

	b, err := openTrees(dir, "/b")
	require.NoError(t, err)
	assert.Nil(t, b[0].PendingRestore(), "the intent is discarded in the file")
	r, err := openPersisted(dir, "/a", "/b")
	require.NoError(t, err)
	defer r.close(t)
	got, err := r.dump()
	require.NoError(t, err)
	assert.Equal(t, two, got, "neither file is restored")
}
