// Package testutil holds small helpers shared by tests across packages.
package testutil

import (
	"bytes"
	"sync"
)

// Buffer collects a child process's output (or a logger's) while the test
// reads it: an io.Writer safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
