package fusefs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/posixtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/union"
)

// countFS is a host mount that counts the reads and writes reaching it
// through open files, so a test can tell passthrough (none reach it) from
// the fallback. Its files forward the host descriptor, as the union's do.
type countFS struct {
	*hostfs.FS
	reads, writes *atomic.Int64
}

func (c countFS) wrap(f mounts.File, err error) (mounts.File, error) {
	if err != nil {
		return nil, err
	}
	cf := countedFile{FDFile: f.(mounts.FDFile), c: c}
	if w, ok := f.(mounts.WritableFile); ok {
		return countedWritable{countedFile: cf, w: w}, nil
	}
	return cf, nil
}

func (c countFS) Open(ctx context.Context, name string) (mounts.File, error) {
	return c.wrap(c.FS.Open(ctx, name))
}

func (c countFS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	return c.wrap(c.FS.OpenFile(ctx, name, flag, perm))
}

type countedFile struct {
	mounts.FDFile
	c countFS
}

func (f countedFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.reads.Add(1)
	return f.FDFile.ReadAt(p, off)
}

type countedWritable struct {
	countedFile
	w mounts.WritableFile
}

func (f countedWritable) WriteAt(p []byte, off int64) (int, error) {
	f.c.writes.Add(1)
	return f.w.WriteAt(p, off)
}

func (f countedWritable) Truncate(size int64) error { return f.w.Truncate(size) }
func (f countedWritable) Sync() error               { return f.w.Sync() }

// hostStack is a host directory served at /host of a union, counted.
type hostStack struct {
	src  string // the host directory
	mnt  string // the host mount through the kernel
	fsys mounts.FS
	srv  *Server
	countFS
}

