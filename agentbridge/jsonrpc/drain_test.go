package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// blockingFixture is a workspace whose calls of ls with path "/slow" hold
// until release is closed or their context is done; started receives one
// value per such call, once it holds.
func blockingFixture(t *testing.T) (w *agentbridge.Workspace, started chan struct{}, release chan struct{}) {
	started, release = make(chan struct{}, 8), make(chan struct{})
	w = fixture(t, map[string]string{"/slow/a": "x"}, agentbridge.Options{BeforeCall: func(ctx context.Context, c *agentbridge.CallInfo) error {
		if !strings.Contains(string(c.Args["path"]), "/slow") {
			return nil
		}
		started <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	return w, started, release
}

// answers reads the responses of a stream until it ends, by id.
func answers(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	got := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var resp struct {
			ID     json.RawMessage
			Result json.RawMessage
			Error  json.RawMessage
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &resp), sc.Text())
		got[string(resp.ID)] = string(resp.Result) + string(resp.Error)
	}
	return got
}

// TestServeStreamAnswersAtEOF: requests piped in and the input closed
// at once are all answered, the one still running included, before
// ServeStream returns.
func TestServeStreamAnswersAtEOF(t *testing.T) {
	w, started, release := blockingFixture(t)
	srv := NewServer(w, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- srv.ServeStream(context.Background(), inR, outW)
		outW.Close()
	}()
	got := make(chan map[string]string, 1)
	go func() { got <- answers(t, outR) }()
	_, err := io.WriteString(inW, strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools.call","params":{"name":"ls","arguments":{"path":"/slow"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools.list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools.call","params":{"name":"ls","arguments":{"path":"/"}}}`,
	}, "\n")+"\n")
	require.NoError(t, err)
	<-started
	require.NoError(t, inW.Close()) // end of input while id 1 runs
	select {
	case err := <-served:
		t.Fatalf("ServeStream returned (%v) with a request unanswered", err)
	default:
	}
	close(release)
	require.NoError(t, <-served)
	ids := <-got
	assert.Len(t, ids, 3, "%v", ids)
	assert.Contains(t, ids["1"], `a`, "the slow call's own answer")
	assert.NotContains(t, ids["1"], `isError`)
}

// TestServeStreamGracePeriod: a call still running when the grace period
// after the end of input is over is cancelled, and answered as such.
func TestServeStreamGracePeriod(t *testing.T) {
	w, started, _ := blockingFixture(t)
	srv := NewServer(w, nil)
	srv.grace = 10 * time.Millisecond
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- srv.ServeStream(context.Background(), inR, outW)
		outW.Close()
	}()
	got := make(chan map[string]string, 1)
	go func() { got <- answers(t, outR) }()
	_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":"s","method":"tools.call","params":{"name":"ls","arguments":{"path":"/slow"}}}`+"\n")
	require.NoError(t, err)
	<-started
	require.NoError(t, inW.Close())
	require.NoError(t, <-served, "the end of input is no error, grace period or not")
	ids := <-got
	require.Contains(t, ids, `"s"`)
	assert.Contains(t, ids[`"s"`], `"isError":true`)
	assert.Contains(t, ids[`"s"`], `context canceled`)
}
