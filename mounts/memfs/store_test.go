package memfs_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// replica is a test store: it applies each Mutation to a plain model of
// inodes, the way a persistent store would replay its journal. If the tree
// forgets to report a change, the replica and the tree disagree.
type replica struct {
	mu     sync.Mutex
	inodes map[uint64]*rInode
	ops    []string
}

type rInode struct {
	meta    memfs.InodeRecord
	data    []byte
	entries map[string]uint64
}

func newReplica() *replica {
	return &replica{inodes: map[uint64]*rInode{1: {entries: map[string]uint64{}}}}
}

func (r *replica) get(ino uint64) *rInode {
	n, ok := r.inodes[ino]
	if !ok {
		n = &rInode{}
		r.inodes[ino] = n
	}
	return n
}

func (r *replica) Commit(m *memfs.Mutation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, m.Op)
	for _, ino := range m.Cleared {
		r.get(ino).data = nil
	}
	for _, w := range m.Writes {
		n := r.get(w.Ino)
		if end := w.Off + int64(len(w.Data)); end > int64(len(n.data)) {
			n.data = append(n.data, make([]byte, end-int64(len(n.data)))...)
		}
		copy(n.data[w.Off:], w.Data)
	}
	for _, rec := range m.Inodes {
		n := r.get(rec.Ino)
		n.meta = rec
		if rec.Mode.IsRegular() {
			// Size is authoritative: cut, or extend with a hole.
			if rec.Size < int64(len(n.data)) {
				n.data = n.data[:rec.Size]
			} else {
				n.data = append(n.data, make([]byte, rec.Size-int64(len(n.data)))...)
			}
		}
		if rec.Mode.IsDir() && n.entries == nil {
			n.entries = map[string]uint64{}
		}
	}
	for _, e := range m.Entries {
		dir := r.get(e.Dir)
		if e.Ino == 0 {
			delete(dir.entries, e.Name)
		} else {
			dir.entries[e.Name] = e.Ino
		}
	}
	for _, ino := range m.Freed {
		delete(r.inodes, ino)
	}
	return nil
}

// compare walks the live tree and checks the replica holds the same.
func (r *replica) compare(t *testing.T, fsys *memfs.FS) {
	t.Helper()
	ctx := context.Background()
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[uint64]bool{}
	var walk func(name string)
	walk = func(name string) {
		a := stat(t, fsys, name)
		seen[a.Ino] = true
		n, ok := r.inodes[a.Ino]
		if !assert.True(t, ok, "%s (ino %d) missing from the replica", name, a.Ino) {
			return
		}
		if n.meta.Ino == a.Ino { // the root's first record comes with its first change
			m := n.meta
			assert.Equal(t, a.Mode, m.Mode, "%s mode", name)
			assert.Equal(t, [2]uint32{a.Uid, a.Gid}, [2]uint32{m.Uid, m.Gid}, "%s owner", name)
			assert.Equal(t, a.Nlink, m.Nlink, "%s nlink", name)
			assert.Equal(t, a.Size, m.Size, "%s size", name)
			assert.True(t, a.Mtime.Equal(m.Mtime) && a.Atime.Equal(m.Atime) && a.Ctime.Equal(m.Ctime), "%s times", name)
		}
		switch {
		case a.IsDir():
			ents, err := fsys.ReadDir(ctx, name)
			require.NoError(t, err)
			got := map[string]uint64{}
			for _, e := range ents {
				got[e.Name] = e.Ino
				walk(mounts.Join(name, e.Name))
			}
			assert.Equal(t, got, n.entries, "%s entries", name)
		case a.Mode&fs.ModeSymlink != 0:
			target, err := fsys.ReadLink(ctx, name)
			require.NoError(t, err)
			assert.Equal(t, target, n.meta.Target, "%s target", name)
		default:
			assert.True(t, bytes.Equal([]byte(readFile(t, fsys, name)), n.data), "%s content", name)
		}
		if a.Mode&fs.ModeSymlink == 0 {
			names, err := fsys.ListXattr(ctx, name)
			require.NoError(t, err)
			want := map[string][]byte{}
			for _, x := range names {
				v, err := fsys.GetXattr(ctx, name, x)
				require.NoError(t, err)
				want[x] = v
			}
			got := n.meta.Xattrs
			if got == nil {
				got = map[string][]byte{}
			}
			assert.Equal(t, want, got, "%s xattrs", name)
		}
	}
	walk(".")
	assert.Equal(t, len(seen), len(r.inodes), "the replica holds no freed inode: %v", slices.Collect(maps.Keys(r.inodes)))
}