// mountHost mounts a fresh host directory at /host through the kernel;
// decorate, when not nil, wraps the union (a policy decorator, as the
// command line stacks them).
func mountHost(t *testing.T, passthrough bool, decorate func(mounts.FS) mounts.FS) *hostStack {
	t.Helper()
	src := t.TempDir()
	h, err := hostfs.Open(src, hostfs.Options{})
	require.NoError(t, err)
	c := countFS{FS: h.(*hostfs.FS), reads: new(atomic.Int64), writes: new(atomic.Int64)}
	u, err := union.New(map[string]mounts.FS{"/host": c})
	require.NoError(t, err)
	var fsys mounts.FS = u
	if decorate != nil {
		fsys = decorate(fsys)
	}
	srv, dir := mountFS(t, fsys, Options{Passthrough: passthrough})
	if passthrough && !srv.conn.passthrough.Load() {
		if os.Geteuid() != 0 {
			t.Skip("FUSE passthrough needs CAP_SYS_ADMIN")
		}
		t.Fatal("passthrough asked for, as root, but the kernel refused a backing file")
	}
	return &hostStack{src: src, mnt: filepath.Join(dir, "host"), fsys: fsys, srv: srv, countFS: c}
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestPassthroughHostFile runs the same file operations through a host
// mount with passthrough and with the fallback: the results must be the
// same, and only the fallback's reads and writes reach the process.
func TestPassthroughHostFile(t *testing.T) {
	for _, tc := range []struct {
		name        string
		passthrough bool
	}{
		{"passthrough", true},
		{"fallback", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mountHost(t, tc.passthrough, nil)
			kpath := filepath.Join(s.mnt, "f")
			hpath := filepath.Join(s.src, "f")

			// A large write in one call, read back both ways.
			data := randomBytes(3<<20+17, 1)
			require.NoError(t, os.WriteFile(kpath, data, 0o644))
			got, err := os.ReadFile(hpath)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(data, got), "host file differs from what was written")
			got, err = os.ReadFile(kpath)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(data, got), "read back differs from what was written")

			// Writes and reads at offsets, through one O_RDWR handle.
			f, err := os.OpenFile(kpath, os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("middle"), 1<<20)
			require.NoError(t, err)
			copy(data[1<<20:], "middle")
			buf := make([]byte, 10)
			_, err = f.ReadAt(buf, 1<<20-2)
			require.NoError(t, err)
			assert.Equal(t, data[1<<20-2:1<<20+8], buf)
			// ftruncate through the handle, then write past the end.
			require.NoError(t, f.Truncate(4096))
			_, err = f.WriteAt([]byte("end"), 8192)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			want := append(append(bytes.Clone(data[:4096]), make([]byte, 4096)...), "end"...)
			got, err = os.ReadFile(hpath)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "offsets and ftruncate: host file differs")

			// O_APPEND writes at the end, whatever the offset.
			a, err := os.OpenFile(kpath, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = a.Write([]byte("+one"))
			require.NoError(t, err)
			// Another writer grows the file behind the append handle.
			require.NoError(t, os.WriteFile(filepath.Join(s.src, "g"), nil, 0o644))
			hf, err := os.OpenFile(hpath, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = hf.Write([]byte("+host"))
			require.NoError(t, err)
			require.NoError(t, hf.Close())
			_, err = a.Write([]byte("+two"))
			require.NoError(t, err)
			require.NoError(t, a.Close())
			want = append(want, "+one+host+two"...)
			got, err = os.ReadFile(hpath)
			require.NoError(t, err)
			assert.Equal(t, string(want[len(want)-20:]), string(got[max(0, len(got)-20):]), "append")
			assert.Len(t, got, len(want))

			// truncate(2) by name, then O_TRUNC.
			require.NoError(t, os.Truncate(kpath, 100))
			st, err := os.Stat(kpath)
			require.NoError(t, err)
			assert.EqualValues(t, 100, st.Size())
			tr, err := os.OpenFile(kpath, os.O_WRONLY|os.O_TRUNC, 0)
			require.NoError(t, err)
			_, err = tr.Write([]byte("x"))
			require.NoError(t, err)
			require.NoError(t, tr.Close())
			got, err = os.ReadFile(hpath)
			require.NoError(t, err)
			assert.Equal(t, "x", string(got))

			// Mixed modes, on files no handle has touched yet, so the
			// first open's descriptor is the one that backs the node:
			// a reader first, then a writer and a read-write handle;
			// and a writer first, then a reader.
			for _, first := range []int{os.O_RDONLY, os.O_WRONLY} {
				name := fmt.Sprintf("mixed-%d", first)
				require.NoError(t, os.WriteFile(filepath.Join(s.src, name), []byte("0123456789abc"), 0o644))
				p := filepath.Join(s.mnt, name)
				h1, err := os.OpenFile(p, first, 0)
				require.NoError(t, err)
				w, err := os.OpenFile(p, os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = w.WriteAt([]byte("written by w"), 0)
				require.NoError(t, err)
				rw, err := os.OpenFile(p, os.O_RDWR, 0)
				require.NoError(t, err)
				_, err = rw.WriteAt([]byte("RW"), 11)
				require.NoError(t, err)
				r, err := os.Open(p)
				require.NoError(t, err)
				buf := make([]byte, 13)
				n, err := r.ReadAt(buf, 0)
				require.NoError(t, err)
				assert.Equal(t, "written by RW", string(buf[:n]), "first open %#o", first)
				n, err = rw.ReadAt(buf, 0)
				require.NoError(t, err)
				assert.Equal(t, "written by RW", string(buf[:n]), "first open %#o", first)
				for _, h := range []*os.File{h1, w, rw, r} {
					require.NoError(t, h.Close())
				}
			}

			r, err := os.Open(kpath)
			require.NoError(t, err)
			defer r.Close()
			if tc.passthrough {
				// A tool write (the library) to a file open with
				// passthrough is seen by the kernel reader: the
				// backing file is the host file.
				lf, err := mounts.OpenFile(context.Background(), s.fsys, "host/f", os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = lf.(mounts.WritableFile).WriteAt([]byte("TOOL"), 0)
				require.NoError(t, err)
				require.NoError(t, lf.Close())
				buf := make([]byte, 4)
				_, err = r.ReadAt(buf, 0)
				require.NoError(t, err)
				assert.Equal(t, "TOOL", string(buf))
			}

			// The library's own write above is the only one that may
			// reach the counters in passthrough mode.
			if tc.passthrough {
				assert.LessOrEqual(t, s.writes.Load(), int64(1), "writes reached the process despite passthrough")
				assert.Zero(t, s.reads.Load(), "reads reached the process despite passthrough")
			} else {
				assert.Greater(t, s.writes.Load(), int64(3), "fallback: writes must reach the process")
				assert.Positive(t, s.reads.Load(), "fallback: reads must reach the process")
			}
		})
	}
}

// TestPassthroughOffUnderAudit: with the audit decorator between the union
// and the host mount, every write reaches the process (passthrough would
// bypass the count), whatever order handles are opened in, and the audit
// line has the byte count.
func TestPassthroughOffUnderAudit(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := policy.OpenAudit(policy.AuditOptions{Path: logPath})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	s := mountHost(t, true, func(m mounts.FS) mounts.FS { return policy.Audit(m, l) })

	kpath := filepath.Join(s.mnt, "audited")
	require.NoError(t, os.WriteFile(filepath.Join(s.src, "audited"), []byte("old"), 0o644))
	// A reader first: were its open a passthrough one, the writer's
	// would have to be one too.
	r, err := os.Open(kpath)
	require.NoError(t, err)
	defer r.Close()
	data := randomBytes(1<<20+5, 2)
	w, err := os.OpenFile(kpath, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	got := make([]byte, len(data))
	_, err = r.ReadAt(got, 0)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got))
	assert.Positive(t, s.writes.Load(), "writes bypassed the audit")
	assert.Positive(t, s.reads.Load(), "reads bypassed the process")

	// The write line is logged at RELEASE, which trails close(2).
	var bytesLogged int64 = -1
	require.Eventually(t, func() bool {
		f, err := os.Open(logPath)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var rec policy.Record
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Op == "write" && rec.Path == "/host/audited" && rec.Bytes != nil {
				bytesLogged = *rec.Bytes
				return true
			}
		}
		return false
	}, 5*time.Second, 20*time.Millisecond, "no write line in the audit log")
	assert.EqualValues(t, len(data), bytesLogged)
}

