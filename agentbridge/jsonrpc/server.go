// Package jsonrpc serves an agentbridge workspace's tools as JSON-RPC 2.0
// over a byte stream (stdio) or a socket, and is the client of that
// server (vfsmount call --server). docs/protocol.md is the protocol for
// people writing clients in other languages.
//
// # Methods
//
//	tools.list      {dialect?}                      -> {tools: [ToolDef]}
//	tools.call      {name, arguments?, dialect?}    -> Result {text, isError?, content?}
//	workspace.brief {dialect?}                      -> {brief}
//	workspace.diff   {paths?, format?}              -> {text}
//	workspace.commit {dst?, message, branch, force?} -> {commit, ref}
//	workspace.reset  {paths?}                       -> {reset}
//	checkpoint.create|list|diff|restore|delete      (see [Checkpointer])
//
// The workspace.diff, commit and reset methods are served when the server
// has an [Exporter] (SetExporter): the changes of writable git mounts
// against their pinned commits, not tools of the model. The checkpoint
// methods are served from a [Checkpointer] (SetCheckpointer).
//
// A tool error is a successful response whose result has isError set; the
// JSON-RPC error object ([Error]) is for requests that cannot be served at
// all (malformed JSON, unknown method, bad params). A request without an
// id is a notification and gets no answer; an array is a batch, answered
// by an array.
//
// # Framing
//
// One message per line (newline-delimited JSON), at most 64 MiB, split by
// the standard library's bufio.Scanner. A line that is not JSON is
// answered with a parse error and the next line is read: one bad message
// does not end the connection. That is why the framing is not a JSON-RPC
// library's: sourcegraph/jsonrpc2's plain stream and the MCP SDK's
// newline-delimited transport decode the stream with a json.Decoder, which
// cannot go on after a syntax error, and the SDK's exported jsonrpc
// package has messages but no framing.
//
// # Encoding
//
// Messages are encoding/json's, with HTML escaping off on the server. A
// tools.call result can be megabytes (a read of a large file), so the
// client decodes one in the shape this server writes in a single pass
// over the text, about four times faster than encoding/json
// (BenchmarkCodec); anything else it receives goes through encoding/json.
//
// # Sessions
//
// Each connection is one agentbridge.Session: a `cd` in one shell call
// carries to the next call of the same connection, relative paths resolve
// against it, and the processes codex's exec_command leaves running live
// until the connection ends. Another connection has a session of its own.
//
// # Concurrency
//
// A connection runs up to 64 requests at once and answers each, whole on
// its own line, as it finishes: clients match answers by id. Each call
// reaches the workspace with the id "rpc-C-ID" (C numbers the server's
// connections from 1, ID is the request id), so an audit log tells apart
// two clients that both count from 1.
//
// # End of input
//
// A client may write all its requests and close its side at once (a
// batch piped into `vfsmount serve --listen stdio`, a socket shut down for
// writing): every request read before the end is still answered. The
// server waits for them up to [DrainGrace]; then it cancels the calls still
// running, which answer as cancelled, and returns. A client that is gone
// altogether ends the wait sooner: the first answer that cannot be written
// cancels the rest.
package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// maxInFlight bounds the requests one connection runs at once; a client
// that sends more waits for answers before the next is read.
const maxInFlight = 64

// DrainGrace bounds how long a connection whose input has ended waits for
// the answers to the requests it already read (see "# End of input").
// Thirty seconds covers any read, grep or short build a harness pipes in;
// a call still running then is cancelled, as SIGTERM would cancel it.
const DrainGrace = 30 * time.Second

// Server serves one workspace over any number of connections. It is safe
// for concurrent use.
type Server struct {
	ws  *agentbridge.Workspace
	log *slog.Logger
	// conns numbers connections, for the call ids.
	conns atomic.Int64
	// export serves the export methods (nil: none).
	export Exporter
	// ckpt serves the checkpoint methods (nil: none).
	ckpt Checkpointer
	// store serves store.push (nil: none).
	store StorePusher
	// maxMessage bounds one request: the package's maxMessage, less in
	// tests.
	maxMessage int
	// grace is DrainGrace, less in tests.
	grace time.Duration
}

// NewServer returns a server of ws's tools; a nil logger is silent. A nil
// ws serves no tools: a control socket that only serves an [Exporter].
func NewServer(ws *agentbridge.Workspace, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{ws: ws, log: logger, maxMessage: maxMessage, grace: DrainGrace}
}

