package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DrainGrace bounds how long the end of a client's input waits for the
// answers to the requests it already sent (see [DrainingTransport]): the
// same thirty seconds as the JSON-RPC face's.
const DrainGrace = 30 * time.Second

// DrainingTransport is a newline-delimited transport over r and w (stdin
// and stdout for an MCP server over stdio) that answers what was asked
// before it ends: when r ends, the session sees the end only once every
// request read from r has been answered on w, or after grace (then the
// calls still running are cancelled, as the session ends). A nil logger
// is silent.
//
// The SDK's stdio transport ends the session as soon as stdin does, and
// the session cancels its calls and drops their answers: a client that
// pipes its requests in and closes stdin (a script, a test, `printf … |
// vfsmount mcp`) got no answer to a call still running, and often not to
// initialize either. Holding the end of input back is the one place that
// sees both every request and every answer: a middleware would see a
// request only once it is dispatched and its answer before it is
// written. It counts ids on the wire, so it knows nothing of MCP beyond
// JSON-RPC: a message with a method and an id is a request to answer, a
// message with an id and no method is an answer (batches are arrays of
// both).
func DrainingTransport(r io.ReadCloser, w io.WriteCloser, grace time.Duration, logger *slog.Logger) *mcp.IOTransport {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &pending{ids: map[string]int{}, changed: make(chan struct{}), closed: make(chan struct{})}
	return &mcp.IOTransport{
		Reader: &drainReader{r: r, p: p, grace: grace, log: logger},
		Writer: &drainWriter{w: w, p: p},
	}
}

// pending is the multiset of request ids read and not yet answered.
type pending struct {
	mu      sync.Mutex
	ids     map[string]int
	n       int
	changed chan struct{} // closed and replaced when n drops
	closed  chan struct{} // closed when the connection closes
	once    sync.Once
}

func (p *pending) add(id string) {
	p.mu.Lock()
	p.ids[id]++
	p.n++
	p.mu.Unlock()
}

func (p *pending) answered(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids[id] == 0 {
		return // an answer to nothing read: not ours to count
	}
	if p.ids[id]--; p.ids[id] == 0 {
		delete(p.ids, id)
	}
	p.n--
	close(p.changed)
	p.changed = make(chan struct{})
}

// wait returns when no request is pending, the connection closed, or
// timeout fired; it reports how many were still pending.
func (p *pending) wait(timeout <-chan time.Time) int {
	for {
		p.mu.Lock()
		n, changed := p.n, p.changed
		p.mu.Unlock()
		if n == 0 {
			return 0
		}
		select {
		case <-changed:
		case <-p.closed:
			return n
		case <-timeout:
			return n
		}
	}
}

// lines splits a stream into lines and hands each complete one to fn; at
// the end, flush hands over the rest (the SDK decodes a last message
// without a newline too).
type lines struct {
	buf []byte
}

func (l *lines) write(b []byte, fn func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.buf = append(l.buf, b...)
			return
		}
		if len(l.buf) > 0 {
			l.buf = append(l.buf, b[:i]...)
			fn(l.buf)
			l.buf = l.buf[:0]
		} else {
			fn(b[:i])
		}
		b = b[i+1:]
	}
}

func (l *lines) flush(fn func([]byte)) {
	if len(bytes.TrimSpace(l.buf)) > 0 {
		fn(l.buf)
	}
	l.buf = nil
}

// wireMessage is what the counting reads of a JSON-RPC message.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// eachMessage calls fn with the id (as a key equal for equal JSON values)
// and method of each message of a line: one message or a batch. Lines that
// do not parse are the SDK's to refuse.
func eachMessage(line []byte, fn func(id, method string)) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var msgs []wireMessage
	if line[0] == '[' {
		if json.Unmarshal(line, &msgs) != nil {
			return
		}
	} else {
		var m wireMessage
		if json.Unmarshal(line, &m) != nil {
			return
		}
		msgs = []wireMessage{m}
	}
	for _, m := range msgs {
		var id any
		if len(m.ID) == 0 || json.Unmarshal(m.ID, &id) != nil || id == nil {
			continue // a notification
		}
		// 7 and 7.0 are one id, as the SDK decodes them.
		fn(fmt.Sprintf("%T:%v", id, id), m.Method)
	}
}

// drainReader counts the requests it reads and holds the end of input
// back until they are answered.
type drainReader struct {
	r     io.ReadCloser
	p     *pending
	grace time.Duration
	log   *slog.Logger
	lines lines
	err   error // the end of input, once the wait is over
}

func (d *drainReader) Read(b []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.r.Read(b)
	d.lines.write(b[:n], d.count)
	if err == nil {
		return n, nil
	}
	d.lines.flush(d.count)
	if n > 0 {
		// The data first, so that its requests are read (and may be
		// answered) before the end is.
		d.err = d.hold(err)
		return n, nil
	}
	return 0, d.hold(err)
}

func (d *drainReader) count(line []byte) {
	eachMessage(line, func(id, method string) {
		if method != "" {
			d.p.add(id)
		}
	})
}

// hold waits for the answers to what was read, then returns err.
func (d *drainReader) hold(err error) error {
	timer := time.NewTimer(d.grace)
	defer timer.Stop()
	if n := d.p.wait(timer.C); n > 0 {
		select {
		case <-d.p.closed:
		default:
			d.log.Warn("mcp: input ended; cancelling the calls still running after the grace period", "unanswered", n, "grace", d.grace)
		}
	}
	d.err = err
	return err
}

// Close ends the wait of a Read at the end of input: the session is
// closing (a signal, or stdout gone), and nothing more can be answered.
func (d *drainReader) Close() error {
	d.p.once.Do(func() { close(d.p.closed) })
	return d.r.Close()
}

// drainWriter counts the answers it writes.
type drainWriter struct {
	w     io.WriteCloser
	p     *pending
	lines lines
}

func (d *drainWriter) Write(b []byte) (int, error) {
	n, err := d.w.Write(b)
	// Counted once written: an answer the client can read.
	d.lines.write(b[:n], func(line []byte) {
		eachMessage(line, func(id, method string) {
			if method == "" {
				d.p.answered(id)
			}
		})
	})
	return n, err
}

func (d *drainWriter) Close() error { return d.w.Close() }
