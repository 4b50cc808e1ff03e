package agentbridge

import (
	"context"
	"encoding/json"
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
)

// benchTree writes the same tree of n source-like files to a native
// directory (on /dev/shm when there is one, so rg reads from memory as we
// do) and to a memory mount.
func benchTree(b *testing.B, n int) (native string, w *Workspace) {
	b.Helper()
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	native, err := os.MkdirTemp(base, "agentbridge-bench-")
	require.NoError(b, err)
	b.Cleanup(func() { os.RemoveAll(native) })
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	rnd := rand.New(rand.NewPCG(3, 4))
	words := []string{"func", "return", "if err != nil {", "}", "package main", "import", "ctx", "value", "TODO", "handler", "struct", "for i := range n {"}
	for i := range n {
		rel := fmt.Sprintf("p%02d/q%02d/f%05d.go", i%40, (i/40)%25, i)
		var sb strings.Builder
		for range 20 + rnd.IntN(40) {
			for range 1 + rnd.IntN(6) {
				sb.WriteString(words[rnd.IntN(len(words))])
				sb.WriteByte(' ')
			}
			if rnd.IntN(500) == 0 {
				sb.WriteString("needleXYZ")
			}
			sb.WriteByte('\n')
		}
		data := []byte(sb.String())
		dir := filepath.Dir(rel)
		require.NoError(b, os.MkdirAll(filepath.Join(native, dir), 0o755))
		require.NoError(b, os.WriteFile(filepath.Join(native, rel), data, 0o644))
		require.NoError(b, mounts.MkdirAll(ctx, mem, dir, 0o755))
		require.NoError(b, mounts.WriteFile(ctx, mem, rel, data, 0o644))
	}
	w, err = New(&testUnion{m: map[string]mounts.FS{"t": mem}, table: memoryAt("/t")}, Options{})
	require.NoError(b, err)
	return native, w
}

// BenchmarkGrepVsRipgrep runs the grep tool and rg on identical 20 000-file
// trees; the "x-rg" metric is our time over rg's (target ≤ 1.0).
func BenchmarkGrepVsRipgrep(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("ripgrep not installed")
	}
	native, w := benchTree(b, 20000)
	for _, mode := range []struct {
		name   string
		args   obj
		rgArgs []string
	}{
		{"files", obj{"pattern": "needleXYZ", "path": "/t", "headLimit": 0}, []string{"-l", "--hidden", "--no-ignore", "needleXYZ", "."}},
		{"content", obj{"pattern": "needle[A-Z]+", "path": "/t", "outputMode": "content", "headLimit": 0}, []string{"-n", "--hidden", "--no-ignore", "needle[A-Z]+", "."}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			raw, _ := json.Marshal(mode.args)
			var ours, theirs time.Duration
			for b.Loop() {
				t0 := time.Now()
				r := w.Call(context.Background(), "", "grep", raw)
				ours += time.Since(t0)
				if r.IsError {
					b.Fatal(r.Text)
				}
				cmd := exec.Command(rg, mode.rgArgs...)
				cmd.Dir = native
				t0 = time.Now()
				if out, err := cmd.Output(); err != nil || len(out) == 0 {
					b.Fatalf("rg: %v", err)
				}
				theirs += time.Since(t0)
			}
			b.ReportMetric(float64(ours)/float64(theirs), "x-rg")
			b.ReportMetric(float64(ours.Microseconds())/float64(b.N), "us-ours/op")
			b.ReportMetric(float64(theirs.Microseconds())/float64(b.N), "us-rg/op")
		})
	}
}

// BenchmarkShellTrue runs `true` through the shell tool (target ≤ 30 ms).
func BenchmarkShellTrue(b *testing.B) {
	w := kernelWorkspace(b, nil)
	raw := json.RawMessage(`{"command":"true"}`)
	for b.Loop() {
		if r := w.Call(context.Background(), "", "shell", raw); r.IsError {
			b.Fatal(r.Text)
		}
	}
}
