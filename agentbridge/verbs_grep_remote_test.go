package agentbridge

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
)

// peerOpens counts, by name, the opens a peer's mount is asked for.
type peerOpens struct {
	mounts.FS
	mu sync.Mutex
	n  map[string]int
}

func (p *peerOpens) Open(ctx context.Context, name string) (mounts.File, error) {
	p.mu.Lock()
	p.n[name]++
	p.mu.Unlock()
	return p.FS.Open(ctx, name)
}

func (p *peerOpens) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.n {
		out[k] = v
	}
	return out
}

// remoteWorkspace mounts dir at /workspace through a peer in this process
// (over a pipe, as over ssh), whose opens are counted.
func remoteWorkspace(t *testing.T, dir string) (*Workspace, *peerOpens) {
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(interface{ Close() error }).Close() })
	counted := &peerOpens{FS: host, n: map[string]int{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
		a, b := net.Pipe()
		mu.Lock()
		conns = append(conns, b)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = peer.Serve(context.Background(), b, b, counted, peer.Options{Dir: dir, Build: "test"})
			b.Close()
		}()
		return a, nil
	}
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(dial), Source: "test-peer",
		Timeout: 5 * time.Second, Build: "test"})
	require.NoError(t, err)
	t.Cleanup(func() {
		fsys.(interface{ Close() error }).Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	_, w := realWorkspace(t, map[string]mounts.FS{"/workspace": fsys})
	return w, counted
}

// grep on a remote mount runs on the peer, and the files it finds are
// not read again across the link: each is opened on the remote machine
// once per search, by the search itself, in every output mode.
func TestGrepRemoteReadsEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	for d := range 3 {
		for i := range 30 {
			data := fmt.Sprintf("package p%d\n\n// file %d\nfunc f%d() {}\n", d, i, i)
			if i%10 == 3 {
				data += "// ident4242 here\nfunc after() {}\n"
			}
			name := filepath.Join(dir, fmt.Sprintf("src%d/f%02d.go", d, i))
			require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
			require.NoError(t, os.WriteFile(name, []byte(data), 0o644))
		}
	}
	w, counted := remoteWorkspace(t, dir)
	matching := []string{"src0/f03.go", "src0/f13.go", "src0/f23.go", "src1/f03.go", "src1/f13.go", "src1/f23.go",
		"src2/f03.go", "src2/f13.go", "src2/f23.go"}
	searched := func(step, prefix string, before map[string]int) {
		t.Helper()
		after := counted.counts()
		for _, name := range matching {
			if !strings.HasPrefix(name, prefix) {
				assert.Equal(t, before[name], after[name], "%s: %s not searched", step, name)
				continue
			}
			assert.Equal(t, before[name]+1, after[name], "%s: %s opened on the peer once, by the search", step, name)
		}
	}

	before := counted.counts()
	var files string
	for _, name := range matching {
		files += "/workspace/" + name + "\n"
	}
	assert.Equal(t, files, ok(t, w, "grep", obj{"pattern": "ident4242", "path": "/workspace", "outputMode": "files_with_matches",
		"sort": "path", "sortAscending": true}))
	searched("files", "", before)

	before = counted.counts()
	var lines []string
	for _, f := range []string{"f03", "f13", "f23"} {
		lines = append(lines, fmt.Sprintf("/workspace/src1/%s.go-4-func %s() {}\n/workspace/src1/%s.go:5:// ident4242 here\n/workspace/src1/%s.go-6-func after() {}\n",
			f, strings.Replace(f, "f0", "f", 1), f, f))
	}
	assert.Equal(t, strings.Join(lines, "--\n"), ok(t, w, "grep", obj{"pattern": "IDENT4242", "caseInsensitive": true,
		"path": "/workspace/src1", "outputMode": "content", "context": 1, "lineNumbers": true, "sort": "path", "sortAscending": true}))
	searched("content", "src1/", before)

	before = counted.counts()
	assert.Contains(t, ok(t, w, "grep", obj{"pattern": `func ident42[0-9]2|ident4242 here`, "path": "/workspace", "outputMode": "count"}),
		"/workspace/src2/f23.go:1\n")
	searched("count", "", before)
}
