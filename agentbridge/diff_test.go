package agentbridge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		oldEx    bool
		newEx    bool
		want     string
	}{
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", true, true,
			"--- a/memory/f\n+++ b/memory/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"created", "", "x\ny\n", false, true,
			"--- /dev/null\n+++ b/memory/f\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"deleted", "x\n", "", true, false,
			"--- a/memory/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"},
		{"no final newline", "a\nb", "a\nc", true, true,
			"--- a/memory/f\n+++ b/memory/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"two hunks", numbered(1, 20), strings.Replace(strings.Replace(numbered(1, 20), "line 2\n", "line two\n", 1), "line 19\n", "line nineteen\n", 1), true, true,
			"--- a/memory/f\n+++ b/memory/f\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+line two\n line 3\n line 4\n line 5\n" +
				"@@ -16,5 +16,5 @@\n line 16\n line 17\n line 18\n-line 19\n+line nineteen\n line 20\n"},
		{"insertion in the middle", "a\nb\nc\nd\n", "a\nb\nnew\nc\nd\n", true, true,
			"--- a/memory/f\n+++ b/memory/f\n@@ -1,4 +1,5 @@\n a\n b\n+new\n c\n d\n"},
		{"no change names the file", "a\n", "a\n", true, true,
			"--- a/memory/f\n+++ b/memory/f\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, unifiedDiff("/memory/f", "/memory/f", tt.old, tt.new, tt.oldEx, tt.newEx))
		})
	}
}
