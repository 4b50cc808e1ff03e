package sftpfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// What an SFTP mount offers against OpenSSH's server: no chtimes (SFTP
// v3 has whole seconds), no hard links (it reports neither inode numbers
// nor link counts), no xattrs or mknod.
const caps = mounts.CapWrite | mounts.CapTruncate | mounts.CapMkdir | mounts.CapRemove |
	mounts.CapRename | mounts.CapSymlink | mounts.CapChmod | mounts.CapChown | mounts.CapStatFS | mounts.CapSearch

// The SFTP mount passes the suite every mount passes, over a real
// OpenSSH server's SFTP subsystem; what it lacks is declared absent, and
// the suite checks that those verbs fail as the contract says.
func TestConformance(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return open(t, sshd, t.TempDir(), false)
	}, mountstest.Caps(caps))
}

func TestConformanceReadOnly(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	files := map[string]string{
		"a.txt":            "alpha",
		"dir/b.txt":        "beta",
		"dir/sub/c.txt":    "gamma",
		"with space/ü.txt": "unicode",
		"empty":            "",
	}
	src := t.TempDir()
	testutil.WriteFiles(t, src, files)
	if err := os.Mkdir(filepath.Join(src, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dir/b.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return open(t, sshd, src, true)
	}, mountstest.Caps(mounts.CapStatFS|mounts.CapSearch), mountstest.Expect(files),
		mountstest.ExpectSymlinks(map[string]string{"link": "dir/b.txt"}), mountstest.ExpectDirs("emptydir"))
}
