package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	// rpcExportFailed is an export method that could not be done (a
	// branch that exists, a git that fails): a server error.
	rpcExportFailed = -32000
)

// CodeInvalidParams is the code of an answer to a request that is bad
// input, for clients that tell it apart from a failure.
const CodeInvalidParams = rpcInvalidParams

// maxMessage bounds one JSON-RPC message, newline included, so a runaway
// peer cannot make either end buffer without end.
const maxMessage = 64 << 20

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object: what a request that cannot be served
// at all gets (malformed JSON, unknown method, bad params). [Client.Call]
// returns it as its error.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// ToolsListParams are the params of tools.list.
type ToolsListParams struct {
	Dialect string `json:"dialect,omitempty"`
}

// ToolsListResult is the result of tools.list.
type ToolsListResult struct {
	Tools []agentbridge.ToolDef `json:"tools"`
}

// ToolsCallParams are the params of tools.call.
type ToolsCallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Dialect   string          `json:"dialect,omitempty"`
}

// BriefParams are the params of workspace.brief: the brief names the
// tools as dialect does.
type BriefParams struct {
	Dialect string `json:"dialect,omitempty"`
}

// BriefResult is the result of workspace.brief.
type BriefResult struct {
	Brief string `json:"brief"`
}

// newScanner frames a stream as newline-delimited JSON, one message per
// line, each at most max bytes with its newline. A final line without a
// newline is a message too. The token is only valid until the next Scan:
// keep a copy.
func newScanner(r io.Reader, max int) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, max)), max)
	return sc
}

// frameErr is why a scanner with limit max stopped: nil at the end of the
// stream, the read error, or a message over the limit.
func frameErr(sc *bufio.Scanner, max int) error {
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("json-rpc message over %d bytes", max)
	}
	return sc.Err()
}

func jsonErr(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// encodeResponse marshals a response (one, or a batch), newline
// included. HTML escaping is off: it would turn every <, > and & of a file
// into \u003c… on the wire and send the client's one-pass decoder to its
// slow path. This is as fast as the hand-written encoder it replaced
// (BenchmarkCodec).
func encodeResponse(resp any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// responseID reads the id of a response without decoding the rest: the
// caller that waits for it decodes the message once, into its own type.
// It reads tokens only up to the id, which our server writes first.
func responseID(line []byte) (int64, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0, false
		}
		if key == "id" {
			var id int64
			if err := dec.Decode(&id); err != nil {
				return 0, false
			}
			return id, true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0, false
		}
	}
	return 0, false
}

// quoteOrEscape is the index of the first '"' or '\\' in b, or -1. A plain
// loop: bytes.IndexAny builds its set on every call, and a read result
// has an escape (\t, \n) every few dozen bytes.
func quoteOrEscape(b []byte) int {
	for i, c := range b {
		if c == '"' || c == '\\' {
			return i
		}
	}
	return -1
}

// decodeResultFast decodes a tools.call response in the exact shape
// encodeResponse writes, unquoting the text in one pass. Anything else
// (another server, an escape it does not handle) returns false and is
// decoded by encoding/json, which is about four times slower on megabytes
// (BenchmarkCodec).
func decodeResultFast(line []byte, r *agentbridge.Result) bool {
	line = bytes.TrimRight(line, "\r\n")
	const head = `{"jsonrpc":"2.0","id":`
	if !bytes.HasPrefix(line, []byte(head)) {
		return false
	}
	rest := line[len(head):]
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return false
	}
	rest = rest[i:]
	const mid = `,"result":{"text":"`
	if !bytes.HasPrefix(rest, []byte(mid)) {
		return false
	}
	rest = rest[len(mid):]
	out := make([]byte, 0, len(rest))
	for {
		j := quoteOrEscape(rest)
		if j < 0 {
			return false
		}
		out = append(out, rest[:j]...)
		if rest[j] == '"' {
			rest = rest[j+1:]
			break
		}
		if j+1 >= len(rest) {
			return false
		}
		switch rest[j+1] {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case '"', '\\', '/':
			out = append(out, rest[j+1])
		default:
			return false // \u, \b, \f: let encoding/json do it
		}
		rest = rest[j+2:]
	}
	switch string(rest) {
	case "}}":
		*r = agentbridge.Result{Text: string(out)}
	case `,"isError":true}}`:
		*r = agentbridge.Result{Text: string(out), IsError: true}
	default:
		return false
	}
	return utf8.Valid(out)
}
