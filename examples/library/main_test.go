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
	if err := run(context.Background(), os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// > ls {"path":"/"}
	// notes/  [memory, read-only]
	// notes/todo.md
	// scratch/  [memory, writable]
	// > read {"path":"/notes/todo.md"}
	//      1	# TODO
	//      2	- ship the sidecar
	//      3	- write the docs
	// > write {"fileText":"1. mount\n2. serve\n","path":"/scratch/plan.md"}
	// created /scratch/plan.md (18 bytes)
	// > edit {"newText":"2. serve over MCP","oldText":"2. serve","path":"/scratch/plan.md"}
	// edited /scratch/plan.md (1 change)
	//      1	1. mount
	//      2	2. serve over MCP
	// > grep {"outputMode":"content","path":"/","pattern":"MCP|sidecar"}
	// /scratch/plan.md:2:2. serve over MCP
	// /notes/todo.md:2:- ship the sidecar
	// > write {"fileText":"overwritten","path":"/notes/todo.md"}  [tool error]
	// write /notes/todo.md: read-only mount /notes (memory); writable: /scratch
	// > write {"fileText":"TOKEN=x","path":"/scratch/.env"}
	// created /scratch/.env (7 bytes)
	// > read {"path":"/scratch/.env"}  [tool error]
	// read /scratch/.env: denied by policy
}

// TestTools: the tool face offers what the tree can do (the file verbs,
// no shell: none was configured) in each dialect's names.
func TestTools(t *testing.T) {
	ws, err := newWorkspace(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"read", "ls", "glob", "grep", "write", "edit", "delete"}, ws.Verbs())
	defs, err := ws.Tools(agentbridge.DialectClaude)
	require.NoError(t, err)
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	assert.Subset(t, names, []string{"Read", "Write", "Edit", "Grep", "Glob"})
	assert.NotContains(t, names, "Bash")
	assert.Contains(t, ws.Brief(), "/notes")
}
