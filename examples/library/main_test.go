package main

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// The example, run: go test checks its output line for line.
func Example() {
	dir, err := os.MkdirTemp("", "vfsmount-library-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := run(context.Background(), dir, os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// # checkpoint c1 taken
	// > ls {"ignore":[".git"],"path":"/"}
	// notes/  [memory, read-only]
	// notes/todo.md
	// repo/  [copy-on-write over git@32792b35a808, writable]
	// repo/README.md
	// repo/main.go
	// > read {"path":"/notes/todo.md"}
	//      1	- say hello to the world
	// > edit {"newText":"\"hello, world\"","oldText":"\"hello\"","path":"/repo/main.go"}
	// edited /repo/main.go (1 change)
	//      1	package main
	//      2
	//      3	func main() { println("hello, world") }
	// > write {"fileText":"TOKEN=x\n","path":"/repo/.env"}
	// created /repo/.env (8 bytes)
	// > read {"path":"/repo/.env"}  [tool error]
	// read /repo/.env: denied by policy
	// > write {"fileText":"done","path":"/notes/todo.md"}  [tool error]
	// write /notes/todo.md: read-only mount /notes (memory); writable: /repo
	// # export
	//  .env    | 1 +
	//  main.go | 2 +-
	//  2 files changed, 2 insertions(+), 1 deletion(-)
	// # checkpoint_diff, as the agent sees it
	// diff --git a/main.go b/main.go
	// index ca427283576d2b249fcef02f147644b10674305a..242a797c1a5c12f36cd17dcbad90325b065626f9 100644
	// --- a/main.go
	// +++ b/main.go
	// @@ -1,3 +1,3 @@
	//  package main
	//
	// -func main() { println("hello") }
	// +func main() { println("hello, world") }
	// withheld: /repo/.env changed; its content is not shown: denied by policy (deny_read)
	// # restored /notes, /repo: /repo/.env, /repo/main.go changed back
	// # export after the restore: 0 bytes
}

// TestTools: the tool face offers what the tree can do (the file verbs and
// the checkpoint tools; no shell: no kernel face was mounted) in each
// dialect's names.
func TestTools(t *testing.T) {
	ws, err := open(context.Background(), t.TempDir())
	require.NoError(t, err)
	defer ws.Close()
	tools, err := ws.ToolFace(agentbridge.Options{})
	require.NoError(t, err)
	defer tools.Close()
	assert.Equal(t, []string{"read", "ls", "glob", "grep", "write", "edit", "delete"}, tools.Verbs())
	defs, err := tools.Tools(agentbridge.DialectClaude)
	require.NoError(t, err)
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	assert.Subset(t, names, []string{"Read", "Write", "Edit", "Grep", "Glob", "checkpoint_restore"})
	assert.NotContains(t, names, "Bash")
	assert.Contains(t, tools.Brief(), "/notes")
}
