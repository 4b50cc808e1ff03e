package agentbridge

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// Default limits (see [Limits]).
const (
	DefaultMaxFileBytes    = 16 << 20
	DefaultMaxReadBytes    = 1 << 20
	DefaultMaxShellTimeout = shellMaxTimeout * time.Millisecond
	DefaultMaxOutputBytes  = 2 << 20
)

// Limits bound what one tool call may do. A zero field takes its default.
type Limits struct {
	// MaxFileBytes is the largest file write, edit and apply_patch may
	// leave behind (default 16 MiB).
	MaxFileBytes int64
	// MaxReadBytes is the most file text one read returns, line numbers
	// included (default 1 MiB); a footer says where to continue.
	MaxReadBytes int
	// MaxShellTimeout is the longest timeout a shell call may ask for
	// (default 10 minutes, the TOOLS.md maximum, which it may not raise).
	MaxShellTimeout time.Duration
	// MaxOutputBytes is the longest result text of any call (default
	// 2 MiB); a longer one is cut with a note.
	MaxOutputBytes int
}

// withDefaults fills zero fields and clamps the shell timeout to the
// TOOLS.md maximum.
func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxReadBytes <= 0 {
		l.MaxReadBytes = DefaultMaxReadBytes
	}
	if l.MaxShellTimeout <= 0 || l.MaxShellTimeout > DefaultMaxShellTimeout {
		l.MaxShellTimeout = DefaultMaxShellTimeout
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return l
}

// capOutput cuts text to max bytes at a rune boundary, with a note.
func capOutput(text string, max int) string {
	if len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n… [output truncated: %d of %d bytes shown]", text[:cut], cut, len(text))
}

// checkSize refuses content over the file size limit.
func (w *Workspace) checkSize(op, shown string, n int) error {
	if int64(n) > w.limits.MaxFileBytes {
		return fmt.Errorf("%s %s: %d bytes is over the limit of %d bytes per file; nothing was changed", op, shown, n, w.limits.MaxFileBytes)
	}
	return nil
}
