//go:build stress

package stress

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
)

const (
	writers   = 4
	renamers  = 2
	readers   = 4
	filesEach = 8
)

func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s=%q", key, v)
	return n
}

// raceBinary builds cmd/vfsmount with the race detector into dir.
func raceBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VFSMOUNT_BINARY"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "vfsmount-race")
	out, err := exec.Command("go", "build", "-race", "-o", bin, "github.com/vfsmount/vfsmount/cmd/vfsmount").CombinedOutput()
	require.NoError(t, err, "go build -race:\n%s", out)
	return bin
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer = testutil.Buffer

type daemon struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

func start(t *testing.T, bin, dir string, specs ...string) *daemon {
	t.Helper()
	args := []string{"mount"}
	for _, s := range specs {
		args = append(args, "--mount", s)
	}
	d := &daemon{stderr: &syncBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(bin, append(args, dir)...)
	d.cmd.Stderr = d.stderr
	// halt_on_error makes a race fail the daemon at once, and loudly.
	d.cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	require.NoError(t, d.cmd.Start())
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = d.cmd.Process.Kill()
			<-d.done
		}
		if st, _ := fusefs.Probe(dir); st != fusefs.StateNone {
			_ = fusefs.ForceUnmount(dir)
		}
	})
	require.Eventually(t, func() bool {
		select {
		case <-d.done:
			fusetest.MountFailed(t, fmt.Errorf("vfsmount exited: %v\n%s", d.err, d.stderr))
		default:
		}
		st, _ := fusefs.Probe(dir)
		return st == fusefs.StateLive
	}, 60*time.Second, 20*time.Millisecond, "mount live")
	return d
}

// stop unmounts with SIGTERM and checks the daemon exited 0 without a race
// report (a race binary exits 66 when it found one).
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit after SIGTERM:\n%s", d.stderr)
	}
	assert.NoError(t, d.err, "daemon exit:\n%s", d.stderr)
	assert.NotContains(t, d.stderr.String(), "DATA RACE")
}

// content is what version v of a file holds: a header naming it, then
// bytes no other (name, version) produces.
func content(name string, v, size int) []byte {
	b := []byte(fmt.Sprintf("%s@%d\n", name, v))
	r := rand.New(rand.NewPCG(uint64(v), uint64(len(name))*7919+uint64(name[len(name)-1])))
	for len(b) < size {
		b = append(b, byte(r.Uint32()))
	}
	return b[:max(size, 0)]
}

// model is what a worker's files must hold: relative name to content.
type model map[string][]byte

// ignoreENOENT is nil for ENOENT: a reader racing a remover may miss.
func ignoreENOENT(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// writer owns w<i>/f<k> and w<i>/sub/f<k>: it creates, rewrites,
// appends, truncates, fsyncs and removes them. Workers run on their own
// goroutines, so they report with assert and stop at the first failure.
func writer(t *testing.T, root string, i, ops int, seed uint64) model {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	m := model{}
	version := 0
	for range ops {
		k := r.IntN(filesEach)
		name := fmt.Sprintf("w%d/f%d", i, k)
		if r.IntN(2) == 0 {
			name = fmt.Sprintf("w%d/sub/f%d", i, k)
		}
		path := filepath.Join(root, name)
		_, exists := m[name]
		version++
		switch op := r.IntN(10); {
		case op < 4 || !exists: // (re)write, sometimes large
			size := r.IntN(4 << 10)
			if r.IntN(8) == 0 {
				size = r.IntN(300 << 10)
			}
			data := content(name, version, size)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if !assert.NoError(t, err) {
				return m
			}
			_, err = f.Write(data)
			if !assert.NoError(t, err) {
				return m
			}
			if r.IntN(4) == 0 {
				if !assert.NoError(t, f.Sync()) {
					return m
				}
			}
			if !assert.NoError(t, f.Close()) {
				return m
			}
			m[name] = data
		case op < 6:
			extra := content(name, version, r.IntN(10000))
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if !assert.NoError(t, err) {
				return m
			}
			_, err = f.Write(extra)
			if !assert.NoError(t, err) {
				return m
			}
			if !assert.NoError(t, f.Close()) {
				return m
			}
			m[name] = append(m[name], extra...)
		case op < 8:
			size := r.IntN(len(m[name]) + 5000)
			if !assert.NoError(t, os.Truncate(path, int64(size))) {
				return m
			}
			if size <= len(m[name]) {
				m[name] = m[name][:size]
			} else {
				m[name] = append(m[name], make([]byte, size-len(m[name]))...)
			}
		default:
			if !assert.NoError(t, os.Remove(path)) {
				return m
			}
			delete(m, name)
		}
	}
	return m
}

// renamer owns r<j>/a<k> and shared/r<j>-a<k>: it moves its files between
// its own directory and the shared one, over each other too.
func renamer(t *testing.T, root string, j, ops int, seed uint64) model {
	r := rand.New(rand.NewPCG(seed, uint64(100+j)))
	m := model{}
	names := func(k int) [2]string {
		return [2]string{fmt.Sprintf("r%d/a%d", j, k), fmt.Sprintf("shared/r%d-a%d", j, k)}
	}
	for v := range ops {
		k := r.IntN(filesEach)
		pair := names(k)
		from, to := pair[0], pair[1]
		if r.IntN(2) == 0 {
			from, to = to, from
		}
		if _, ok := m[from]; !ok {
			data := content(from, v, r.IntN(2000))
			if !assert.NoError(t, os.WriteFile(filepath.Join(root, from), data, 0o644)) {
				return m
			}
			m[from] = data
			continue
		}
		if r.IntN(3) == 0 { // over another of its files
			to = names(r.IntN(filesEach))[r.IntN(2)]
		}
		if !assert.NoError(t, os.Rename(filepath.Join(root, from), filepath.Join(root, to))) {
			return m
		}
		if from != to {
			m[to] = m[from]
			delete(m, from)
		}
	}
	return m
}

// reader reads, lists and stats names others are changing: every call
// succeeds or finds nothing, never anything else (EIO, ENOTCONN, ...).
func reader(t *testing.T, root string, i, ops int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, uint64(200+i)))
	dirs := []string{"shared"}
	for w := range writers {
		dirs = append(dirs, fmt.Sprintf("w%d", w), fmt.Sprintf("w%d/sub", w))
	}
	for j := range renamers {
		dirs = append(dirs, fmt.Sprintf("r%d", j))
	}
	for range ops {
		dir := filepath.Join(root, dirs[r.IntN(len(dirs))])
		ents, err := os.ReadDir(dir)
		if !assert.NoError(t, ignoreENOENT(err)) {
			return
		}
		if len(ents) == 0 {
			continue
		}
		path := filepath.Join(dir, ents[r.IntN(len(ents))].Name())
		_, err = os.Lstat(path)
		if !assert.NoError(t, ignoreENOENT(err), path) {
			return
		}
		_, err = os.ReadFile(path)
		if !errors.Is(err, syscall.EISDIR) {
			if !assert.NoError(t, ignoreENOENT(err), path) {
				return
			}
		}
	}
}

