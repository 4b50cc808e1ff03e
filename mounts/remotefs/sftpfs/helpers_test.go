package sftpfs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/sftpfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/sshdial"
)

// dialer connects to the test's sshd as root, as the mount would.
func dialer(sshd *testutil.SSHD, dir string) sftpfs.Dialer {
	return func(ctx context.Context) (*ssh.Client, error) {
		c, err := sshdial.Connect(ctx, sshdial.Config{
			Target:   sshdial.Target{User: "root", Host: "127.0.0.1", Port: sshd.Port, Dir: dir},
			Identity: sshd.UserKey, KnownHosts: sshd.KnownHosts, Timeout: 10 * time.Second,
		})
		if err != nil {
			return nil, err
		}
		return c.SSH(), nil
	}
}

// open mounts dir of the test's sshd over SFTP.
func open(t *testing.T, sshd *testutil.SSHD, dir string, ro bool) mounts.FS {
	t.Helper()
	fsys, err := sftpfs.Open(context.Background(), sftpfs.Options{Dial: dialer(sshd, dir), Dir: dir,
		Source: "ssh://127.0.0.1 (SFTP)", ReadOnly: ro, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(interface{ Close() error }).Close() })
	return fsys
}

func sleep(ms int) { time.Sleep(time.Duration(ms) * time.Millisecond) }
