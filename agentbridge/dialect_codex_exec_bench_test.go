package agentbridge

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkExecCommandTrue runs `true` through codex's exec_command in the
// shell namespace, in one session (the "exec_command of true";
// compare BenchmarkShellTrue, target ≤ 30 ms). A login shell is codex's
// default; the plain case is the namespace's own cost.
func BenchmarkExecCommandTrue(b *testing.B) {
	w := kernelWorkspace(b, nil)
	s := w.NewSession()
	b.Cleanup(func() { s.Close() })
	ctx := WithSession(context.Background(), s)
	for _, bc := range []struct {
		name string
		args json.RawMessage
	}{
		{"login", json.RawMessage(`{"cmd":"true"}`)},
		{"plain", json.RawMessage(`{"cmd":"true","login":false}`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if r := w.Call(ctx, DialectCodex, "exec_command", bc.args); r.IsError {
					b.Fatal(r.Text)
				}
			}
		})
	}
}
