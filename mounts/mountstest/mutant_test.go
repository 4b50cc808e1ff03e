package mountstest_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// The suite is only worth what it catches. Each mutant below is the memory
// mount with one contract bug planted; TestSuiteCatchesMutants runs the
// suite against each in a child process and requires the named subtest to
// fail. TestMutant with no mutant selected is the control: the same wrapper
// without a bug passes.

const mutantEnv = "MOUNTSTEST_MUTANT"

type mutant struct {
	failing string // a subtest of Run that must fail
	wrap    func(m *memfs.FS) mounts.FS
}

var mutants = map[string]mutant{
	"":                   {"", func(m *memfs.FS) mounts.FS { return m }},
	"unsorted-readdir":   {"ReadSide", func(m *memfs.FS) mounts.FS { return unsortedDir{m} }},
	"bare-errors":        {"ReadSide/Errors", func(m *memfs.FS) mounts.FS { return bareErrors{m} }},
	"cleans-bad-names":   {"BadNames", func(m *memfs.FS) mounts.FS { return rewrites(m, cleansNames) }},
	"seconds-only":       {"Chtimes/File", func(m *memfs.FS) mounts.FS { return rewrites(m, secondsOnly) }},
	"noreplace-ignored":  {"Rename/NoReplace", func(m *memfs.FS) mounts.FS { return rewrites(m, noReplaceIgnored) }},
	"nlink-always-one":   {"Link/RoundTrip", func(m *memfs.FS) mounts.FS { return nlinkOne{m} }},
	"append-ignored":     {"Write/Append", func(m *memfs.FS) mounts.FS { return rewrites(m, appendIgnored) }},
	"mkdir-exist-ok":     {"Mkdir/Exist", func(m *memfs.FS) mounts.FS { return mkdirExistOK{m} }},
	"unlink-removes-dir": {"Remove/Rmdir", func(m *memfs.FS) mounts.FS { return unlinkDirs{m} }},
	"absent-wrong-errno": {"Absent/mkdir", func(m *memfs.FS) mounts.FS { return wrongAbsent{m} }},
	"absent-but-acts":    {"Absent/mkdir", func(m *memfs.FS) mounts.FS { return absentActs{m} }},
	"statdir-sizes-zero": {"ReadSide", func(m *memfs.FS) mounts.FS { return statDirZero{m} }},
}

// statDirZero lists with attributes but reports every size as 0.
type statDirZero struct{ *memfs.FS }

func (m statDirZero) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	ents, attrs, err := mounts.StatEach(ctx, m.FS, name)
	for i := range attrs {
		attrs[i].Size = 0
	}
	return ents, attrs, err
}

// TestMutant runs the suite on the mutant named by $MOUNTSTEST_MUTANT; with
// none, on the unchanged memory mount, which must pass.
func TestMutant(t *testing.T) {
	mt, ok := mutants[os.Getenv(mutantEnv)]
	require.True(t, ok, "unknown mutant %q", os.Getenv(mutantEnv))
	mountstest.Run(t, func(t *testing.T) mounts.FS { return mt.wrap(memfs.New(memfs.Options{})) })
}

func TestSuiteCatchesMutants(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		t.Fatalf("%s is for the child processes of this test", mutantEnv)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	names := make([]string, 0, len(mutants))
	for name := range mutants {
		if name != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestMutant$", "-test.v", "-test.count=1", "-test.timeout=120s")
			cmd.Env = append(os.Environ(), mutantEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAsf(t, err, &exit, "the suite passed a mount with a planted bug:\n%s", out)
			assert.Containsf(t, string(out), "--- FAIL: TestMutant/"+mutants[name].failing+" ",
				"the planted bug was not caught where expected:\n%s", out)
		})
	}
}

type unsortedDir struct{ *memfs.FS }

func (m unsortedDir) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	ents, err := m.FS.ReadDir(ctx, name)
	slices.Reverse(ents)
	return ents, err
}

type bareErrors struct{ *memfs.FS }

func (m bareErrors) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	a, err := m.FS.Stat(ctx, name)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return a, pe.Err
	}
	return a, err
}

// rewrites plants a bug that is a rewrite of the call: the memory mount
// behind an interceptor that changes one argument of one verb.
func rewrites(m *memfs.FS, bug func(c mounts.Call) mounts.Call) mounts.FS {
	return mounts.Intercept(m, mounts.Interceptor{Call: func(_ context.Context, c mounts.Call) (mounts.Call, error) {
		return bug(c), nil
	}})
}

func cleansNames(c mounts.Call) mounts.Call {
	if c.Op == mounts.OpStat {
		c.Name = path.Clean(c.Name)
	}
	return c
}

func secondsOnly(c mounts.Call) mounts.Call {
	if c.Op == mounts.OpChtimes {
		c.Atime, c.Mtime = c.Atime.Truncate(time.Second), c.Mtime.Truncate(time.Second)
	}
	return c
}

func noReplaceIgnored(c mounts.Call) mounts.Call {
	if c.Op == mounts.OpRename {
		c.RenameFlags &^= mounts.RenameNoReplace
	}
	return c
}

type nlinkOne struct{ *memfs.FS }

func (m nlinkOne) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	a, err := m.FS.Stat(ctx, name)
	if a.Mode.IsRegular() {
		a.Nlink = 1
	}
	return a, err
}

func appendIgnored(c mounts.Call) mounts.Call {
	if c.Op == mounts.OpOpenFile {
		c.Flag &^= os.O_APPEND
	}
	return c
}

type mkdirExistOK struct{ *memfs.FS }

func (m mkdirExistOK) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if err := m.FS.Mkdir(ctx, name, perm); !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

type unlinkDirs struct{ *memfs.FS }

func (m unlinkDirs) Unlink(ctx context.Context, name string) error {
	if a, err := m.FS.Stat(ctx, name); err == nil && a.IsDir() {
		return m.FS.Rmdir(ctx, name)
	}
	return m.FS.Unlink(ctx, name)
}

// wrongAbsent reports no mkdir, as a union whose mounts lack it would, but
// answers with the read-only errno although it is writable.
type wrongAbsent struct{ *memfs.FS }

func (wrongAbsent) Capabilities() mounts.Capability {
	return mounts.Capabilities(memfs.New(memfs.Options{})) &^ mounts.CapMkdir
}

func (wrongAbsent) Mkdir(_ context.Context, name string, _ fs.FileMode) error {
	return mounts.PathErr("mkdir", name, mounts.ErrReadOnly)
}

// absentActs reports no mkdir, answers with the right errno, and makes the
// directory anyway.
type absentActs struct{ *memfs.FS }

func (absentActs) Capabilities() mounts.Capability {
	return mounts.Capabilities(memfs.New(memfs.Options{})) &^ mounts.CapMkdir
}

func (m absentActs) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if err := m.FS.Mkdir(ctx, name, perm); err != nil {
		return err
	}
	return mounts.PathErr("mkdir", name, mounts.ErrNotSupported)
}
