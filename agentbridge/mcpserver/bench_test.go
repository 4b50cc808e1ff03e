package mcpserver

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// BenchmarkReadOverMCP reads a 1 MiB file (64-byte lines) through an MCP
// client session, messages encoded and decoded as on stdio, and reports
// the median and p99 latency per call (issue 17: ≤ 2 ms), in the
// canonical dialect and in Claude Code's.
func BenchmarkReadOverMCP(b *testing.B) {
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	line := strings.Repeat("x", 63) + "\n"
	require.NoError(b, mounts.WriteFile(ctx, mem, "big.txt", []byte(strings.Repeat(line, (1<<20)/len(line))), 0o644))
	u, err := union.New(map[string]mounts.FS{"/memory": mem})
	require.NoError(b, err)
	w, err := agentbridge.New(u, agentbridge.Options{})
	require.NoError(b, err)
	for _, bc := range []struct {
		dialect, tool string
		args          map[string]any
	}{
		{"cursor", "read", map[string]any{"path": "/memory/big.txt", "limit": 100000}},
		{"claude", "Read", map[string]any{"file_path": "/memory/big.txt", "limit": 100000}},
	} {
		b.Run(bc.tool, func(b *testing.B) {
			srv, err := New(w, bc.dialect, nil)
			require.NoError(b, err)
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			require.NoError(b, err)
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).Connect(ctx, ct, nil)
			require.NoError(b, err)
			defer cs.Close()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: bc.tool, Arguments: bc.args})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
				lat = append(lat, time.Since(t0))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
		})
	}
}