// passthroughPOSIXUnsupported lists the posixtest checks a host mount
// cannot pass through this kernel face, passthrough or not (the reasons
// are integration's hostPOSIXUnsupported, which runs them without it).
var passthroughPOSIXUnsupported = map[string]string{
	"Fallocate":           "the mounts contract has no verb to reserve space (EOPNOTSUPP)",
	"FallocateKeepSize":   "as Fallocate",
	"FcntlFlockLocksFile": "record locks are the kernel's; the check needs a server-side lock manager",
	"RenameOpenDir":       "the kernel face is path based: a directory a rename replaced has no name to stat",
	"Tmpfile":             "O_TMPFILE needs a file with no name, which the mounts contract cannot create",
}

// TestPassthroughPOSIX runs go-fuse's POSIX checks on a writable host mount
// served with passthrough.
func TestPassthroughPOSIX(t *testing.T) {
	s := mountHost(t, true, nil)
	names := slices.Sorted(maps.Keys(posixtest.All))
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if why, ok := passthroughPOSIXUnsupported[name]; ok {
				t.Skip(why)
			}
			dir := filepath.Join(s.mnt, "posix-"+name)
			require.NoError(t, os.Mkdir(dir, 0o755))
			posixtest.All[name](t, dir)
		})
	}
	assert.Zero(t, s.reads.Load()+s.writes.Load(), "reads or writes reached the process despite passthrough")
}
