package fusefs

import (
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

func TestUnixMode(t *testing.T) {
	tests := []struct {
		name string
		mode fs.FileMode
		want uint32
	}{
		{"file", 0o644, syscall.S_IFREG | 0o644},
		{"dir", fs.ModeDir | 0o755, syscall.S_IFDIR | 0o755},
		{"symlink", fs.ModeSymlink | 0o777, syscall.S_IFLNK | 0o777},
		{"fifo", fs.ModeNamedPipe | 0o600, syscall.S_IFIFO | 0o600},
		{"socket", fs.ModeSocket | 0o600, syscall.S_IFSOCK | 0o600},
		{"char device", fs.ModeDevice | fs.ModeCharDevice | 0o620, syscall.S_IFCHR | 0o620},
		{"block device", fs.ModeDevice | 0o660, syscall.S_IFBLK | 0o660},
		{"setuid", fs.ModeSetuid | 0o755, syscall.S_IFREG | syscall.S_ISUID | 0o755},
		{"setgid dir", fs.ModeDir | fs.ModeSetgid | 0o775, syscall.S_IFDIR | syscall.S_ISGID | 0o775},
		{"sticky dir", fs.ModeDir | fs.ModeSticky | 0o777, syscall.S_IFDIR | syscall.S_ISVTX | 0o777},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mounts.UnixMode(tt.mode)
			assert.Equal(t, tt.want, got, "got %o, want %o", got, tt.want)
			// The permission part round-trips through permMode.
			assert.Equal(t, tt.mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), mounts.PermMode(got))
		})
	}
}

func TestFillAttr(t *testing.T) {
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	atime := mtime.Add(time.Hour + 1)
	ctime := mtime.Add(2*time.Hour + 2)
	tests := []struct {
		name  string
		in    mounts.Attr
		check func(t *testing.T, out fuse.Attr)
	}{
		{"file defaults", mounts.Attr{Mode: 0o640, Size: 5000, Ino: 42, Uid: 7, Gid: 8, Mtime: mtime},
			func(t *testing.T, out fuse.Attr) {
				assert.Equal(t, uint32(syscall.S_IFREG|0o640), out.Mode)
				assert.Equal(t, uint64(5000), out.Size)
				assert.Equal(t, uint64(42), out.Ino)
				assert.Equal(t, uint32(1), out.Nlink, "nlink of a file defaults to 1")
				assert.Equal(t, uint32(7), out.Uid)
				assert.Equal(t, uint32(8), out.Gid)
				assert.Equal(t, uint32(4096), out.Blksize)
				assert.Equal(t, uint64(16), out.Blocks, "5000 bytes take two 4 KiB blocks = 16 sectors")
				// Zero atime and ctime are mtime, to the nanosecond.
				for _, sec := range []uint64{out.Atime, out.Mtime, out.Ctime} {
					assert.Equal(t, uint64(mtime.Unix()), sec)
				}
				for _, ns := range []uint32{out.Atimensec, out.Mtimensec, out.Ctimensec} {
					assert.Equal(t, uint32(123456789), ns)
				}
			}},
		{"dir defaults", mounts.Attr{Mode: fs.ModeDir | 0o755},
			func(t *testing.T, out fuse.Attr) {
				assert.Equal(t, uint32(syscall.S_IFDIR|0o755), out.Mode)
				assert.Equal(t, uint32(2), out.Nlink, "nlink of a directory defaults to 2")
				assert.Equal(t, uint64(0), out.Blocks)
				assert.Equal(t, uint64(0), out.Mtime, "unknown times are the epoch")
			}},
		{"explicit values win", mounts.Attr{Mode: 0o600, Size: 10, Nlink: 3, Blocks: 1, Atime: atime, Mtime: mtime, Ctime: ctime},
			func(t *testing.T, out fuse.Attr) {
				assert.Equal(t, uint32(3), out.Nlink)
				assert.Equal(t, uint64(1), out.Blocks)
				assert.Equal(t, uint64(atime.Unix()), out.Atime)
				assert.Equal(t, uint32(atime.Nanosecond()), out.Atimensec)
				assert.Equal(t, uint64(ctime.Unix()), out.Ctime)
				assert.Equal(t, uint32(ctime.Nanosecond()), out.Ctimensec)
			}},
		{"pre-epoch time clamps", mounts.Attr{Mode: 0o600, Mtime: time.Date(1960, 1, 1, 0, 0, 0, 5, time.UTC)},
			func(t *testing.T, out fuse.Attr) {
				assert.Equal(t, uint64(0), out.Mtime)
				assert.Equal(t, uint32(0), out.Mtimensec)
			}},
		{"symlink", mounts.Attr{Mode: fs.ModeSymlink | 0o777, Size: 6},
			func(t *testing.T, out fuse.Attr) {
				assert.Equal(t, uint32(syscall.S_IFLNK|0o777), out.Mode)
				assert.Equal(t, uint64(6), out.Size)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out fuse.Attr
			fillAttr(&out, tt.in)
			tt.check(t, out)
		})
	}
}

