package mounts_test

import (
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vfsmount/vfsmount/mounts"
)

func TestModeConversions(t *testing.T) {
	tests := []struct {
		name string
		mode fs.FileMode
		unix uint32
	}{
		{"file", 0o644, syscall.S_IFREG | 0o644},
		{"executable setuid", 0o755 | fs.ModeSetuid, syscall.S_IFREG | 0o4755},
		{"dir sticky setgid", fs.ModeDir | fs.ModeSticky | fs.ModeSetgid | 0o777, syscall.S_IFDIR | 0o3777},
		{"symlink", fs.ModeSymlink | 0o777, syscall.S_IFLNK | 0o777},
		{"fifo", fs.ModeNamedPipe | 0o600, syscall.S_IFIFO | 0o600},
		{"socket", fs.ModeSocket | 0o600, syscall.S_IFSOCK | 0o600},
		{"char device", fs.ModeDevice | fs.ModeCharDevice | 0o620, syscall.S_IFCHR | 0o620},
		{"block device", fs.ModeDevice | 0o660, syscall.S_IFBLK | 0o660},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.unix, mounts.UnixMode(tt.mode), "UnixMode")
			assert.Equal(t, tt.mode, mounts.FileModeOf(tt.unix), "FileModeOf")
			assert.Equal(t, tt.unix&0o7777, mounts.UnixPerm(tt.mode), "UnixPerm drops the type")
			assert.Equal(t, tt.mode&^fs.ModeType, mounts.PermMode(tt.unix), "PermMode drops the type")
		})
	}
}
