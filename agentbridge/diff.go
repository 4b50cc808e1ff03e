package agentbridge

import (
	"fmt"

	"github.com/aymanbagabas/go-udiff"
)

// unifiedDiff renders the change from old to new as a unified diff with
// three lines of context, git style: a/ and b/ prefixes on workspace
// paths, /dev/null for a side that does not exist. Dry runs of edit and
// apply_patch show it.
//
// The diff is the Go team's (golang.org/x/tools internal/diff, exported as
// go-udiff): it writes the hunk ranges, "\ No newline at end of file" and
// the empty-side "-0,0" / "+0,0" ranges as GNU diff -u does.
func unifiedDiff(oldName, newName, old, new string, oldExists, newExists bool) string {
	from, to := "a"+oldName, "b"+newName
	if !oldExists {
		from = "/dev/null"
	}
	if !newExists {
		to = "/dev/null"
	}
	header := "--- " + from + "\n+++ " + to + "\n"
	if old == new {
		// udiff says nothing at all for no change; a dry run still
		// names the file it would leave as it is.
		return header
	}
	// ToUnified, not Unified: Unified exits the process on an
	// inconsistent edit list, which a server must not do.
	out, err := udiff.ToUnified(from, to, old, udiff.Lines(old, new), udiff.DefaultContextLines)
	if err != nil {
		return header + fmt.Sprintf("(no diff: %v)\n", err)
	}
	return out
}