// ServeStream serves one connection, requests read from r and responses
// written to w, until r ends or ctx is done. At the end of r it answers
// the requests already read before it returns, waiting for them up to
// [DrainGrace] (see "# End of input"). It returns nil at the end of r, the
// context's error when ctx was done or w failed, or the read error.
func (s *Server) ServeStream(ctx context.Context, r io.Reader, w io.Writer) error {
	conn := s.conns.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The connection is the caller's session: its shell directory and
	// the processes it left running, stopped when it ends. A server of
	// the export methods alone (no workspace) has no tools to keep one for.
	if s.ws != nil {
		sess := s.ws.NewSession()
		defer sess.Close()
		ctx = agentbridge.WithSession(ctx, sess)
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	send := func(resp any) {
		b, err := encodeResponse(resp)
		if err != nil {
			s.log.Error("agentbridge: json-rpc marshal", "err", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := w.Write(b); err != nil {
			cancel()
		}
	}
	sc := newScanner(r, s.maxMessage)
	sem := make(chan struct{}, maxInFlight)
	for ctx.Err() == nil && sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		line := bytes.Clone(sc.Bytes())
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if resp := s.handle(ctx, conn, line); resp != nil {
				send(resp)
			}
		}()
	}
	// Read errors and the end of input alike leave requests read and
	// not yet answered: answer them, within the grace period.
	if ctx.Err() == nil {
		s.drain(ctx, &wg, conn)
	}
	err := ctx.Err() // before the cancel that stops what the grace period left
	cancel()
	wg.Wait()
	if ferr := frameErr(sc, s.maxMessage); ferr != nil {
		return ferr
	}
	return err
}

// drain waits for the requests in flight at the end of a connection's
// input: until they are answered, ctx is done (a signal, or an answer
// that could not be written) or the grace period is over.
func (s *Server) drain(ctx context.Context, wg *sync.WaitGroup, conn int64) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(s.grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-timer.C:
		s.log.Warn("agentbridge: json-rpc input ended; cancelling the calls still running after the grace period", "conn", conn, "grace", s.grace)
	}
}

// ServeListener accepts connections on l and serves each until ctx is
// done; then it closes l and waits for the connections to finish.
func (s *Server) ServeListener(ctx context.Context, l net.Listener) error {
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
			if err := s.ServeStream(ctx, c, c); err != nil && ctx.Err() == nil {
				s.log.Debug("agentbridge: json-rpc connection ended", "err", err)
			}
		}()
	}
}

// handle answers one line: a request, a notification, or a batch.
func (s *Server) handle(ctx context.Context, conn int64, line []byte) any {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &Error{rpcInvalidRequest, "invalid batch"}}
		}
		var out []rpcResponse
		for _, m := range batch {
			if r := s.handleOne(ctx, conn, m); r != nil {
				out = append(out, *r)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	if r := s.handleOne(ctx, conn, line); r != nil {
		return *r
	}
	return nil
}

func (s *Server) handleOne(ctx context.Context, conn int64, msg []byte) *rpcResponse {
	var req rpcRequest
	if err := json.Unmarshal(msg, &req); err != nil {
		return &rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &Error{rpcParseError, "parse error: " + jsonErr(err)}}
	}
	notify := len(req.ID) == 0
	resp := &rpcResponse{JSONRPC: "2.0", ID: req.ID}
	if req.JSONRPC != "2.0" || req.Method == "" {
		resp.Error = &Error{rpcInvalidRequest, `invalid request: need "jsonrpc": "2.0" and a method`}
		if notify {
			resp.ID = json.RawMessage("null")
		}
		return resp
	}
	if !notify {
		ctx = agentbridge.WithCallID(ctx, callID(conn, req.ID))
	}
	resp.Result, resp.Error = s.dispatch(ctx, req.Method, req.Params)
	if notify {
		return nil
	}
	return resp
}

func (s *Server) dispatch(ctx context.Context, method string, params json.RawMessage) (any, *Error) {
	decode := func(v any) *Error {
		if len(params) == 0 || bytes.Equal(params, []byte("null")) {
			return nil
		}
		if err := json.Unmarshal(params, v); err != nil {
			return &Error{rpcInvalidParams, "invalid params: " + jsonErr(err)}
		}
		return nil
	}
	if res, e, ok := s.dispatchExport(ctx, method, decode); ok {
		return res, e
	}
	if res, e, ok := s.dispatchCheckpoint(ctx, method, decode); ok {
		return res, e
	}
	if res, e, ok := s.dispatchStore(ctx, method, decode); ok {
		return res, e
	}
	if s.ws == nil {
		return nil, &Error{rpcMethodNotFound, fmt.Sprintf("method %q not found (this server has no tools; methods: workspace.diff, workspace.commit, workspace.reset, checkpoint.create, checkpoint.list, checkpoint.diff, checkpoint.restore, checkpoint.delete, store.push, store.status, store.resume)", method)}
	}
	switch method {
	case "tools.list":
		var p ToolsListParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		defs, err := s.ws.Tools(p.Dialect)
		if err != nil {
			return nil, &Error{rpcInvalidParams, err.Error()}
		}
		return ToolsListResult{Tools: defs}, nil
	case "tools.call":
		var p ToolsCallParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		if p.Name == "" {
			return nil, &Error{rpcInvalidParams, `invalid params: "name" is required`}
		}
		return s.ws.Call(ctx, p.Dialect, p.Name, p.Arguments), nil
	case "workspace.brief":
		var p BriefParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		if _, err := s.ws.Tools(p.Dialect); err != nil {
			return nil, &Error{rpcInvalidParams, err.Error()}
		}
		return BriefResult{Brief: s.ws.BriefFor(p.Dialect)}, nil
	}
	return nil, &Error{rpcMethodNotFound, fmt.Sprintf("method %q not found (methods: tools.list, tools.call, workspace.brief)", method)}
}

// callID is the call id of a JSON-RPC request: "rpc-" with the
// connection number and the request id ("rpc-3-7").
func callID(conn int64, id json.RawMessage) string {
	s := string(bytes.TrimSpace(id))
	var str string
	if json.Unmarshal(id, &str) == nil {
		s = str
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return fmt.Sprintf("rpc-%d-%s", conn, s)
}
