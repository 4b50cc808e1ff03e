package mountstest

import (
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

const capK = mounts.CapMknod

// specialFileTrips are the round trips of mknod: FIFOs, sockets and devices,
// whose content lives in the kernel, so a mount keeps their attributes only.
var specialFileTrips = []roundTrip{
	{"Mknod/FIFO", capK, capK, func(t *testing.T, e *env) {
		checkSpecial(t, e, "p", fs.ModeNamedPipe, 0)
	}},
	{"Mknod/Socket", capK, capK, func(t *testing.T, e *env) {
		checkSpecial(t, e, "s", fs.ModeSocket, 0)
	}},
	{"Mknod/CharDevice", capK, capK, func(t *testing.T, e *env) {
		dev := mounts.MakeDev(1, 3) // /dev/null
		if !e.x.mayCreateDevice() {
			err := e.x.mknod("c", fs.ModeDevice|fs.ModeCharDevice|0o600, dev)
			wantErr(t, e.x, err, fs.ErrPermission, "c")
			assertMissing(t, e.x, "c")
			return
		}
		checkSpecial(t, e, "c", fs.ModeDevice|fs.ModeCharDevice, dev)
	}},
	{"Mknod/BlockDevice", capK, capK, func(t *testing.T, e *env) {
		// Major and minor past 8 bits each: the encoding's high parts.
		dev := mounts.MakeDev(259, 300)
		if !e.x.mayCreateDevice() {
			wantErr(t, e.x, e.x.mknod("b", fs.ModeDevice|0o600, dev), fs.ErrPermission, "b")
			assertMissing(t, e.x, "b")
			return
		}
		checkSpecial(t, e, "b", fs.ModeDevice, dev)
		major, minor := mounts.DevNumbers(mustStat(t, e.x, "b").Rdev)
		assert.Equal(t, [2]uint32{259, 300}, [2]uint32{major, minor}, "major and minor")
	}},
	{"Mknod/Exists", capK, capK | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "keep", 0o644)
		wantErr(t, e.x, e.x.mknod("f", fs.ModeNamedPipe|0o644, 0), fs.ErrExist, "f")
		assertContent(t, e.x, "f", "keep")
		require.NoError(t, e.x.mknod("p", fs.ModeNamedPipe|0o644, 0))
		wantErr(t, e.x, e.x.mknod("p", fs.ModeSocket|0o644, 0), fs.ErrExist, "p")
		assert.Equal(t, fs.ModeNamedPipe, mustStat(t, e.x, "p").Mode.Type(), "the first one stays")
	}},
	{"Mknod/BadType", capK, capK, func(t *testing.T, e *env) {
		// mknod(2): EPERM for a directory, EINVAL for a symlink.
		wantErr(t, e.x, e.x.mknod("d", fs.ModeDir|0o755, 0), fs.ErrPermission, "d")
		wantErr(t, e.x, e.x.mknod("l", fs.ModeSymlink|0o777, 0), fs.ErrInvalid, "l")
		assertMissing(t, e.x, "d")
		assertMissing(t, e.x, "l")
	}},
	{"Mknod/Regular", capK, capK | capW, func(t *testing.T, e *env) {
		require.NoError(t, e.x.mknod("f", 0o640, 0), "mknod of a regular file")
		a := mustStat(t, e.x, "f")
		assert.True(t, a.Mode.IsRegular(), "mode %v", a.Mode)
		assert.Equal(t, e.created(0o640), perm(a.Mode), "permissions")
		assertContent(t, e.x, "f", "")
	}},
	{"Mknod/MissingParent", capK, capK, func(t *testing.T, e *env) {
		wantErr(t, e.x, e.x.mknod("no/p", fs.ModeNamedPipe|0o644, 0), fs.ErrNotExist, "no/p")
	}},
	{"Mknod/RenameLinkRemove", capK, capK | capRn | capL | capR, func(t *testing.T, e *env) {
		x := e.x
		require.NoError(t, x.mknod("p", fs.ModeNamedPipe|0o600, 0))
		ino := mustStat(t, x, "p").Ino
		require.NoError(t, x.rename("p", "q", 0), "rename a FIFO")
		assertMissing(t, x, "p")
		a := mustStat(t, x, "q")
		assert.Equal(t, fs.ModeNamedPipe, a.Mode.Type(), "type after rename")
		assert.Equal(t, ino, a.Ino, "inode after rename")
		require.NoError(t, x.link("q", "r"), "hard link to a FIFO")
		assert.Equal(t, uint32(2), mustStat(t, x, "r").Nlink, "nlink of a linked FIFO")
		require.NoError(t, x.unlink("q"))
		assert.Equal(t, uint32(1), mustStat(t, x, "r").Nlink, "nlink after unlink")
		require.NoError(t, x.unlink("r"))
		assertMissing(t, x, "r")
	}},
	{"Mknod/Attributes", capK, capK | capC | capT, func(t *testing.T, e *env) {
		x := e.x
		require.NoError(t, x.mknod("s", fs.ModeSocket|0o644, 0))
		require.NoError(t, x.chmod("s", 0o600), "chmod a socket")
		assert.Equal(t, fs.FileMode(0o600), perm(mustStat(t, x, "s").Mode), "mode after chmod")
		at, mt := time.Unix(1_000_000_000, 5), time.Unix(1_000_000_001, 6)
		require.NoError(t, x.chtimes("s", at, mt), "chtimes a socket")
		e.assertTimes(t, "s", at, mt)
	}},
	{"Mknod/NoContent", capK, capK | mounts.CapTruncate, func(t *testing.T, e *env) {
		// truncate(2) of anything but a regular file is EINVAL.
		require.NoError(t, e.x.mknod("p", fs.ModeNamedPipe|0o644, 0))
		wantErr(t, e.x, e.x.truncate("p", 0), fs.ErrInvalid, "p")
		assert.Equal(t, fs.ModeNamedPipe, mustStat(t, e.x, "p").Mode.Type(), "still a FIFO")
	}},
}

// checkSpecial makes name of type typ and checks what stat, a listing and
// open report. Opening a FIFO or socket through the kernel would block or
// fail by the kernel's rules, so only a mount's Open is checked: ErrSpecial.
func checkSpecial(t *testing.T, e *env, name string, typ fs.FileMode, dev uint32) {
	t.Helper()
	x := e.x
	require.NoErrorf(t, x.mknod(name, typ|0o640, dev), "mknod %v", typ)
	a := mustStat(t, x, name)
	assert.Equal(t, typ, a.Mode.Type(), "type")
	assert.Equal(t, e.created(0o640), perm(a.Mode), "permissions")
	assert.Equal(t, int64(0), a.Size, "size")
	assert.Equal(t, dev, a.Rdev, "device number")
	if a.Nlink != 0 {
		assert.Equal(t, uint32(1), a.Nlink, "nlink")
	}
	ents, err := x.readDir(".")
	require.NoError(t, err)
	if assert.Len(t, ents, 1, "listing") {
		assert.Equal(t, name, ents[0].Name)
		assert.Equal(t, typ, ents[0].Type, "listed type")
	}
	if e.library {
		_, err := x.openFile(name, os.O_RDONLY, 0)
		wantErr(t, x, err, mounts.ErrSpecial, name)
	}
}

// assertMissing checks that name does not exist.
func assertMissing(t *testing.T, x target, name string) {
	t.Helper()
	_, err := x.stat(name)
	assert.Truef(t, errors.Is(err, fs.ErrNotExist), "stat %q after a refused call: %v, want it missing", name, err)
}
