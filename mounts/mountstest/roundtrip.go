package mountstest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

// roundTrip is one case of the capability table both flavours share. Each
// runs in a fresh mount (or a fresh subdirectory).
type roundTrip struct {
	name string
	// main is the capability under test; needs is everything the case
	// uses, main included (a directory to rename needs mkdir too).
	main, needs mounts.Capability
	run         func(t *testing.T, e *env)
}

const (
	capW  = mounts.CapWrite
	capM  = mounts.CapMkdir
	capR  = mounts.CapRemove
	capRn = mounts.CapRename
	capS  = mounts.CapSymlink
	capL  = mounts.CapLink
	capC  = mounts.CapChmod
	capCh = mounts.CapChown
	capT  = mounts.CapChtimes
	capX  = mounts.CapXattr
	capSX = mounts.CapSetXattr
	capSF = mounts.CapStatFS
)

// created is the permission a new file made with p really gets.
func (e *env) created(p fs.FileMode) fs.FileMode { return p &^ e.x.umask() }

var roundTrips = []roundTrip{
	// --- write ---
	{"Write/CreateReadBack", capW, capW, func(t *testing.T, e *env) {
		x := e.x
		h, err := x.openFile("f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
		require.NoError(t, err, "create")
		n, err := h.WriteAt([]byte("hello"), 0)
		require.NoError(t, err, "write")
		assert.Equal(t, 5, n, "write count")
		buf := make([]byte, 5)
		_, err = h.ReadAt(buf, 0)
		assert.NoError(t, err, "read back through the same handle")
		assert.Equal(t, "hello", string(buf), "read back through the same handle")
		if a, err := h.Stat(); assert.NoError(t, err, "fstat") {
			assert.Equal(t, int64(5), a.Size, "fstat size")
		}
		require.NoError(t, h.Close(), "close")
		assertContent(t, x, "f", "hello")
		a := mustStat(t, x, "f")
		assert.True(t, a.Mode.IsRegular(), "mode %v", a.Mode)
		assert.Equal(t, e.created(0o640), perm(a.Mode), "permissions of the new file")
		assert.Equal(t, int64(5), a.Size, "size")
		if a.Nlink != 0 {
			assert.Equal(t, uint32(1), a.Nlink, "nlink of a new file")
		}
		ents, err := x.readDir(".")
		require.NoError(t, err)
		if assert.Len(t, ents, 1, "listing") {
			assert.Equal(t, "f", ents[0].Name)
			assert.Equal(t, fs.FileMode(0), ents[0].Type, "listed type of a regular file")
		}
	}},
	{"Write/Perm", capW, capW, func(t *testing.T, e *env) {
		for name, p := range map[string]fs.FileMode{"a": 0o600, "b": 0o755, "c": 0o444, "d": 0} {
			writeFile(t, e.x, name, "", p)
			assert.Equalf(t, e.created(p), perm(mustStat(t, e.x, name).Mode), "permissions of %q", name)
		}
	}},
	{"Write/Excl", capW, capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "old", 0o644)
		_, err := e.x.openFile("f", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		wantErr(t, e.x, err, fs.ErrExist, "f")
		assertContent(t, e.x, "f", "old")
	}},
	{"Write/Trunc", capW, capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "hello", 0o644)
		h, err := e.x.openFile("f", os.O_WRONLY|os.O_TRUNC, 0)
		require.NoError(t, err)
		assert.Equal(t, int64(0), mustStat(t, e.x, "f").Size, "size after O_TRUNC")
		require.NoError(t, h.Close())
		assertContent(t, e.x, "f", "")
	}},
	{"Write/Overwrite", capW, capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "hello world", 0o644)
		h, err := e.x.openFile("f", os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte("J"), 0)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		assertContent(t, e.x, "f", "Jello world")
	}},
	{"Write/Append", capW, capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "hello", 0o644)
		h, err := e.x.openFile("f", os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		// The offsets are ignored: O_APPEND writes at the end.
		_, err = h.WriteAt([]byte("world"), 0)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte("!"), 2)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		assertContent(t, e.x, "f", "helloworld!")
	}},
	{"Write/Hole", capW, capW, func(t *testing.T, e *env) {
		h, err := e.x.openFile("f", os.O_WRONLY|os.O_CREATE, 0o644)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte("x"), 5)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		assertContent(t, e.x, "f", "\x00\x00\x00\x00\x00x")
	}},
	{"Write/Large", capW, capW, func(t *testing.T, e *env) {
		data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
		data = append(data, "tail"...)
		writeFile(t, e.x, "f", string(data), 0o644)
		got, err := e.x.readFile("f")
		require.NoError(t, err)
		assert.True(t, bytes.Equal(data, got), "a 256 KiB file did not read back (len %d, want %d)", len(got), len(data))
	}},
	{"Write/Errors", capW, capW, func(t *testing.T, e *env) {
		x := e.x
		_, err := x.openFile("missing/f", os.O_WRONLY|os.O_CREATE, 0o644)
		wantErr(t, x, err, fs.ErrNotExist, "missing/f")
		_, err = x.openFile("missing", os.O_WRONLY, 0)
		wantErr(t, x, err, fs.ErrNotExist, "missing")
		_, err = x.openFile(".", os.O_WRONLY, 0)
		wantErr(t, x, err, mounts.ErrIsDir, ".")
		writeFile(t, x, "f", "data", 0o644)
		_, err = x.openFile("f/x", os.O_WRONLY|os.O_CREATE, 0o644)
		wantErr(t, x, err, mounts.ErrNotDir, "f/x")
	}},
	{"Write/NameMax", capW, capW, func(t *testing.T, e *env) {
		long := longName(mounts.MaxNameLen)
		writeFile(t, e.x, long, "max", 0o644)
		assertContent(t, e.x, long, "max")
		assert.Equal(t, []string{long}, readDirNames(t, e.x, "."), "listing")
		_, err := e.x.openFile(long+"x", os.O_WRONLY|os.O_CREATE, 0o644)
		wantErr(t, e.x, err, mounts.ErrNameTooLong, long+"x")
	}},
	{"Write/Names", capW, capW, func(t *testing.T, e *env) {
		names := []string{"naïve", "日本語.txt", "with space", " lead", "trail ", "-dash", "#hash", "a:b", `back\slash`, "emoji-🙂", "...", ".hidden"}
		for _, n := range names {
			writeFile(t, e.x, n, n, 0o644)
		}
		for _, n := range names {
			assertContent(t, e.x, n, n)
		}
		assert.Equal(t, sortedCopy(names), readDirNames(t, e.x, "."), "listing")
	}},
	{"Write/FstatAfterUnlink", capW, capW | capR, func(t *testing.T, e *env) {
		h, err := e.x.openFile("f", os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		defer h.Close()
		_, err = h.WriteAt([]byte("abc"), 0)
		require.NoError(t, err)
		require.NoError(t, e.x.unlink("f"))
		assertNotExist(t, e.x, "f")
		_, err = h.WriteAt([]byte("d"), 3)
		assert.NoError(t, err, "write to an unlinked open file")
		if a, err := h.Stat(); assert.NoError(t, err, "fstat of an unlinked file") {
			assert.Equal(t, int64(4), a.Size, "fstat size")
		}
		buf := make([]byte, 4)
		_, err = h.ReadAt(buf, 0)
		assert.NoError(t, err)
		assert.Equal(t, "abcd", string(buf), "read of an unlinked open file")
	}},

	// --- truncate (TruncateFS, or OpenFileFS through the helper) ---
	{"Truncate/GrowShrink", capW, capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "hello", 0o644)
		require.NoError(t, e.x.truncate("f", 8))
		assertContent(t, e.x, "f", "hello\x00\x00\x00")
		require.NoError(t, e.x.truncate("f", 2))
		assertContent(t, e.x, "f", "he")
		require.NoError(t, e.x.truncate("f", 0))
		assertContent(t, e.x, "f", "")
		assert.Equal(t, int64(0), mustStat(t, e.x, "f").Size)
	}},
	{"Truncate/Handle", capW, capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "hello", 0o644)
		h, err := e.x.openFile("f", os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, h.Truncate(3))
		if a, err := h.Stat(); assert.NoError(t, err) {
			assert.Equal(t, int64(3), a.Size, "fstat after truncate")
		}
		require.NoError(t, h.Truncate(4))
		require.NoError(t, h.Close())
		assertContent(t, e.x, "f", "hel\x00")
	}},
	{"Truncate/Errors", capW, capW, func(t *testing.T, e *env) {
		wantErr(t, e.x, e.x.truncate("missing", 0), fs.ErrNotExist, "missing")
		wantErr(t, e.x, e.x.truncate(".", 0), mounts.ErrIsDir, ".")
		writeFile(t, e.x, "f", "hello", 0o644)
		wantErr(t, e.x, e.x.truncate("f", -1), fs.ErrInvalid, "f")
		assertContent(t, e.x, "f", "hello")
	}},

	// --- mkdir ---
	{"Mkdir/RoundTrip", capM, capM, func(t *testing.T, e *env) {
		require.NoError(t, e.x.mkdir("d", 0o755))
		a := mustStat(t, e.x, "d")
		assert.True(t, a.IsDir(), "mode %v", a.Mode)
		assert.Equal(t, e.created(0o755), perm(a.Mode), "permissions of the new directory")
		assert.Empty(t, readDirNames(t, e.x, "d"), "a new directory is empty")
		require.NoError(t, e.x.mkdir("d/e", 0o700))
		assert.Equal(t, e.created(0o700), perm(mustStat(t, e.x, "d/e").Mode), "permissions of the nested directory")
		ents, err := e.x.readDir(".")
		require.NoError(t, err)
		if assert.Len(t, ents, 1) {
			assert.Equal(t, mounts.DirEntry{Name: "d", Type: fs.ModeDir, Ino: ents[0].Ino}, ents[0])
		}
	}},
	{"Mkdir/Exist", capM, capM, func(t *testing.T, e *env) {
		require.NoError(t, e.x.mkdir("d", 0o755))
		wantErr(t, e.x, e.x.mkdir("d", 0o755), fs.ErrExist, "d")
		wantErr(t, e.x, e.x.mkdir("missing/d", 0o755), fs.ErrNotExist, "missing/d")
	}},
	{"Mkdir/OverFile", capM, capM | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "data", 0o644)
		wantErr(t, e.x, e.x.mkdir("f", 0o755), fs.ErrExist, "f")
		wantErr(t, e.x, e.x.mkdir("f/d", 0o755), mounts.ErrNotDir, "f/d")
		assertContent(t, e.x, "f", "data")
	}},

	// --- remove ---
	{"Remove/Unlink", capR, capR | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "data", 0o644)
		writeFile(t, e.x, "g", "data", 0o644)
		require.NoError(t, e.x.unlink("f"))
		assertNotExist(t, e.x, "f")
		assert.Equal(t, []string{"g"}, readDirNames(t, e.x, "."), "listing after unlink")
		wantErr(t, e.x, e.x.unlink("f"), fs.ErrNotExist, "f")
		wantErr(t, e.x, e.x.rmdir("g"), mounts.ErrNotDir, "g")
		assertContent(t, e.x, "g", "data")
	}},
	{"Remove/Rmdir", capR, capR | capM | capW, func(t *testing.T, e *env) {
		require.NoError(t, e.x.mkdir("d", 0o755))
		writeFile(t, e.x, "d/f", "data", 0o644)
		wantErr(t, e.x, e.x.unlink("d"), mounts.ErrIsDir, "d")
		wantErr(t, e.x, e.x.rmdir("d"), mounts.ErrNotEmpty, "d")
		assertContent(t, e.x, "d/f", "data")
		require.NoError(t, e.x.unlink("d/f"))
		require.NoError(t, e.x.rmdir("d"))
		assertNotExist(t, e.x, "d")
		wantErr(t, e.x, e.x.rmdir("d"), fs.ErrNotExist, "d")
		assert.Empty(t, readDirNames(t, e.x, "."))
	}},
	{"Remove/Symlink", capR, capR | capS | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "data", 0o644)
		require.NoError(t, e.x.symlink("f", "l"))
		require.NoError(t, e.x.unlink("l"))
		assertNotExist(t, e.x, "l")
		assertContent(t, e.x, "f", "data")
	}},

	// --- rename ---
	{"Rename/File", capRn, capRn | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "a", "A", 0o644)
		ino := mustStat(t, e.x, "a").Ino
		require.NoError(t, e.x.rename("a", "b", 0))
		assertNotExist(t, e.x, "a")
		assertContent(t, e.x, "b", "A")
		assert.Equal(t, ino, mustStat(t, e.x, "b").Ino, "rename keeps the inode")
		require.NoError(t, e.x.rename("b", "b", 0), "rename onto itself is a no-op")
		assertContent(t, e.x, "b", "A")
		wantErr(t, e.x, e.x.rename("a", "c", 0), fs.ErrNotExist, "a", "c")
	}},
	{"Rename/OverFile", capRn, capRn | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "a", "A", 0o644)
		writeFile(t, e.x, "b", "B", 0o644)
		require.NoError(t, e.x.rename("a", "b", 0))
		assertNotExist(t, e.x, "a")
		assertContent(t, e.x, "b", "A")
		assert.Equal(t, []string{"b"}, readDirNames(t, e.x, "."))
	}},
	{"Rename/OverFileAtomic", capRn, capRn | capW, func(t *testing.T, e *env) {
		// A reader never sees the target missing while it is replaced.
		writeFile(t, e.x, "b", "0", 0o644)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var missing int
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := e.x.stat("b"); errors.Is(err, fs.ErrNotExist) {
					missing++
				}
			}
		})
		for i := range 100 {
			writeFile(t, e.x, "a", string(rune('a'+i%26)), 0o644)
			if !assert.NoError(t, e.x.rename("a", "b", 0)) {
				break
			}
		}
		close(stop)
		wg.Wait()
		assert.Zero(t, missing, "the target was missing during a rename over it")
		assertContent(t, e.x, "b", string(rune('a'+99%26)))
	}},
	{"Rename/Dirs", capRn, capRn | capM | capW, func(t *testing.T, e *env) {
		x := e.x
		require.NoError(t, x.mkdir("a", 0o755))
		writeFile(t, x, "a/f", "x", 0o644)
		require.NoError(t, x.mkdir("b", 0o755))
		require.NoError(t, x.rename("a", "b", 0), "a directory replaces an empty one")
		assertNotExist(t, x, "a")
		assertContent(t, x, "b/f", "x")

		require.NoError(t, x.mkdir("c", 0o755))
		wantErr(t, x, x.rename("c", "b", 0), mounts.ErrNotEmpty, "c", "b")
		assertContent(t, x, "b/f", "x")
		writeFile(t, x, "g", "G", 0o644)
		wantErr(t, x, x.rename("g", "c", 0), mounts.ErrIsDir, "g", "c")
		wantErr(t, x, x.rename("c", "g", 0), mounts.ErrNotDir, "c", "g")
		wantErr(t, x, x.rename("b", "b/sub", 0), fs.ErrInvalid, "b", "b/sub")
		assertContent(t, x, "g", "G")
		assert.True(t, mustStat(t, x, "c").IsDir())
		assert.Equal(t, []string{"b", "c", "g"}, readDirNames(t, x, "."))
	}},
	{"Rename/AcrossDirs", capRn, capRn | capM | capW, func(t *testing.T, e *env) {
		require.NoError(t, e.x.mkdir("d1", 0o755))
		require.NoError(t, e.x.mkdir("d2", 0o755))
		writeFile(t, e.x, "d1/f", "F", 0o644)
		require.NoError(t, e.x.rename("d1/f", "d2/g", 0))
		assert.Empty(t, readDirNames(t, e.x, "d1"))
		assertContent(t, e.x, "d2/g", "F")
		wantErr(t, e.x, e.x.rename("d2/g", "missing/g", 0), fs.ErrNotExist, "d2/g", "missing/g")
	}},
	{"Rename/NoReplace", capRn, capRn | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "a", "A", 0o644)
		writeFile(t, e.x, "b", "B", 0o644)
		wantErr(t, e.x, e.x.rename("a", "b", mounts.RenameNoReplace), fs.ErrExist, "a", "b")
		assertContent(t, e.x, "a", "A")
		assertContent(t, e.x, "b", "B")
		require.NoError(t, e.x.rename("a", "c", mounts.RenameNoReplace))
		assertNotExist(t, e.x, "a")
		assertContent(t, e.x, "c", "A")
	}},
	{"Rename/Exchange", capRn, capRn | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "a", "A", 0o644)
		writeFile(t, e.x, "b", "B", 0o644)
		err := e.x.rename("a", "b", mounts.RenameExchange)
		if err != nil {
			// A mount may lack the flag, and must then change nothing.
			// The kernel reports a flag its file system lacks as EINVAL.
			want := mounts.ErrNotSupported
			if !e.library && errors.Is(err, syscall.EINVAL) {
				want = syscall.EINVAL
			}
			wantErr(t, e.x, err, want, "a", "b")
			assertContent(t, e.x, "a", "A")
			assertContent(t, e.x, "b", "B")
			return
		}
		assertContent(t, e.x, "a", "B")
		assertContent(t, e.x, "b", "A")
		wantErr(t, e.x, e.x.rename("a", "missing", mounts.RenameExchange), fs.ErrNotExist, "a", "missing")
	}},
	{"Rename/Symlink", capRn, capRn | capS, func(t *testing.T, e *env) {
		require.NoError(t, e.x.symlink("target", "l"))
		require.NoError(t, e.x.rename("l", "m", 0))
		assertNotExist(t, e.x, "l")
		got, err := e.x.readLink("m")
		require.NoError(t, err)
		assert.Equal(t, "target", got, "the link moves, not its target")
	}},

	// --- symlink ---
	{"Symlink/RoundTrip", capS, capS, func(t *testing.T, e *env) {
		// Targets are stored verbatim, dangling or not, inside or not.
		for name, target := range map[string]string{"l": "target/x", "abs": "/abs/path", "up": "../../up", "dots": "a/./b/../c"} {
			require.NoError(t, e.x.symlink(target, name))
			got, err := e.x.readLink(name)
			if assert.NoErrorf(t, err, "ReadLink(%q)", name) {
				assert.Equalf(t, target, got, "ReadLink(%q)", name)
			}
			a := mustStat(t, e.x, name)
			assert.Equalf(t, fs.ModeSymlink, a.Mode.Type(), "Stat(%q).Mode", name)
			assert.Equalf(t, int64(len(target)), a.Size, "Stat(%q).Size", name)
		}
		ents, err := e.x.readDir(".")
		require.NoError(t, err)
		for _, ent := range ents {
			assert.Equalf(t, fs.ModeSymlink, ent.Type, "listed type of %q", ent.Name)
		}
		assert.Len(t, ents, 4)
	}},
	{"Symlink/Errors", capS, capS | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "data", 0o644)
		wantErr(t, e.x, e.x.symlink("x", "f"), fs.ErrExist, "f")
		require.NoError(t, e.x.symlink("x", "l"))
		wantErr(t, e.x, e.x.symlink("y", "l"), fs.ErrExist, "l")
		wantErr(t, e.x, e.x.symlink("x", "missing/l"), fs.ErrNotExist, "missing/l")
		got, err := e.x.readLink("l")
		require.NoError(t, err)
		assert.Equal(t, "x", got)
		_, err = e.x.readLink("f")
		wantErr(t, e.x, err, fs.ErrInvalid, "f")
		assertContent(t, e.x, "f", "data")
	}},

	// --- hard link ---
	{"Link/RoundTrip", capL, capL | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "A", 0o644)
		require.NoError(t, e.x.link("f", "g"))
		af, ag := mustStat(t, e.x, "f"), mustStat(t, e.x, "g")
		assert.NotZero(t, af.Ino, "a mount with hard links must report inode numbers")
		assert.Equal(t, af.Ino, ag.Ino, "hard links share the inode")
		assert.Equal(t, uint32(2), af.Nlink, "nlink after link")
		assert.Equal(t, uint32(2), ag.Nlink, "nlink after link")
		h, err := e.x.openFile("g", os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte("B"), 0)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		assertContent(t, e.x, "f", "B")
		if e.caps.Has(capR) {
			require.NoError(t, e.x.unlink("f"))
			assert.Equal(t, uint32(1), mustStat(t, e.x, "g").Nlink, "nlink after unlinking the other name")
			assertContent(t, e.x, "g", "B")
		}
	}},
	{"Link/Errors", capL, capL | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "F", 0o644)
		writeFile(t, e.x, "g", "G", 0o644)
		wantErr(t, e.x, e.x.link("f", "g"), fs.ErrExist, "f", "g")
		wantErr(t, e.x, e.x.link("missing", "h"), fs.ErrNotExist, "missing", "h")
		assertNotExist(t, e.x, "h")
		assertContent(t, e.x, "g", "G")
	}},
	{"Link/Dir", capL, capL | capM, func(t *testing.T, e *env) {
		// link(2) on a directory is EPERM on Linux (the kernel refuses it
		// before the file system sees it).
		require.NoError(t, e.x.mkdir("d", 0o755))
		wantErr(t, e.x, e.x.link("d", "e"), fs.ErrPermission, "d", "e")
		assertNotExist(t, e.x, "e")
	}},

	// --- chmod ---
	{"Chmod/File", capC, capC | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "data", 0o644)
		for _, m := range []fs.FileMode{0o600, 0o755, 0o000, 0o755 | fs.ModeSetuid} {
			require.NoErrorf(t, e.x.chmod("f", m), "chmod %v", m)
			a := mustStat(t, e.x, "f")
			assert.Equalf(t, m, perm(a.Mode), "mode after chmod %v", m)
			assert.Truef(t, a.Mode.IsRegular(), "chmod changed the type: %v", a.Mode)
		}
		wantErr(t, e.x, e.x.chmod("missing", 0o644), fs.ErrNotExist, "missing")
	}},
	{"Chmod/Dir", capC, capC | capM, func(t *testing.T, e *env) {
		require.NoError(t, e.x.mkdir("d", 0o755))
		require.NoError(t, e.x.chmod("d", 0o700|fs.ModeSticky))
		a := mustStat(t, e.x, "d")
		assert.Equal(t, 0o700|fs.ModeSticky, perm(a.Mode))
		assert.True(t, a.IsDir(), "chmod changed the type: %v", a.Mode)
	}},

	// --- chown ---
	{"Chown/File", capCh, capCh | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "data", 0o644)
		a := mustStat(t, e.x, "f")
		require.NoError(t, e.x.chown("f", -1, -1), "chown to -1, -1")
		require.NoError(t, e.x.chown("f", int(a.Uid), int(a.Gid)), "chown to the owner it has")
		b := mustStat(t, e.x, "f")
		assert.Equal(t, [2]uint32{a.Uid, a.Gid}, [2]uint32{b.Uid, b.Gid}, "owner after a no-op chown")
		err := e.x.chown("f", 4242, 4343)
		if e.cfg.unprivileged {
			wantErr(t, e.x, err, fs.ErrPermission, "f")
			b = mustStat(t, e.x, "f")
			assert.Equal(t, [2]uint32{a.Uid, a.Gid}, [2]uint32{b.Uid, b.Gid}, "owner after a refused chown")
			return
		}
		require.NoError(t, err, "chown to another owner")
		b = mustStat(t, e.x, "f")
		assert.Equal(t, [2]uint32{4242, 4343}, [2]uint32{b.Uid, b.Gid}, "owner after chown")
		require.NoError(t, e.x.chown("f", -1, 5151))
		b = mustStat(t, e.x, "f")
		assert.Equal(t, [2]uint32{4242, 5151}, [2]uint32{b.Uid, b.Gid}, "-1 keeps the uid")
		wantErr(t, e.x, e.x.chown("missing", -1, -1), fs.ErrNotExist, "missing")
	}},
	{"Chown/Symlink", capCh, capCh | capS, func(t *testing.T, e *env) {
		// Dangling: chown that followed the link would fail.
		require.NoError(t, e.x.symlink("dangling", "l"))
		a := mustStat(t, e.x, "l")
		uid, gid := 4242, 4343
		if e.cfg.unprivileged {
			uid, gid = int(a.Uid), int(a.Gid)
		}
		require.NoError(t, e.x.chown("l", uid, gid), "chown of a symlink changes the link")
		b := mustStat(t, e.x, "l")
		assert.Equal(t, [2]uint32{uint32(uid), uint32(gid)}, [2]uint32{b.Uid, b.Gid})
	}},

	// --- chtimes ---
	{"Chtimes/File", capT, capT | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "data", 0o644)
		at := time.Unix(1_500_000_000, 123_456_789)
		mt := time.Unix(1_600_000_000, 987_654_321)
		require.NoError(t, e.x.chtimes("f", at, mt))
		e.assertTimes(t, "f", at, mt)

		// A zero time leaves that time alone.
		mt2 := time.Unix(1_700_000_000, 1)
		require.NoError(t, e.x.chtimes("f", time.Time{}, mt2))
		e.assertTimes(t, "f", at, mt2)
		at2 := time.Unix(1_400_000_000, 999_999_999)
		require.NoError(t, e.x.chtimes("f", at2, time.Time{}))
		e.assertTimes(t, "f", at2, mt2)
		wantErr(t, e.x, e.x.chtimes("missing", at, mt), fs.ErrNotExist, "missing")
	}},
	{"Chtimes/Dir", capT, capT | capM, func(t *testing.T, e *env) {
		require.NoError(t, e.x.mkdir("d", 0o755))
		at, mt := time.Unix(1_000_000_000, 5), time.Unix(1_000_000_001, 6)
		require.NoError(t, e.x.chtimes("d", at, mt))
		e.assertTimes(t, "d", at, mt)
	}},
	{"Chtimes/Symlink", capT, capT | capS, func(t *testing.T, e *env) {
		require.NoError(t, e.x.symlink("dangling", "l"))
		at, mt := time.Unix(1_000_000_000, 5), time.Unix(1_000_000_001, 6)
		require.NoError(t, e.x.chtimes("l", at, mt), "chtimes of a symlink changes the link")
		e.assertTimes(t, "l", at, mt)
	}},

	// --- xattrs ---
	{"Xattr/Missing", capX, capX | capW, func(t *testing.T, e *env) {
		writeFile(t, e.x, "f", "data", 0o644)
		_, err := e.x.getXattr("f", "user.mountstest")
		wantErr(t, e.x, err, mounts.ErrNoAttr, "f")
		list, err := e.x.listXattr("f")
		require.NoError(t, err)
		assert.NotContains(t, list, "user.mountstest")
		_, err = e.x.listXattr("missing")
		wantErr(t, e.x, err, fs.ErrNotExist, "missing")
	}},
	{"Xattr/RoundTrip", capSX, capSX | capW, func(t *testing.T, e *env) {
		x := e.x
		writeFile(t, x, "f", "data", 0o644)
		const attr = "user.mountstest"
		value := []byte("v1\x00\xff")
		require.NoError(t, x.setXattr("f", attr, value, 0))
		e.assertXattr(t, "f", attr, value)
		list, err := x.listXattr("f")
		require.NoError(t, err)
		assert.Contains(t, list, attr)
		wantErr(t, x, x.setXattr("f", attr, []byte("v2"), mounts.XattrCreate), fs.ErrExist, "f")
		e.assertXattr(t, "f", attr, value)
		require.NoError(t, x.setXattr("f", attr, []byte("v2"), mounts.XattrReplace))
		e.assertXattr(t, "f", attr, []byte("v2"))
		wantErr(t, x, x.setXattr("f", "user.other", []byte("v"), mounts.XattrReplace), mounts.ErrNoAttr, "f")
		require.NoError(t, x.setXattr("f", "user.empty", nil, mounts.XattrCreate))
		e.assertXattr(t, "f", "user.empty", nil)
		require.NoError(t, x.removeXattr("f", attr))
		_, err = x.getXattr("f", attr)
		wantErr(t, x, err, mounts.ErrNoAttr, "f")
		wantErr(t, x, x.removeXattr("f", attr), mounts.ErrNoAttr, "f")
		list, err = x.listXattr("f")
		require.NoError(t, err)
		assert.NotContains(t, list, attr)
		assert.Contains(t, list, "user.empty")
		assertContent(t, x, "f", "data")
	}},
	{"Xattr/Dir", capSX, capSX | capM, func(t *testing.T, e *env) {
		require.NoError(t, e.x.mkdir("d", 0o755))
		require.NoError(t, e.x.setXattr("d", "user.mountstest", []byte("dir"), 0))
		e.assertXattr(t, "d", "user.mountstest", []byte("dir"))
	}},

	// --- statfs ---
	{"StatFS/Sane", capSF, capSF, func(t *testing.T, e *env) {
		st, err := e.x.statFS()
		require.NoError(t, err)
		assert.NotZero(t, st.Bsize, "Bsize")
		assert.LessOrEqual(t, st.Bfree, st.Blocks, "Bfree <= Blocks")
		assert.LessOrEqual(t, st.Bavail, st.Bfree, "Bavail <= Bfree")
		assert.LessOrEqual(t, st.Ffree, st.Files, "Ffree <= Files")
		if st.NameLen != 0 {
			assert.GreaterOrEqual(t, st.NameLen, uint32(mounts.MaxNameLen), "NameLen below what CheckPath accepts")
		}
	}},
}

// assertTimes checks atime and mtime, to the nanosecond. A zero Atime
// means "same as Mtime" (mounts.Attr).
func (e *env) assertTimes(t *testing.T, name string, at, mt time.Time) {
	t.Helper()
	a := mustStat(t, e.x, name)
	gotA := a.Atime
	if gotA.IsZero() {
		gotA = a.Mtime
	}
	assert.Truef(t, mt.Equal(a.Mtime), "Mtime of %q = %v, want %v", name, a.Mtime, mt)
	assert.Truef(t, at.Equal(gotA), "Atime of %q = %v, want %v", name, gotA, at)
}

func (e *env) assertXattr(t *testing.T, name, attr string, want []byte) {
	t.Helper()
	got, err := e.x.getXattr(name, attr)
	if assert.NoErrorf(t, err, "GetXattr(%q, %q)", name, attr) {
		assert.Equalf(t, string(want), string(got), "GetXattr(%q, %q)", name, attr)
	}
}