// hammer runs every worker on root at once and returns the model. It
// runs on a goroutine of its own, so it reports with assert.
func hammer(t *testing.T, root string, ops int, seed uint64) model {
	t.Helper()
	if !assert.NoError(t, os.MkdirAll(filepath.Join(root, "shared"), 0o755)) {
		return nil
	}
	for w := range writers {
		if !assert.NoError(t, os.MkdirAll(filepath.Join(root, fmt.Sprintf("w%d", w), "sub"), 0o755)) {
			return nil
		}
	}
	for j := range renamers {
		if !assert.NoError(t, os.MkdirAll(filepath.Join(root, fmt.Sprintf("r%d", j)), 0o755)) {
			return nil
		}
	}
	var mu sync.Mutex
	want := model{}
	merge := func(m model) {
		mu.Lock()
		defer mu.Unlock()
		for k, v := range m {
			want[k] = v
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { merge(writer(t, root, w, ops, seed)) })
	}
	for j := range renamers {
		wg.Go(func() { merge(renamer(t, root, j, ops, seed)) })
	}
	for i := range readers {
		wg.Go(func() { reader(t, root, i, ops, seed) })
	}
	wg.Wait()
	return want
}

// verify walks root and compares every regular file with the model: the
// same names, the same bytes, nothing else.
func verify(t *testing.T, root string, want model) {
	t.Helper()
	got := map[string]int{}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		got[rel] = len(b)
		w, ok := want[rel]
		switch {
		case !ok:
			t.Errorf("%s: %s exists, but the model has no such file", root, rel)
		case !bytes.Equal(w, b):
			t.Errorf("%s: %s holds %d bytes that differ from the model's %d", root, rel, len(b), len(w))
		}
		return nil
	})
	require.NoError(t, err)
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: %s is missing", root, name)
		}
	}
	t.Logf("%s: %d files verified", root, len(got))
}

func TestStress(t *testing.T) {
	fusetest.Need(t)
	ops := envInt(t, "STRESS_OPS", 1500)
	seed := uint64(envInt(t, "STRESS_SEED", 1))
	bin := raceBinary(t)
	dir := t.TempDir()
	hostDir := t.TempDir()
	store := filepath.Join(t.TempDir(), "persist.db")
	specs := []string{
		"type=memory,dst=/memory",
		"type=memory,dst=/persist,persist=" + store,
		"type=host,src=" + hostDir + ",dst=/host",
	}
	d := start(t, bin, dir, specs...)

	roots := []string{"memory", "persist", "host"}
	models := make([]model, len(roots))
	var wg sync.WaitGroup
	begin := time.Now()
	for i, r := range roots {
		wg.Go(func() { models[i] = hammer(t, filepath.Join(dir, r), ops, seed+uint64(i)) })
	}
	wg.Wait()
	total := len(roots) * (writers + renamers + readers) * ops
	t.Logf("%d operations on %d mounts in %v", total, len(roots), time.Since(begin).Round(time.Millisecond))
	for i, r := range roots {
		verify(t, filepath.Join(dir, r), models[i])
	}
	verify(t, hostDir, models[2])
	d.stop(t)

	// The persistent mount holds the same after a restart.
	d = start(t, bin, dir, specs[1])
	verify(t, filepath.Join(dir, "persist"), models[1])
	d.stop(t)
}
