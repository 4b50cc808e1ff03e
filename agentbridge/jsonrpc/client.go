package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/vfsmount/vfsmount/agentbridge"
)

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
	sc := newScanner(c.conn, maxMessage)
	for sc.Scan() {
		if id, ok := responseID(sc.Bytes()); ok {
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- bytes.Clone(sc.Bytes())
			}
		}
	}
	err := frameErr(sc, maxMessage)
	if err == nil {
		err = io.EOF
	}
	c.mu.Lock()
	c.err = fmt.Errorf("json-rpc connection closed: %w", err)
	c.mu.Unlock()
	close(c.done)
}

// Call sends method with params and decodes the result into result (nil
// drops it). A JSON-RPC error object is returned as an [*Error].
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
		if r, ok := result.(*agentbridge.Result); ok && decodeResultFast(line, r) {
			return nil
		}
		// One pass: the result is decoded straight into the caller's
		// value (a non-nil pointer held in an interface).
		var r struct {
			Result any    `json:"result"`
			Error  *Error `json:"error"`
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

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
