package integration

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// TestSpecialFilesThroughKernel: in a writable mount, mkfifo makes a FIFO
// that carries data from one process to another, bind(2) makes a socket a
// client connects to, and root's mknod makes a device; a read-only mount
// answers EROFS to all three. The FIFO's two ends run as child processes,
// and every binary lives outside the mount.
func TestSpecialFilesThroughKernel(t *testing.T) {
	src, roSrc := t.TempDir(), t.TempDir()
	h, err := hostfs.Open(src, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.(*hostfs.FS).Close() })
	ro, err := hostfs.Open(roSrc, hostfs.Options{ReadOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { ro.(*hostfs.ReadOnlyFS).Close() })
	u, err := union.New(map[string]mounts.FS{"/host": h, "/memory": memfs.New(memfs.Options{}), "/ro": ro})
	require.NoError(t, err)
	dir, _ := mountKernel(t, u)

	for _, m := range []string{"memory", "host"} {
		t.Run(m, func(t *testing.T) {
			at := func(name string) string { return filepath.Join(dir, m, name) }

			out, err := exec.Command("mkfifo", "-m", "0640", at("pipe")).CombinedOutput()
			require.NoError(t, err, "mkfifo: %s", out)
			fi, err := os.Lstat(at("pipe"))
			require.NoError(t, err)
			assert.Equal(t, os.ModeNamedPipe|0o640, fi.Mode(), "mode of the FIFO")
			reader := exec.Command("cat", at("pipe"))
			var got bytes.Buffer
			reader.Stdout = &got
			require.NoError(t, reader.Start())
			writer := exec.Command("sh", "-c", `printf 'through the pipe\n' > "$1"`, "sh", at("pipe"))
			out, err = writer.CombinedOutput()
			if err != nil {
				// The reader waits for a writer that never came.
				_ = reader.Process.Kill()
				_ = reader.Wait()
				t.Fatalf("writer: %v: %s", err, out)
			}
			require.NoError(t, reader.Wait(), "reader")
			assert.Equal(t, "through the pipe\n", got.String(), "what the reader got")

			l, err := net.Listen("unix", at("sock"))
			require.NoError(t, err, "bind a unix socket")
			defer l.Close()
			fi, err = os.Lstat(at("sock"))
			require.NoError(t, err)
			assert.Equal(t, os.ModeSocket, fi.Mode().Type(), "bind created a socket")
			accepted := make(chan error, 1)
			go func() {
				c, err := l.Accept()
				if err == nil {
					_, err = c.Write([]byte("hello"))
					c.Close()
				}
				accepted <- err
			}()
			c, err := net.Dial("unix", at("sock"))
			require.NoError(t, err, "connect to the socket")
			b, err := io.ReadAll(c)
			c.Close()
			require.NoError(t, err)
			assert.Equal(t, "hello", string(b), "what came through the socket")
			require.NoError(t, <-accepted)

			if os.Geteuid() != 0 {
				err := unix.Mknod(at("null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
				assert.ErrorIs(t, err, syscall.EPERM, "mknod of a device needs CAP_MKNOD")
				return
			}
			out, err = exec.Command("mknod", "-m", "0666", at("null"), "c", "1", "3").CombinedOutput()
			require.NoError(t, err, "mknod: %s", out)
			var st unix.Stat_t
			require.NoError(t, unix.Lstat(at("null"), &st))
			assert.Equal(t, uint32(unix.S_IFCHR|0o666), st.Mode, "mode of the device")
			assert.Equal(t, [2]uint32{1, 3}, [2]uint32{unix.Major(st.Rdev), unix.Minor(st.Rdev)}, "device number")
			if m == "host" {
				require.NoError(t, unix.Lstat(filepath.Join(src, "null"), &st))
				assert.Equal(t, uint32(unix.S_IFCHR|0o666), st.Mode, "the host has the device")
			}
			out, err = exec.Command("mknod", at("null"), "p").CombinedOutput()
			assert.Error(t, err, "mknod over an existing name: %s", out)
			assert.Contains(t, string(out), "File exists")
		})
	}

	t.Run("read-only", func(t *testing.T) {
		for _, p := range []string{filepath.Join(dir, "ro", "pipe"), filepath.Join(dir, "pipe")} {
			assert.ErrorIs(t, unix.Mkfifo(p, 0o644), syscall.EROFS, "mkfifo %s", p)
			_, err := net.Listen("unix", p)
			assert.ErrorIs(t, err, syscall.EROFS, "bind %s", p)
			if os.Geteuid() == 0 {
				assert.ErrorIs(t, unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))), syscall.EROFS, "mknod %s", p)
			}
		}
	})
}
