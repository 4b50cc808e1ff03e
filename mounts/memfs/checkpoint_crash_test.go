package memfs_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/memfs/boltstore"
)

// crashChildEnv makes the test binary the child of
// TestCheckpointRestoreSurvivesKill9: it restores back and forth until
// killed.
const crashChildEnv = "VFSMOUNT_CKPT_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild builds two states of a persisted tree, saves their dumps, and
// then restores one and the other for ever, saying "restored" after each.
func crashChild(dir string) {
	t := &testing.T{}
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(dir, "tree.db"), boltstore.Options{})
	must(err)
	fsys, err := store.Load(memfs.Options{})
	must(err)
	seed(t, fsys)
	// Enough files that a restore is a sizeable transaction.
	for i := range 200 {
		must(mounts.WriteFile(ctx, fsys, fmt.Sprintf("d/e/f%d", i), make([]byte, 3000), 0o644))
	}
	_, err = fsys.Checkpoint("a")
	must(err)
	mess(t, fsys)
	for i := range 200 {
		must(mounts.WriteFile(ctx, fsys, fmt.Sprintf("moved/e/f%d", i), []byte("changed"), 0o644))
	}
	_, err = fsys.Checkpoint("b")
	must(err)
	for _, id := range []string{"a", "b"} {
		_, err := fsys.RestoreCheckpoint(id)
		must(err)
		must(os.WriteFile(filepath.Join(dir, id+".dump"), []byte(dump(t, fsys)), 0o644))
	}
	must(fsys.Sync(ctx, "."))
	for i := 0; ; i++ {
		_, err := fsys.RestoreCheckpoint([]string{"a", "b"}[i%2])
		must(err)
		if i%3 == 0 {
			must(fsys.Sync(ctx, "."))
		}
		fmt.Println("restored")
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

// TestCheckpointRestoreSurvivesKill9 kills a process restoring checkpoints
// of a persisted tree at a random point, and reopens the file: it holds one
// state or the other, whole.
func TestCheckpointRestoreSurvivesKill9(t *testing.T) {
	for round := range 5 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(out)
		kill := 1 + rand.IntN(40)
		for i := 0; i < kill; i++ {
			require.True(t, lines.Scan(), "child ended early: %s", stderr.String())
		}
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()

		store, err := boltstore.Open(filepath.Join(dir, "tree.db"), boltstore.Options{LockTimeout: 5 * time.Second})
		require.NoError(t, err)
		fsys, err := store.Load(memfs.Options{})
		require.NoError(t, err, "round %d: the file loads", round)
		got := dump(t, fsys)
		require.NoError(t, store.Close())
		a, err := os.ReadFile(filepath.Join(dir, "a.dump"))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, "b.dump"))
		require.NoError(t, err)
		if got != string(a) && got != string(b) {
			t.Fatalf("round %d (killed after %d restores): the tree is neither state:\n%s\n--- a:\n%s\n--- b:\n%s", round, kill, got, a, b)
		}
	}
}
