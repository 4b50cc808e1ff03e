package agentbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"

	"github.com/vfsmount/vfsmount/mounts"
)

// What the [Options] hooks see of a call, and the id that ties a call to
// what it changed.

// CallInfo describes one tool call to the [Options] hooks.
type CallInfo struct {
	// ID identifies the call in the audit log and in mounts.Caller:
	// the transport's (see [WithCallID]; over JSON-RPC "rpc-1-7", request 7
	// of the server's first connection), else a random one
	// ("call-1a2b3c4d5e6f").
	ID string `json:"id"`
	// Dialect and Tool are as called; Verb is the canonical verb, ""
	// when the tool is unknown.
	Dialect string `json:"dialect,omitempty"`
	Tool    string `json:"tool"`
	Verb    string `json:"verb,omitempty"`
	// Args are the arguments under their canonical names, in full
	// (file contents included).
	Args map[string]json.RawMessage `json:"args,omitempty"`
	// Paths are the workspace paths the call names (path, cwd, the
	// files of a patch), as given.
	Paths []string `json:"paths,omitempty"`
	// DryRun is set when the workspace only reports what it would do.
	DryRun bool `json:"dryRun,omitempty"`
	// Refused is the error of a BeforeCall that refused the call, for
	// AfterCall; "" when it ran.
	Refused string `json:"-"`
	// Note, when a BeforeCall sets it, ends the call's result on a line
	// of its own, error or not (an automatic checkpoint says which one
	// undoes the call).
	Note string `json:"-"`
}

// contentKeys are the canonical arguments that carry file contents.
var contentKeys = []string{"fileText", "oldText", "newText", "patchContent"}

// Summary returns the arguments as a JSON object with file contents
// replaced by their lengths ({"bytes": N}): what an audit log may keep.
func (c *CallInfo) Summary() json.RawMessage {
	out := make(map[string]any, len(c.Args))
	for k, v := range c.Args {
		switch {
		case slices.Contains(contentKeys, k):
			out[k] = lengthOf(v)
		case k == "edits":
			var edits []map[string]json.RawMessage
			if err := json.Unmarshal(v, &edits); err != nil {
				out[k] = map[string]int{"bytes": len(v)}
				continue
			}
			sum := make([]map[string]any, len(edits))
			for i, e := range edits {
				sum[i] = map[string]any{}
				for ek, ev := range e {
					if r, ok := canonicalEditKey(ek); ok && slices.Contains(contentKeys, r) {
						sum[i][ek] = lengthOf(ev)
					} else {
						sum[i][ek] = ev
					}
				}
			}
			out[k] = sum
		default:
			out[k] = v
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// canonicalEditKey maps the key of one edits[] object, in any dialect, to
// its canonical name.
func canonicalEditKey(k string) (string, bool) {
	switch k {
	case "oldText", "old_string":
		return "oldText", true
	case "newText", "new_string":
		return "newText", true
	}
	return k, false
}

// lengthOf summarises a JSON value: a string by its byte length, anything
// else by the length of its encoding.
func lengthOf(v json.RawMessage) map[string]int {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return map[string]int{"bytes": len(s)}
	}
	return map[string]int{"bytes": len(v)}
}

// paths collects the workspace paths the arguments name.
func (a *args) paths() []string {
	var out []string
	for _, k := range []string{"path", "cwd"} {
		if s, err := a.str(k, false); err == nil && s != "" {
			out = append(out, s)
		}
	}
	if a.present("paths") { // readLints, and the checkpoint tools' limits
		if ps, err := a.strs("paths"); err == nil {
			out = append(out, ps...)
		}
	}
	if ds, err := a.strs("targetDirectories"); err == nil { // semSearch
		out = append(out, ds...)
	}
	if s, err := a.str("patchContent", false); err == nil && s != "" {
		if fps, err := ParsePatch(s); err == nil {
			for _, fp := range fps {
				out = append(out, fp.Path)
				if fp.MoveTo != "" {
					out = append(out, fp.MoveTo)
				}
			}
		}
	}
	return out
}

type callIDKey struct{}

// WithCallID returns a context carrying the id a transport gave a call
// (package jsonrpc's is made from the request id); [Workspace.Call] uses
// it instead of a random one.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

func callID(ctx context.Context) string {
	if id, ok := ctx.Value(callIDKey{}).(string); ok && id != "" {
		return id
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "call-" + hex.EncodeToString(b[:])
}

// toolCaller is the mounts.Caller of a tool call: this process's ids (new
// files belong to whoever runs the tool face) and the call id.
func toolCaller(id string) mounts.Caller {
	return mounts.Caller{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid()), Face: mounts.FaceTool, CallID: id}
}

// dryRunNote ends every dry-run result.
const dryRunNote = "(dry run: nothing was changed)"
