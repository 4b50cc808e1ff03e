package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Toxiproxy is a real Toxiproxy server (toxiproxy-server, which .ci/run
// installs with go install) on 127.0.0.1 and a free port, driven through
// its HTTP API; it stops with the test. It puts a link the test controls
// between a client and a server: latency, and cuts.
type Toxiproxy struct {
	api string
	cmd *exec.Cmd
}

// Proxy is one proxied link: Port on 127.0.0.1 forwards to its upstream.
type Proxy struct {
	Port int
	t    *Toxiproxy
	name string
}

// StartToxiproxy starts the server. Without toxiproxy-server on PATH the
// test fails under VFSMOUNT_REQUIRE_FUSE=1 and is skipped otherwise.
func StartToxiproxy(tb testing.TB) *Toxiproxy {
	tb.Helper()
	bin, err := exec.LookPath("toxiproxy-server")
	if err != nil {
		if os.Getenv("VFSMOUNT_REQUIRE_FUSE") == "1" {
			tb.Fatalf("toxiproxy-server required with VFSMOUNT_REQUIRE_FUSE=1 (.ci/run installs it): %v", err)
		}
		tb.Skip("toxiproxy-server is not installed")
	}
	port := FreePort(tb)
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", fmt.Sprint(port))
	var log Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	t := &Toxiproxy{api: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(t.api + "/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return t
			}
		}
		select {
		case <-done:
			tb.Fatalf("toxiproxy-server exited: %s", log.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("toxiproxy-server not answering after 15 s: %v; %s", err, log.String())
		}
	}
}

// call sends one API request and fails the test unless it succeeds.
func (t *Toxiproxy) call(tb testing.TB, method, path string, body any) {
	tb.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tb.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, t.api+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("toxiproxy %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		tb.Fatalf("toxiproxy %s %s: %s: %s", method, path, resp.Status, msg)
	}
}

// Proxy makes a link from a new port on 127.0.0.1 to upstream.
func (t *Toxiproxy) Proxy(tb testing.TB, name, upstream string) *Proxy {
	tb.Helper()
	p := &Proxy{Port: FreePort(tb), t: t, name: name}
	t.call(tb, http.MethodPost, "/proxies", map[string]any{
		"name": name, "listen": fmt.Sprintf("127.0.0.1:%d", p.Port), "upstream": upstream, "enabled": true,
	})
	return p
}

// Cut makes the link silent both ways without closing it, as a cable
// pulled or a peer's machine frozen: bytes sent are dropped, nobody is
// told, and new connections get no answer either.
func (p *Proxy) Cut(tb testing.TB) {
	tb.Helper()
	for _, stream := range []string{"upstream", "downstream"} {
		p.t.call(tb, http.MethodPost, "/proxies/"+p.name+"/toxics", map[string]any{
			"name": "cut-" + stream, "type": "timeout", "stream": stream, "toxicity": 1.0,
			"attributes": map[string]any{"timeout": 0},
		})
	}
}

// Restore ends a Cut: new connections work again (those that were cut
// lost bytes and are not to be trusted).
func (p *Proxy) Restore(tb testing.TB) {
	tb.Helper()
	for _, stream := range []string{"upstream", "downstream"} {
		p.t.call(tb, http.MethodDelete, "/proxies/"+p.name+"/toxics/cut-"+stream, nil)
	}
}
