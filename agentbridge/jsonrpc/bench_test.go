package jsonrpc

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/agentbridge"
)

// bigRead is a 1 MiB file of 64-byte lines, and the text a read of it
// returns (line numbers and tabs make it about 1.1 MiB).
func bigRead(b *testing.B) (*agentbridge.Workspace, agentbridge.Result) {
	line := strings.Repeat("x", 63) + "\n"
	w := fixture(b, map[string]string{"/memory/big.txt": strings.Repeat(line, (1<<20)/len(line))}, agentbridge.Options{})
	res := w.Call(context.Background(), "", "read", json.RawMessage(`{"path":"/memory/big.txt","limit":100000}`))
	require.False(b, res.IsError, res.Text)
	return w, res
}

// BenchmarkReadOverJSONRPC reads a 1 MiB file through a unix socket and
// reports the median and p99 latency (target p50 ≤ 2 ms).
func BenchmarkReadOverJSONRPC(b *testing.B) {
	w, _ := bigRead(b)
	sock := filepath.Join(b.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go NewServer(w, nil).ServeListener(ctx, l)
	conn, err := net.Dial("unix", sock)
	require.NoError(b, err)
	c := NewClient(conn)
	defer c.Close()
	params := ToolsCallParams{Name: "read", Arguments: json.RawMessage(`{"path":"/memory/big.txt","limit":100000}`)}
	var lat []time.Duration
	for b.Loop() {
		var r agentbridge.Result
		t0 := time.Now()
		if err := c.Call(ctx, "tools.call", params, &r); err != nil || r.IsError {
			b.Fatal(err, r.Text)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

// reportLatency reports the median and the 99th percentile of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
}

// BenchmarkReadDirect is the baseline of BenchmarkReadOverJSONRPC: the
// same read called in-process, canonical and in Claude Code's format.
func BenchmarkReadDirect(b *testing.B) {
	w, _ := bigRead(b)
	for _, bc := range []struct{ dialect, tool, args string }{
		{"", "read", `{"path":"/memory/big.txt","limit":100000}`},
		{"claude", "Read", `{"file_path":"/memory/big.txt","limit":100000}`},
	} {
		b.Run(bc.tool, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if r := w.Call(context.Background(), bc.dialect, bc.tool, json.RawMessage(bc.args)); r.IsError {
					b.Fatal(r.Text)
				}
				lat = append(lat, time.Since(t0))
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkCodec encodes and decodes the tools.call response of a 1 MiB
// read: the server's encoder (encoding/json) against the MCP SDK's
// exported JSON-RPC codec, and the client's one-pass decoder against
// encoding/json and the SDK. It is why the hand-written decoder stays.
func BenchmarkCodec(b *testing.B) {
	_, res := bigRead(b)
	id := json.RawMessage(`7`)
	resp := rpcResponse{JSONRPC: "2.0", ID: id, Result: res}
	wire, err := encodeResponse(resp)
	require.NoError(b, err)
	sdkID, err := sdk.MakeID(float64(7))
	require.NoError(b, err)

	b.Run("encode/encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(res.Text)))
		for b.Loop() {
			if _, err := encodeResponse(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/mcp-sdk", func(b *testing.B) {
		b.SetBytes(int64(len(res.Text)))
		for b.Loop() {
			raw, err := json.Marshal(res)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sdk.EncodeMessage(&sdk.Response{ID: sdkID, Result: raw}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/hand", func(b *testing.B) {
		b.SetBytes(int64(len(res.Text)))
		for b.Loop() {
			var r agentbridge.Result
			if !decodeResultFast(wire, &r) {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("decode/encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(res.Text)))
		for b.Loop() {
			var r struct{ Result agentbridge.Result }
			if err := json.Unmarshal(wire, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/mcp-sdk", func(b *testing.B) {
		b.SetBytes(int64(len(res.Text)))
		for b.Loop() {
			msg, err := sdk.DecodeMessage(wire)
			if err != nil {
				b.Fatal(err)
			}
			var r agentbridge.Result
			if err := json.Unmarshal(msg.(*sdk.Response).Result, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
