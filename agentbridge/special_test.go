package agentbridge

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestSpecialFiles: FIFOs, sockets and devices are listed as what they are,
// refused by read, write, edit and an explicit grep with one sentence, and
// skipped by grep and glob walks. Nothing opens them: a FIFO on the host
// mount with no writer would block an open for reading forever.
func TestSpecialFiles(t *testing.T) {
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, mem, "notes.txt", []byte("needle\n"), 0o644))
	require.NoError(t, mounts.Mknod(ctx, mem, "pipe", fs.ModeNamedPipe|0o644, 0))
	require.NoError(t, mounts.Mknod(ctx, mem, "sock", fs.ModeSocket|0o644, 0))
	root := os.Geteuid() == 0
	if root {
		require.NoError(t, mounts.Mknod(ctx, mem, "null", fs.ModeDevice|fs.ModeCharDevice|0o666, mounts.MakeDev(1, 3)))
	}

	hostDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "a.txt"), []byte("needle\n"), 0o644))
	require.NoError(t, unix.Mkfifo(filepath.Join(hostDir, "fifo"), 0o644))
	l, err := net.Listen("unix", filepath.Join(hostDir, "s.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	_, w := realWorkspace(t, map[string]mounts.FS{"/memory": mem, "/host": openHost(t, hostDir)})

	want := "notes.txt\npipe  [named pipe (FIFO)]\nsock  [unix socket]\n"
	if root {
		want = "notes.txt\nnull  [character device 1:3]\n" + want[len("notes.txt\n"):]
	}
	assert.Equal(t, want, ok(t, w, "ls", obj{"depth": 1, "path": "/memory"}))
	assert.Equal(t, "a.txt\nfifo  [named pipe (FIFO)]\ns.sock  [unix socket]\n", ok(t, w, "ls", obj{"depth": 1, "path": "/host"}))

	// Each call must come back, which an open of the host FIFO would
	// not: run it aside so a regression fails instead of hanging.
	done := func(t *testing.T, what string, f func() string) string {
		t.Helper()
		res := make(chan string, 1)
		go func() { res <- f() }()
		select {
		case s := <-res:
			return s
		case <-time.After(time.Minute):
			t.Fatalf("%s did not return: it opened a FIFO", what)
			return ""
		}
	}
	assert.Equal(t, "read /host/fifo: is a named pipe (FIFO), not a regular file; use the shell to work with it",
		done(t, "read", func() string { return fail(t, w, "read", obj{"path": "/host/fifo"}) }))
	assert.Equal(t, "read /memory/sock: is a unix socket, not a regular file; use the shell to work with it",
		fail(t, w, "read", obj{"path": "/memory/sock"}))
	if root {
		assert.Equal(t, "read /memory/null: is a character device, not a regular file; use the shell to work with it",
			fail(t, w, "read", obj{"path": "/memory/null"}))
	}
	assert.Equal(t, "grep /host/fifo: is a named pipe (FIFO), not a regular file; use the shell to work with it",
		done(t, "grep", func() string {
			return fail(t, w, "grep", obj{"outputMode": "files_with_matches", "sort": "path", "sortAscending": true, "pattern": "x", "path": "/host/fifo"})
		}))
	assert.Equal(t, "/host/a.txt\n/memory/notes.txt\n",
		done(t, "grep", func() string {
			return ok(t, w, "grep", obj{"outputMode": "files_with_matches", "sort": "path", "sortAscending": true, "pattern": "needle"})
		}), "walks skip special files")
	assert.Equal(t, "/host/a.txt\n", ok(t, w, "glob", obj{"pattern": "*", "path": "/host"}), "glob skips special files")
	assert.Equal(t, "write /memory/pipe: is a named pipe (FIFO), not a regular file; use the shell to work with it",
		fail(t, w, "write", obj{"path": "/memory/pipe", "fileText": "x"}))
	assert.Equal(t, "edit /host/fifo: is a FIFO, socket or device, not a regular file; use the shell to work with it",
		done(t, "edit", func() string {
			return fail(t, w, "edit", obj{"path": "/host/fifo", "oldText": "a", "newText": "b"})
		}))
	a, err := mem.Stat(ctx, "pipe")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeNamedPipe, a.Mode.Type(), "the refused write left the FIFO alone")
	ok(t, w, "delete", obj{"path": "/memory/pipe"})
	_, err = mem.Stat(ctx, "pipe")
	assert.ErrorIs(t, err, fs.ErrNotExist, "delete removes a FIFO")
}
