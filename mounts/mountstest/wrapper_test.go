package mountstest_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// RunWrapper is only worth what it catches. Each wrapper mutant below is a
// faithful forwarder with one bug planted, of the kinds hand-written
// forwarders have had; TestRunWrapperCatchesMutants runs RunWrapper on each
// in a child process and requires it to fail in the named subtest.
// TestWrapperMutant with none selected is the control: the forwarder
// without a bug passes.

const wrapperMutantEnv = "MOUNTSTEST_WRAPPER_MUTANT"

// contract is every interface a full forwarder declares: embedding it
// promotes exactly those methods, so a mutant can override one in a line.
type contract interface {
	withoutStatDir
	mounts.StatDirFS
}

// withoutStatDir is contract without StatDirFS.
type withoutStatDir interface {
	mounts.OpenFileFS
	mounts.TruncateFS
	mounts.MkdirFS
	mounts.RemoveFS
	mounts.RenameFS
	mounts.SymlinkFS
	mounts.LinkFS
	mounts.MknodFS
	mounts.ChmodFS
	mounts.ChownFS
	mounts.ChtimesFS
	mounts.SetXattrFS
	mounts.StatFSer
	mounts.SyncFS
	mounts.CapabilityReporter
	mounts.Describer
	mounts.PathDescriber
	mounts.MountTabler
	mounts.PageOfferer
}

func forwarder(f mounts.FS) contract { return mounts.Intercept(f, mounts.Interceptor{}).(contract) }

type wrapperMutant struct {
	failing string // a subtest of RunWrapper that must fail
	message string // the start of the message of a check that must fail
	wrap    func(mounts.FS) mounts.FS
}

var wrapperMutants = map[string]wrapperMutant{
	"": {"", "", func(f mounts.FS) mounts.FS { return mounts.Intercept(f, mounts.Interceptor{}) }},
	// The drift issue 14 found: a forwarder written before StatDirFS.
	"drops-statdir": {"full", "StatDir: results", func(f mounts.FS) mounts.FS { return dropsStatDir{forwarder(f)} }},
	// Capability inferred from the wrapper's own methods.
	"reports-all": {"Capabilities", "wrapper of a mount reporting read-only", func(f mounts.FS) mounts.FS { return reportsAll{forwarder(f)} }},
	// A verb that reaches the mount without its caller.
	"drops-context": {"full", "Mkdir: calls that reached the mount", func(f mounts.FS) mounts.FS { return dropsContext{forwarder(f)} }},
	// A verb called on the mount by type assertion, not by the helper:
	// a writable mount without it answers the wrong errno.
	"asserts-link": {"only-mkdir", "Link: results", func(f mounts.FS) mounts.FS { return assertsLink{forwarder(f), f} }},
	// An error swallowed.
	"swallows-unlink": {"full", "Remove: results", func(f mounts.FS) mounts.FS { return swallowsUnlink{forwarder(f)} }},
	// A file handed out with the descriptor hidden, by a wrapper that
	// says it forwards it.
	"hides-fd": {"full", "Open: host descriptors", func(f mounts.FS) mounts.FS { return mounts.Watch(f, mounts.Watcher{}) }},
	// The mount table not forwarded.
	"no-table": {"only-mounts", "mount table", func(f mounts.FS) mounts.FS { return noTable{forwarder(f)} }},
	// Pages offered up not passed on (a forwarder written before
	// PageOfferer would not even say it offers them).
	"drops-offers": {"only-offer", "offered pages reach the sink", func(f mounts.FS) mounts.FS { return dropsOffers{forwarder(f)} }},
}

type dropsOffers struct{ contract }

func (m dropsOffers) OfferPages(sink mounts.PageSink) bool {
	return m.contract.OfferPages(func(string, []byte) {})
}

type dropsStatDir struct{ withoutStatDir }

type reportsAll struct{ contract }

func (reportsAll) Capabilities() mounts.Capability {
	return mounts.CapMutating | mounts.CapXattr | mounts.CapStatFS
}

type dropsContext struct{ contract }

func (m dropsContext) Mkdir(_ context.Context, name string, perm fs.FileMode) error {
	return m.contract.Mkdir(context.Background(), name, perm)
}

type assertsLink struct {
	contract
	inner mounts.FS
}

func (m assertsLink) Link(ctx context.Context, oldname, newname string) error {
	if l, ok := m.inner.(mounts.LinkFS); ok {
		return l.Link(ctx, oldname, newname)
	}
	return mounts.PathErr("link", newname, mounts.ErrReadOnly)
}

type swallowsUnlink struct{ contract }

func (m swallowsUnlink) Unlink(ctx context.Context, name string) error {
	_ = m.contract.Unlink(ctx, name)
	return nil
}

type noTable struct{ contract }

func (noTable) Mounts() []mounts.MountInfo { return nil }

// TestWrapperMutant runs RunWrapper on the mutant named by
// $MOUNTSTEST_WRAPPER_MUTANT; with none, on the faithful forwarder, which
// must pass.
func TestWrapperMutant(t *testing.T) {
	m, ok := wrapperMutants[os.Getenv(wrapperMutantEnv)]
	require.True(t, ok, "unknown wrapper mutant %q", os.Getenv(wrapperMutantEnv))
	mountstest.RunWrapper(t, m.wrap)
}

func TestRunWrapperCatchesMutants(t *testing.T) {
	if os.Getenv(wrapperMutantEnv) != "" {
		t.Fatalf("%s is for the child processes of this test", wrapperMutantEnv)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	var names []string
	for name := range wrapperMutants {
		if name != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestWrapperMutant$", "-test.v", "-test.count=1", "-test.timeout=120s")
			cmd.Env = append(os.Environ(), wrapperMutantEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAsf(t, err, &exit, "RunWrapper passed a wrapper with a planted bug:\n%s", out)
			m := wrapperMutants[name]
			assert.Containsf(t, string(out), "--- FAIL: TestWrapperMutant/"+m.failing+" ",
				"the planted bug was not caught where expected:\n%s", out)
			assert.Containsf(t, string(out), "Messages:   \t"+m.message,
				"the planted bug was not caught by the check expected:\n%s", out)
		})
	}
}

// TestRunWrapperRefuses: a wrapper that refuses every change passes with
// Refuses, and a faithful forwarder does not pass as one that refuses.
func TestRunWrapperRefuses(t *testing.T) {
	freeze := func(f mounts.FS) mounts.FS {
		return mounts.Intercept(f, mounts.Interceptor{Call: func(_ context.Context, c mounts.Call) (mounts.Call, error) {
			switch c.Op {
			case mounts.OpStat, mounts.OpReadDir, mounts.OpStatDir, mounts.OpOpen, mounts.OpReadLink,
				mounts.OpGetXattr, mounts.OpListXattr, mounts.OpStatFS, mounts.OpSync, mounts.OpOffer:
				return c, nil
			}
			return c, mounts.PathErr(c.Op.String(), c.Name, mounts.ErrReadOnly)
		}})
	}
	mountstest.RunWrapper(t, freeze, mountstest.Refuses(mounts.CapMutating, mounts.ErrReadOnly))
}