func TestRenameFlags(t *testing.T) {
	tests := []struct {
		name   string
		in     uint32
		want   mounts.RenameFlags
		wantOK bool
	}{
		{"none", 0, 0, true},
		{"noreplace", unix.RENAME_NOREPLACE, mounts.RenameNoReplace, true},
		{"exchange", unix.RENAME_EXCHANGE, mounts.RenameExchange, true},
		{"whiteout", unix.RENAME_WHITEOUT, 0, false},
		{"unknown bit", 1 << 20, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := renameFlags(tt.in)
			assert.Equal(t, tt.wantOK, ok)
			if ok {
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

func TestOpenFlags(t *testing.T) {
	tests := []struct {
		name string
		in   uint32
		want int
	}{
		{"read only", syscall.O_RDONLY | syscall.O_LARGEFILE | syscall.O_CLOEXEC, os.O_RDONLY},
		{"append", syscall.O_WRONLY | syscall.O_APPEND | syscall.O_NOCTTY, os.O_WRONLY | os.O_APPEND},
		{"create excl", syscall.O_RDWR | syscall.O_CREAT | syscall.O_EXCL | syscall.O_TRUNC,
			os.O_RDWR | os.O_CREATE | os.O_EXCL | os.O_TRUNC},
		{"exec", syscall.O_RDONLY | fuse.FMODE_EXEC, os.O_RDONLY},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, openFlags(tt.in))
		})
	}
}

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name, line, mp, fstype string
		ok                     bool
	}{
		{"fuse with optional fields",
			"40 25 0:45 / /tmp/mnt rw,nosuid,nodev,relatime shared:20 master:1 - fuse.vfsmount vfsmount rw,user_id=0",
			"/tmp/mnt", "fuse.vfsmount", true},
		{"no optional fields", "22 1 8:1 / / rw - ext4 /dev/sda1 rw", "/", "ext4", true},
		{"escaped space", `41 25 0:46 / /tmp/a\040b rw - fuse.vfsmount vfsmount rw`, "/tmp/a b", "fuse.vfsmount", true},
		{"escaped backslash", `41 25 0:46 / /tmp/a\134b rw - tmpfs tmpfs rw`, `/tmp/a\b`, "tmpfs", true},
		{"truncated", "41 25 0:46 / /tmp/x rw", "", "", false},
		{"no separator", "41 25 0:46 / /tmp/x rw shared:1 tmpfs tmpfs", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := parseMountinfo(tt.line)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.mp, m.point)
			assert.Equal(t, tt.fstype, m.fstype)
			if ok {
				assert.Equal(t, strings.Fields(tt.line)[2], m.dev)
			}
		})
	}
}

func TestStateString(t *testing.T) {
	assert.Equal(t, "none", StateNone.String())
	assert.Equal(t, "live", StateLive.String())
	assert.Equal(t, "stale", StateStale.String())
	assert.Equal(t, "State(9)", State(9).String())
}
