package agentbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// JSON-RPC 2.0 over a byte stream, one message per line (newline-delimited
// JSON, as over stdio or a unix socket). Methods:
//
//	tools.list      {dialect?}                      -> {tools: [ToolDef]}
//	tools.call      {name, arguments?, dialect?}    -> Result {text, isError}
//	workspace.brief {}                              -> {brief}
//
// A tool error is a successful response whose result has isError set; the
// JSON-RPC error object is for requests that cannot be served at all
// (malformed JSON, unknown method, bad params).

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
)

// maxInFlight bounds the requests one connection runs at once; a client
// that sends more waits for answers before the next is read.
const maxInFlight = 64

// maxMessage bounds one JSON-RPC message, so a runaway peer cannot make the
// server buffer without end.
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
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// ToolsListParams are the params of tools.list.
type ToolsListParams struct {
	Dialect string `json:"dialect,omitempty"`
}

// ToolsListResult is the result of tools.list.
type ToolsListResult struct {
	Tools []ToolDef `json:"tools"`
}

// ToolsCallParams are the params of tools.call.
type ToolsCallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Dialect   string          `json:"dialect,omitempty"`
}

// BriefResult is the result of workspace.brief.
type BriefResult struct {
	Brief string `json:"brief"`
}

// ServeJSONRPC serves one connection until r ends or ctx is done. Requests
// run concurrently; responses are written whole, one per line, in the order
// they finish.
func (w *Workspace) ServeJSONRPC(ctx context.Context, r io.Reader, wr io.Writer) error {
	ctx = context.WithValue(ctx, connKey{}, w.rpcConns.Add(1))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	send := func(resp any) {
		b, err := encodeResponse(resp)
		if err != nil {
			w.log.Error("agentbridge: json-rpc marshal", "err", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := wr.Write(append(b, '\n')); err != nil {
			cancel()
		}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	sem := make(chan struct{}, maxInFlight)
	var err error
	for ctx.Err() == nil {
		var line []byte
		line, err = readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			sem <- struct{}{}
			wg.Add(1)
			go func(line []byte) {
				defer wg.Done()
				defer func() { <-sem }()
				if resp := w.handleRPC(ctx, line); resp != nil {
					send(resp)
				}
			}(line)
		}
		if err != nil {
			break
		}
	}
	wg.Wait()
	if errors.Is(err, io.EOF) || err == nil {
		return ctx.Err()
	}
	return err
}

// encodeResponse marshals a response. A tool result, which may be
// megabytes of text (a read of a large file), is encoded by hand: its
// string is escaped in one pass instead of through reflection.
func encodeResponse(resp any) ([]byte, error) {
	r, ok := resp.(rpcResponse)
	if !ok || r.Error != nil {
		return json.Marshal(resp)
	}
	res, ok := r.Result.(Result)
	if !ok || !utf8.ValidString(res.Text) {
		return json.Marshal(resp)
	}
	b := make([]byte, 0, len(res.Text)+len(res.Text)/8+64)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, r.ID...)
	b = append(b, `,"result":{"text":`...)
	b = appendJSONString(b, res.Text)
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, "}}"...), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s, valid UTF-8, as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxMessage {
			return nil, fmt.Errorf("json-rpc message over %d bytes", maxMessage)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// handleRPC answers one line: a request, a notification, or a batch.
func (w *Workspace) handleRPC(ctx context.Context, line []byte) any {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &RPCError{rpcInvalidRequest, "invalid batch"}}
		}
		var out []rpcResponse
		for _, m := range batch {
			if r := w.handleOne(ctx, m); r != nil {
				out = append(out, *r)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	if r := w.handleOne(ctx, line); r != nil {
		return *r
	}
	return nil
}

func (w *Workspace) handleOne(ctx context.Context, msg []byte) *rpcResponse {
	var req rpcRequest
	if err := json.Unmarshal(msg, &req); err != nil {
		return &rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &RPCError{rpcParseError, "parse error: " + jsonErr(err)}}
	}
	notify := len(req.ID) == 0
	resp := &rpcResponse{JSONRPC: "2.0", ID: req.ID}
	if req.JSONRPC != "2.0" || req.Method == "" {
		resp.Error = &RPCError{rpcInvalidRequest, `invalid request: need "jsonrpc": "2.0" and a method`}
		if notify {
			resp.ID = json.RawMessage("null")
		}
		return resp
	}
	if !notify {
		ctx = WithCallID(ctx, rpcCallID(ctx, req.ID))
	}
	resp.Result, resp.Error = w.dispatch(ctx, req.Method, req.Params)
	if notify {
		return nil
	}
	return resp
}

func (w *Workspace) dispatch(ctx context.Context, method string, params json.RawMessage) (any, *RPCError) {
	decode := func(v any) *RPCError {
		if len(params) == 0 || bytes.Equal(params, []byte("null")) {
			return nil
		}
		if err := json.Unmarshal(params, v); err != nil {
			return &RPCError{rpcInvalidParams, "invalid params: " + jsonErr(err)}
		}
		return nil
	}
	switch method {
	case "tools.list":
		var p ToolsListParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		defs, err := w.Tools(p.Dialect)
		if err != nil {
			return nil, &RPCError{rpcInvalidParams, err.Error()}
		}
		return ToolsListResult{Tools: defs}, nil
	case "tools.call":
		var p ToolsCallParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		if p.Name == "" {
			return nil, &RPCError{rpcInvalidParams, `invalid params: "name" is required`}
		}
		return w.Call(ctx, p.Dialect, p.Name, p.Arguments), nil
	case "workspace.brief":
		return BriefResult{Brief: w.Brief()}, nil
	}
	return nil, &RPCError{rpcMethodNotFound, fmt.Sprintf("method %q not found (methods: tools.list, tools.call, workspace.brief)", method)}
}

// ServeListener accepts connections on l and serves each until ctx is
// done; then it closes l and waits for the connections to finish.
func (w *Workspace) ServeListener(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			stop := context.AfterFunc(ctx, func() { c.Close() })
			defer stop()
			if err := w.ServeJSONRPC(ctx, c, c); err != nil && ctx.Err() == nil {
				w.log.Debug("agentbridge: json-rpc connection ended", "err", err)
			}
		}()
	}
}