func TestStoreReplaysToTheSameTree(t *testing.T) {
	ctx := mounts.WithCaller(context.Background(), mounts.Caller{Uid: 5, Gid: 6})
	rep := newReplica()
	fsys, _ := newFS(t, memfs.Options{Store: rep})

	build(t, fsys, "d/", "d/e/", "f", "g", "l->f")
	w := openW(t, fsys, "d/big", os.O_RDWR|os.O_CREATE)
	_, err := w.WriteAt([]byte("far"), 3<<16+7)
	require.NoError(t, err)
	_, err = w.WriteAt(bytes.Repeat([]byte("z"), 70000), 10)
	require.NoError(t, err)
	require.NoError(t, w.Truncate(100000))
	require.NoError(t, w.Close())

	a := openW(t, fsys, "f", os.O_WRONLY|os.O_APPEND)
	_, err = a.WriteAt([]byte("+appended"), 0)
	require.NoError(t, err)
	require.NoError(t, a.Close())

	orphan := openW(t, fsys, "g", os.O_RDWR)
	require.NoError(t, fsys.Unlink(ctx, "g"))
	_, err = orphan.WriteAt([]byte("gone"), 0)
	require.NoError(t, err)
	require.NoError(t, orphan.Close())

	require.NoError(t, fsys.Mkdir(ctx, "owned", 0o700))
	require.NoError(t, fsys.Link(ctx, "f", "d/e/h"))
	require.NoError(t, fsys.Rename(ctx, "d/e", "e2", 0))
	build(t, fsys, "victim/")
	require.NoError(t, fsys.Rename(ctx, "owned", "victim", 0))
	build(t, fsys, "x", "y/")
	require.NoError(t, fsys.Rename(ctx, "x", "y", mounts.RenameExchange))
	require.NoError(t, fsys.Rename(ctx, "e2/h", "l", 0))
	require.NoError(t, fsys.SetXattr(ctx, "d", "user.a", []byte("1"), 0))
	require.NoError(t, fsys.SetXattr(ctx, "f", "user.b", []byte("2"), 0))
	require.NoError(t, fsys.SetXattr(ctx, "f", "user.c", []byte("3"), 0))
	require.NoError(t, fsys.RemoveXattr(ctx, "f", "user.b"))
	require.NoError(t, fsys.Chmod(ctx, "d/big", 0o600))
	require.NoError(t, fsys.Chown(ctx, "y", 9, -1))
	require.NoError(t, fsys.Chtimes(ctx, "x", time.Unix(1, 2), time.Unix(3, 4)))
	require.NoError(t, fsys.Truncate(ctx, "y", 2))
	build(t, fsys, "gone/")
	require.NoError(t, fsys.Rmdir(ctx, "gone"))
	tr, err := fsys.OpenFile(ctx, "d/big", os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.NoError(t, tr.Close())

	rep.compare(t, fsys)
	rep.mu.Lock()
	defer rep.mu.Unlock()
	assert.Equal(t, uint64(1), rep.inodes[1].meta.Ino, "the root was recorded when it changed")
	assert.Contains(t, rep.ops, "close", "freeing the orphan was journaled")
}

type failingStore struct{ err error }

func (s failingStore) Commit(*memfs.Mutation) error { return s.err }

func TestStoreFailureIsReported(t *testing.T) {
	ctx := context.Background()
	errDisk := errors.New("disk on fire")
	var logs bytes.Buffer
	fsys, _ := newFS(t, memfs.Options{
		Store:  failingStore{errDisk},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	assertPathErr(t, fsys.Mkdir(ctx, "d", 0o755), "d", errDisk)
	_, err := fsys.OpenFile(ctx, "f", os.O_RDWR|os.O_CREATE, 0o644)
	assertPathErr(t, err, "f", errDisk)
	assertPathErr(t, fsys.Chmod(ctx, ".", 0o700), ".", errDisk)
	assert.Contains(t, logs.String(), "disk on fire")
	assert.Contains(t, logs.String(), "op=mkdir")
}
