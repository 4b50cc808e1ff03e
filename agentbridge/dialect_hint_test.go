package agentbridge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHintNames: hints name the calling dialect's tools and arguments, and
// know when a tool lacks the argument the canonical hint would name.
func TestHintNames(t *testing.T) {
	in := func(name string) context.Context { return withDialect(context.Background(), dialects[name]) }
	for _, tc := range []struct {
		dialect, verb, key string
		tool, arg          string
		ok                 bool
	}{
		{DialectCodex, VerbRead, "offset", "read_file", "offset", true},
		{DialectCodex, VerbLs, "offset", "list_dir", "offset", true},
		{DialectCodex, VerbGrep, "offset", "grep_files", "offset", false},
		{DialectCodex, VerbGrep, "headLimit", "grep_files", "limit", true},
		{DialectCodex, VerbShell, "command", "exec_command", "cmd", true},
		{DialectCodex, VerbEdit, "patchContent", "apply_patch", "input", true},
		{DialectCodex, VerbWrite, "path", "write", "path", false},
		{DialectClaude, VerbRead, "offset", "Read", "offset", true},
		{DialectClaude, VerbGrep, "headLimit", "Grep", "head_limit", true},
		{DialectCursor, VerbRead, "offset", "read", "offset", true},
	} {
		tool, arg, ok := argName(in(tc.dialect), tc.verb, tc.key)
		assert.Equal(t, []any{tc.tool, tc.arg, tc.ok}, []any{tool, arg, ok}, "%s %s %s", tc.dialect, tc.verb, tc.key)
	}
	assert.Equal(t, "list_dir", toolName(in(DialectCodex), VerbLs))
	assert.Equal(t, "exec_command", toolName(in(DialectCodex), VerbShell), "the listed shell, not a legacy one")
	assert.Equal(t, "ls", toolName(context.Background(), VerbLs))
}

// TestCodexTruncation ports codex-rs's truncation tests
// (codex_utils_output_truncation) to this implementation.
func TestCodexTruncation(t *testing.T) {
	for _, tc := range []struct {
		in     string
		tokens int
		want   string
	}{
		{"example output", 1, "Total output lines: 1\n\nex…3 tokens truncated…ut"},
		{"example output", 10, "example output"},
		{"this is an example of a long output that should be truncated", 5, "Total output lines: 1\n\nthis is an…10 tokens truncated… truncated"},
		{"this is an example of a long output that should be truncated\nalso some other line", 10, "Total output lines: 2\n\nthis is an example o…11 tokens truncated…also some other line"},
	} {
		assert.Equal(t, tc.want, formattedTruncate(tc.in, tc.tokens), "%q, %d tokens", tc.in, tc.tokens)
	}
	assert.Equal(t, "😀😀😀😀…8 tokens truncated… line with text\n", truncateTokens("😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n", 8))
	assert.Equal(t, "…2 tokens truncated…", truncateTokens("abcdef", 0))
	assert.Equal(t, "short output", truncateTokens("short output", 100))
	assert.Equal(t, 16, approxTokens(len("😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n")))
	assert.Equal(t, 0, rustLines(""))
	assert.Equal(t, 2, rustLines("a\nb"))
	assert.Equal(t, 2, rustLines("a\nb\n"))
}