// Client calls a JSON-RPC server of this package over one connection. It
// is safe for concurrent use; calls are answered out of order by id.
type Client struct {
	conn    io.ReadWriteCloser
	wmu     sync.Mutex
	mu      sync.Mutex
	pending map[int64]chan []byte
	nextID  atomic.Int64
	err     error
	done    chan struct{}
}

// NewClient starts reading responses from conn.
func NewClient(conn io.ReadWriteCloser) *Client {
	c := &Client{conn: conn, pending: map[int64]chan []byte{}, done: make(chan struct{})}
	go c.readLoop()
	return c
}

func (c *Client) readLoop() {
	br := bufio.NewReaderSize(c.conn, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(br)
		if id, ok := responseID(line); ok {
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
		if err != nil {
			break
		}
	}
	c.mu.Lock()
	c.err = fmt.Errorf("json-rpc connection closed: %w", err)
	c.mu.Unlock()
	close(c.done)
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

// Call sends method with params and decodes the result into result.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	id := c.nextID.Add(1)
	ch := make(chan []byte, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	c.wmu.Lock()
	_, err = c.conn.Write(append(b, '\n'))
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case line := <-ch:
		if r, ok := result.(*Result); ok && decodeResultFast(line, r) {
			return nil
		}
		// One pass: the result is decoded straight into the caller's
		// value (a non-nil pointer held in an interface).
		var r struct {
			Result any       `json:"result"`
			Error  *RPCError `json:"error"`
		}
		r.Result = result
		if result == nil {
			r.Result = new(json.RawMessage)
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("json-rpc response: %w", err)
		}
		if r.Error != nil {
			return r.Error
		}
		return nil
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return ctx.Err()
	}
}

// decodeResultFast decodes a tools.call response in the exact shape
// encodeResponse writes, unquoting the text in one pass. Anything else
// (another server, an escape it does not handle) returns false and is
// decoded by encoding/json, which is several times slower on megabytes.
func decodeResultFast(line []byte, r *Result) bool {
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
		j := bytes.IndexAny(rest, `"\`)
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
		*r = Result{Text: string(out)}
	case `,"isError":true}}`:
		*r = Result{Text: string(out), IsError: true}
	default:
		return false
	}
	return utf8.Valid(out)
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

type connKey struct{}

// rpcCallID is the call id of a JSON-RPC request: "rpc-" with the
// connection number and the request id ("rpc-3-7").
func rpcCallID(ctx context.Context, id json.RawMessage) string {
	s := string(bytes.TrimSpace(id))
	var str string
	if json.Unmarshal(id, &str) == nil {
		s = str
	}
	if len(s) > 64 {
		s = s[:64]
	}
	conn, _ := ctx.Value(connKey{}).(int64)
	return fmt.Sprintf("rpc-%d-%s", conn, s)
}
