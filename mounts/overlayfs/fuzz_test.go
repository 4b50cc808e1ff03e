package overlayfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// fuzzLower is the lower of FuzzOps, and the starting tree of its oracle.
var fuzzLower = []string{"a/", "a/a=one", "a/b/", "a/b/c=two", "b=three", "c/", "c/a->b", "c/c=four", "d/"}

// fuzzNames are the names an operation can use: lower names, names below
// them, and names of neither.
var fuzzNames = []string{"a", "b", "c", "d", "e", "a/a", "a/b", "a/e", "a/b/c", "a/b/e", "c/a", "c/c", "d/e", "e/e"}

// FuzzOps runs a sequence of writes, decoded from the input three bytes an
// operation, on an overlay over a memory lower and on a plain memory mount
// that starts with the same tree: every call must answer alike, the trees
// must end alike, and reopening the overlay over its upper must give back
// the same tree with the same inode numbers. It never panics.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 4, 0, 5, 0, 4, 1, 1, 0})           // rename a e; rename over; write
	f.Add([]byte{4, 0, 0, 3, 5, 0, 3, 6, 0, 4, 0, 0})  // rmdir a (fails); unlink a/a; unlink a/b (fails); rmdir
	f.Add([]byte{3, 1, 0, 0, 1, 0, 6, 1, 5, 5, 0, 4})  // unlink b; mkdir b; link; rename
	f.Add([]byte{5, 2, 3, 8, 9, 0, 9, 7, 0, 10, 4, 0}) // rename c d; chmod; xattr; mknod
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 3*200 {
			prog = prog[:3*200]
		}
		lm := memfs.New(memfs.Options{})
		build(t, lm, fuzzLower...)
		oracle := memfs.New(memfs.Options{})
		build(t, oracle, fuzzLower...)
		upper := memfs.New(memfs.Options{})
		o, err := overlayfs.New(bg, frozen{lm}, upper, overlayfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+2 < len(prog); i += 3 {
			a, b := fuzzNames[int(prog[i+1])%len(fuzzNames)], fuzzNames[int(prog[i+2])%len(fuzzNames)]
			desc, got, want := fuzzOp(o, oracle, prog[i], a, b, i)
			if mountstest.ErrnoOf(t, got) != mountstest.ErrnoOf(t, want) {
				t.Fatalf("op %d %s: overlay %v, memory mount %v", i/3, desc, got, want)
			}
		}
		ot, mt := tree(t, o, false), tree(t, oracle, false)
		if fmt.Sprint(ot) != fmt.Sprint(mt) {
			t.Fatalf("trees differ:\noverlay %v\nmemory  %v", ot, mt)
		}
		before := tree(t, o, true)
		again, err := overlayfs.New(bg, frozen{lm}, upper, overlayfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if after := tree(t, again, true); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("reopened:\n%v\nwas\n%v", after, before)
		}
	})
}

// fuzzOp runs one decoded operation on both mounts.
func fuzzOp(o, m mounts.FS, code byte, a, b string, seq int) (string, error, error) {
	both := func(do func(fsys mounts.FS) error) (error, error) { return do(o), do(m) }
	var desc string
	var got, want error
	switch code % 11 {
	case 0:
		desc = "mkdir " + a
		got, want = both(func(fsys mounts.FS) error { return mounts.Mkdir(bg, fsys, a, 0o750) })
	case 1:
		flag := os.O_WRONLY | os.O_CREATE
		if seq%2 == 0 {
			flag |= os.O_TRUNC
		}
		desc = fmt.Sprintf("write %s flag %#x", a, flag)
		got, want = both(func(fsys mounts.FS) error {
			fl, err := mounts.OpenFile(bg, fsys, a, flag, 0o640)
			if err != nil {
				return err
			}
			_, werr := fl.(mounts.WritableFile).WriteAt([]byte(fmt.Sprint("<", seq, ">")), int64(seq%7))
			return errors.Join(werr, fl.Close())
		})
	case 2:
		desc = "truncate " + a
		got, want = both(func(fsys mounts.FS) error { return mounts.Truncate(bg, fsys, a, int64(seq%5)) })
	case 3:
		desc = "unlink " + a
		got, want = both(func(fsys mounts.FS) error { return mounts.Unlink(bg, fsys, a) })
	case 4:
		desc = "rmdir " + a
		got, want = both(func(fsys mounts.FS) error { return mounts.Rmdir(bg, fsys, a) })
	case 5, 6:
		flags := []mounts.RenameFlags{0, mounts.RenameNoReplace, mounts.RenameExchange}[seq%3]
		desc = fmt.Sprintf("rename %s %s %d", a, b, flags)
		got, want = both(func(fsys mounts.FS) error { return mounts.Rename(bg, fsys, a, b, flags) })
	case 7:
		desc = "link " + a + " " + b
		got, want = both(func(fsys mounts.FS) error { return mounts.Link(bg, fsys, a, b) })
	case 8:
		desc = "symlink " + a
		got, want = both(func(fsys mounts.FS) error { return mounts.Symlink(bg, fsys, b, a) })
	case 9:
		desc = "chmod/setxattr " + a
		got, want = both(func(fsys mounts.FS) error {
			if seq%2 == 0 {
				return mounts.Chmod(bg, fsys, a, fs.FileMode(seq%0o777)|0o700)
			}
			return mounts.SetXattr(bg, fsys, a, "user.k", []byte(fmt.Sprint(seq)), 0)
		})
	case 10:
		desc = "mknod " + a
		got, want = both(func(fsys mounts.FS) error { return mounts.Mknod(bg, fsys, a, fs.ModeNamedPipe|0o600, 0) })
	}
	return desc, got, want
}
