package memfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestConcurrent runs writers, readers, renamers, creators and attribute
// changers against one tree. Run it with -race. Beyond the race detector it
// checks invariants that only hold if the locking is right: a reader never
// sees a torn block, every name resolves to what its ReadDir entry says,
// and the usage counters come back to zero.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	fsys := memfs.New(memfs.Options{MaxBytes: 1 << 30, MaxFiles: 1 << 20})
	build(t, fsys, "shared", "a/", "b/")
	const (
		workers = 4
		rounds  = 200
		block   = 4096
	)
	shared := openW(t, fsys, "shared", os.O_RDWR)
	// Every block starts uniform, so a reader that comes first sees one
	// (build gave the file a short text of mixed bytes).
	_, err := shared.WriteAt(bytes.Repeat([]byte{'Z'}, 8*block), 0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	// Writers fill whole blocks of the shared file with one byte value;
	// readers must only ever see uniform blocks.
	for w := range workers {
		wg.Go(func() {
			buf := bytes.Repeat([]byte{byte('A' + w)}, block)
			for i := range rounds {
				if _, err := shared.WriteAt(buf, int64((i%8)*block)); err != nil {
					report(err)
					return
				}
			}
		})
		wg.Go(func() {
			buf := make([]byte, block)
			for i := range rounds {
				n, err := shared.ReadAt(buf, int64((i%8)*block))
				if err != nil && !errors.Is(err, io.EOF) {
					report(err)
					return
				}
				for _, c := range buf[:n] {
					if c != buf[0] {
						report(fmt.Errorf("torn block at %d: %q then %q", i%8, buf[0], c))
						return
					}
				}
			}
		})
	}
	// Each renamer owns one file and bounces it between a/ and b/, while
	// others list and stat those directories.
	for w := range workers {
		wg.Go(func() {
			name := fmt.Sprintf("f%d", w)
			if err := mounts.WriteFile(ctx, fsys, "a/"+name, []byte(name), 0o644); err != nil {
				report(err)
				return
			}
			from, to := "a/"+name, "b/"+name
			for range rounds {
				if err := fsys.Rename(ctx, from, to, 0); err != nil {
					report(err)
					return
				}
				from, to = to, from
			}
		})
		wg.Go(func() {
			for range rounds {
				for _, dir := range []string{"a", "b"} {
					ents, err := fsys.ReadDir(ctx, dir)
					if err != nil {
						report(err)
						return
					}
					for _, e := range ents {
						// The entry may have moved since; if it is still
						// there it must be the same inode.
						a, err := fsys.Stat(ctx, mounts.Join(dir, e.Name))
						if err == nil && a.Ino != e.Ino {
							report(fmt.Errorf("%s/%s: ino %d, listed as %d", dir, e.Name, a.Ino, e.Ino))
						} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
							report(err)
						}
					}
				}
			}
		})
		// Creators make, write, xattr, link and remove their own files.
		wg.Go(func() {
			for i := range rounds {
				name := fmt.Sprintf("c%d-%d", w, i)
				f, err := fsys.OpenFile(ctx, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					report(err)
					return
				}
				wf := f.(mounts.WritableFile)
				_, err = wf.WriteAt(make([]byte, 10000), 0)
				err = errors.Join(err,
					fsys.SetXattr(ctx, name, "user.x", []byte("v"), 0),
					fsys.Chmod(ctx, name, 0o600),
					fsys.Link(ctx, name, name+".h"),
					fsys.Unlink(ctx, name),
					fsys.Unlink(ctx, name+".h"),
					wf.Truncate(1),
					f.Close())
				if err != nil {
					report(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.NoError(t, shared.Close())

	for w := range workers {
		name := fmt.Sprintf("f%d", w)
		assert.Equal(t, name, readFile(t, fsys, "a/"+name), "renamer %d ended where it started", w)
	}
	st, err := fsys.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(3+workers), st.Files-st.Ffree, "shared, a, b and the renamed files: nothing leaked")
	// Bytes held: the shared file's first 8 blocks (32 KiB, one page
	// prefix) and four 2-byte files; in 4 KiB statfs blocks that is 9.
	assert.Equal(t, uint64(9), st.Blocks-st.Bfree, "freed files gave their bytes back")
	assert.Equal(t, uint32(2), stat(t, fsys, "a").Nlink)
}
