package peer_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// client drives a peer's protocol directly, as a daemon that is wrong or
// compromised could: any request, any name.
type client struct {
	t     *testing.T
	conn  net.Conn
	codec *wire.Codec
	next  uint64
}

func startPeer(t *testing.T, dir string) *client {
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = peer.Serve(context.Background(), b, b, host, peer.Options{Dir: dir, Build: "test", Shell: peer.HostShell{Dir: dir}})
		b.Close()
	}()
	t.Cleanup(func() {
		a.Close()
		<-done
		host.(*hostfs.FS).Close()
	})
	// Our hello goes out while the peer's is read (a pipe has no
	// buffer), and is all out before the first request: a request sent
	// first would be read as the hello.
	wrote := make(chan error, 1)
	go func() {
		_, err := a.Write([]byte(wire.Hello("test")))
		wrote <- err
	}()
	_, err = wire.ReadHello(a)
	require.NoError(t, err)
	require.NoError(t, <-wrote)
	return &client{t: t, conn: a, codec: wire.NewCodec(a, a)}
}

// call sends req and returns its answer, skipping events.
func (c *client) call(req wire.Request) *wire.Response {
	c.next++
	req.ID = c.next
	if req.Op == wire.OpOpen && req.Handle == 0 {
		req.Handle = 1000 + c.next // the daemon names what it opens
	}
	require.NoError(c.t, c.codec.Send(&req), "send")
	for {
		var resp wire.Response
		require.NoError(c.t, c.codec.Recv(&resp), "recv")
		if resp.ID == req.ID {
			return &resp
		}
	}
}

// The peer never serves outside its directory, whatever it is asked:
// names that climb, symlinks that lead out (to read, write, create,
// rename, link or search through), commands started outside.
func TestPeerConfinesEveryRequest(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	dir := filepath.Join(root, "served")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("TOP SECRET"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mine"), []byte("mine"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out")))
	require.NoError(t, os.Symlink("../outside/secret", filepath.Join(dir, "rel")))
	c := startPeer(t, dir)

	refused := func(resp *wire.Response, what string) {
		t.Helper()
		require.NotNil(t, resp.Err, "%s was served", what)
		assert.Contains(t, []syscall.Errno{syscall.EACCES, syscall.EINVAL, syscall.ELOOP, syscall.ENOTDIR, syscall.EXDEV, syscall.EOPNOTSUPP},
			errnoOf(resp.Err), "%s: %+v", what, resp.Err)
		assert.NotContains(t, string(resp.Data), "TOP SECRET", what)
		for _, m := range resp.Matches {
			assert.NotContains(t, m.Text, "TOP SECRET", what)
		}
	}
	for _, req := range []wire.Request{
		{Op: wire.OpStat, Name: "../outside/secret"},
		{Op: wire.OpStat, Name: "/etc/passwd"},
		{Op: wire.OpStat, Name: "out/secret"},
		{Op: wire.OpStatDir, Name: "out"},
		{Op: wire.OpOpen, Name: "out/secret"},
		{Op: wire.OpOpen, Name: "rel"},
		{Op: wire.OpOpen, Name: "out/new", Flag: os.O_CREATE | os.O_WRONLY, Mode: 0o644},
		{Op: wire.OpTruncate, Name: "out/secret", Size: 0},
		{Op: wire.OpUnlink, Name: "out/secret"},
		{Op: wire.OpMkdir, Name: "out/d", Mode: 0o755},
		{Op: wire.OpRename, Name: "mine", Name2: "out/mine"},
		{Op: wire.OpRename, Name: "out/secret", Name2: "stolen"},
		{Op: wire.OpLink, Name: "out/secret", Name2: "stolen"},
		{Op: wire.OpLink, Name: "mine", Name2: "out/linked"},
		{Op: wire.OpSymlink, Target: "x", Name: "out/sym"},
		{Op: wire.OpChmod, Name: "out/secret", Mode: 0o777},
		{Op: wire.OpChmod, Name: "rel", Mode: 0o777},
		{Op: wire.OpSetXattr, Name: "out/secret", Xattr: "user.x", Data: []byte("1")},
		{Op: wire.OpGrep, Name: "out", Grep: &wire.Grep{Dir: "out", Pattern: "SECRET"}},
		{Op: wire.OpGrep, Name: "..", Grep: &wire.Grep{Dir: "..", Pattern: "SECRET"}},
		{Op: wire.OpExec, ExecID: 1, Name: "..", Exec: &wire.Exec{Argv: []string{"cat", "../outside/secret"}, Dir: ".."}},
	} {
		refused(c.call(req), req.Op.String()+" "+req.Name)
	}
	// A search from the root does not follow the link out.
	resp := c.call(wire.Request{Op: wire.OpGrep, Name: ".", Grep: &wire.Grep{Dir: ".", Pattern: "SECRET|mine"}})
	require.Nil(t, resp.Err)
	for _, m := range resp.Matches {
		assert.NotContains(t, m.Text, "SECRET")
		assert.False(t, strings.HasPrefix(m.Name, "out"), m.Name)
	}
	// Nothing outside changed.
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	b, err := os.ReadFile(filepath.Join(outside, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "TOP SECRET", string(b))
	st, err := os.Stat(filepath.Join(outside, "secret"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
}

func errnoOf(e *wire.Error) syscall.Errno {
	switch e.Sentinel {
	case wire.SentinelEscapes, wire.SentinelDenied:
		return syscall.EACCES
	case wire.SentinelInvalid:
		return syscall.EINVAL
	case wire.SentinelNone:
		return e.Errno
	}
	return 0
}

// The change stream's answer carries the root's attributes and listing,
// taken once the stream is up: what a new mount asks first.
func TestPeerWatchAnswersTheRoot(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("abc"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	c := startPeer(t, dir)
	resp := c.call(wire.Request{Op: wire.OpWatch})
	require.Nil(t, resp.Err)
	assert.True(t, resp.Attr.Mode.IsDir(), "the root's attributes")
	require.Len(t, resp.Tree, 1)
	assert.Equal(t, ".", resp.Tree[0].Name)
	var names []string
	for _, e := range resp.Tree[0].Entries {
		names = append(names, e.Name)
		if e.Name == "a.txt" {
			assert.Equal(t, int64(3), e.Attr.Size)
		}
	}
	assert.ElementsMatch(t, []string{"a.txt", "sub"}, names)
}

// The peer places its watches when it starts, before the daemon asks
// for the change stream (a round trip later, over ssh): a change made in
// between, deep in the tree, is reported once the stream is asked for.
func TestPeerWatchesPlacedAheadReportWhatCameBetween(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub/deeper"), 0o755))
	placed := make(chan struct{}, 1)
	defer peer.OnWatchesPlaced(func() { placed <- struct{}{} })()
	c := startPeer(t, dir)
	<-placed
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub/deeper/new.txt"), []byte("x"), 0o644))
	c.next++
	require.NoError(t, c.codec.Send(&wire.Request{ID: c.next, Op: wire.OpWatch}))
	// Bounded, so that a report that never comes fails rather than hangs.
	require.NoError(t, c.conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	watchID, answered := c.next, false
	for seen := false; !seen || !answered; {
		var resp wire.Response
		require.NoError(t, c.codec.Recv(&resp))
		for _, ev := range resp.Events {
			seen = seen || ev.Kind == wire.EventChanged && ev.Name == "sub/deeper/new.txt"
		}
		if resp.ID == watchID {
			require.Nil(t, resp.Err)
			answered = true
		}
	}
}

// The watches' walk lists directories by the types getdents gives: every
// directory, over several reads of a long listing, and nothing else (a
// file, a symlink to a directory).
func TestSubdirsListsDirectoriesOnly(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 600 {
		name := fmt.Sprintf("%s-%04d", strings.Repeat("n", 40), i)
		if i%3 == 0 {
			require.NoError(t, os.Mkdir(filepath.Join(dir, name), 0o755))
			want = append(want, name)
		} else {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
		}
	}
	require.NoError(t, os.Symlink(".", filepath.Join(dir, "link")))
	got := peer.Subdirs(dir)
	assert.ElementsMatch(t, want, got)
	assert.Nil(t, peer.Subdirs(filepath.Join(dir, "link")), "a symlink is not followed")
}

// send sends requests without waiting, as a daemon that posts changes
// does, and returns their answers by ID once all came (events skipped).
func (c *client) send(reqs ...wire.Request) map[uint64]*wire.Response {
	ids := map[uint64]bool{}
	for i := range reqs {
		c.next++
		reqs[i].ID = c.next
		ids[c.next] = true
	}
	go func() { // a pipe: sent while the answers are read
		for i := range reqs {
			_ = c.codec.Send(&reqs[i])
		}
	}()
	out := map[uint64]*wire.Response{}
	for len(out) < len(reqs) {
		var resp wire.Response
		require.NoError(c.t, c.codec.Recv(&resp), "recv")
		if ids[resp.ID] {
			out[resp.ID] = &resp
		}
	}
	return out
}

// Changes sent without waiting are applied in the order sent: a file
// named by the daemon is created, written through before its open was
// answered, closed and renamed; a directory made, then a file in it.
// Applied at once, beside one another (protocol 5), writes would meet a
// handle not yet opened and renames a file not yet made.
func TestPeerAppliesChangesInOrder(t *testing.T) {
	dir := t.TempDir()
	c := startPeer(t, dir)
	var reqs []wire.Request
	for i := range 40 {
		h := uint64(100 + i)
		name := filepath.Join("d", string(rune('a'+i%26))+strings.Repeat("x", i/26))
		if i == 0 {
			reqs = append(reqs, wire.Request{Op: wire.OpMkdir, Name: "d", Mode: 0o755})
		}
		reqs = append(reqs,
			wire.Request{Op: wire.OpOpen, Name: name, Flag: os.O_WRONLY | os.O_CREATE | os.O_EXCL, Mode: 0o644, Handle: h},
			wire.Request{Op: wire.OpWrite, Handle: h, Name: name, Data: []byte("content " + name)},
			wire.Request{Op: wire.OpClose, Handle: h, Name: name},
			wire.Request{Op: wire.OpRename, Name: name, Name2: name + ".done"},
		)
	}
	for id, resp := range c.send(reqs...) {
		require.Nil(t, resp.Err, "request %d: %+v", id, resp.Err)
	}
	for i := range 40 {
		name := filepath.Join("d", string(rune('a'+i%26))+strings.Repeat("x", i/26))
		b, err := os.ReadFile(filepath.Join(dir, name+".done"))
		require.NoError(t, err)
		assert.Equal(t, "content "+name, string(b))
	}
}

// The daemon names what it opens: a handle already in use, or none, is
// refused; and a change's answer says what its names are after it.
func TestPeerHandlesAndStatesAfter(t *testing.T) {
	dir := t.TempDir()
	c := startPeer(t, dir)
	resp := c.call(wire.Request{Op: wire.OpOpen, Name: "a", Flag: os.O_WRONLY | os.O_CREATE, Mode: 0o600, Handle: 7})
	require.Nil(t, resp.Err)
	assert.Equal(t, uint64(7), resp.Handle)
	require.Len(t, resp.After, 2, "the name and its directory")
	assert.Equal(t, "a", resp.After[0].Name)
	assert.Equal(t, wire.StateExists, resp.After[0].State)
	assert.Equal(t, os.FileMode(0o600), resp.After[0].Attr.Mode.Perm())
	assert.Equal(t, ".", resp.After[1].Name)
	assert.True(t, resp.After[1].Attr.Mode.IsDir())

	resp = c.call(wire.Request{Op: wire.OpOpen, Name: "b", Flag: os.O_WRONLY | os.O_CREATE, Mode: 0o600, Handle: 7})
	require.NotNil(t, resp.Err, "a handle in use")
	assert.Equal(t, syscall.EINVAL, resp.Err.Errno)
	_, err := os.Stat(filepath.Join(dir, "b"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing opened for it")

	resp = c.call(wire.Request{Op: wire.OpUnlink, Name: "a"})
	require.Nil(t, resp.Err)
	require.NotEmpty(t, resp.After)
	assert.Equal(t, wire.StateMissing, resp.After[0].State, "gone, as the answer says")
}

// A create the daemon answered before it was made (Posted) that fails,
// because another program on the remote machine had just made the name:
// the changes of the name the daemon sent before it read the failure
// (its rename of "its" lock file) are refused, so the other's file is
// neither moved nor removed; those sent after it (Seen) are applied.
func TestPeerRefusesChangesAfterAFailedPostedCreate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.lock"), []byte("the other's"), 0o644))
	c := startPeer(t, dir)
	resps := c.send(
		wire.Request{Op: wire.OpOpen, Name: "index.lock", Flag: os.O_WRONLY | os.O_CREATE | os.O_EXCL, Mode: 0o644, Handle: 9, Posted: true},
		wire.Request{Op: wire.OpWrite, Handle: 9, Name: "index.lock", Data: []byte("mine")},
		wire.Request{Op: wire.OpClose, Handle: 9, Name: "index.lock"},
		wire.Request{Op: wire.OpRename, Name: "index.lock", Name2: "index"},
		wire.Request{Op: wire.OpUnlink, Name: "index.lock"},
	)
	for _, r := range resps {
		require.NotNil(t, r.Err, "every request failed")
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.lock"))
	require.NoError(t, err)
	assert.Equal(t, "the other's", string(b), "the other program's file, untouched")
	_, err = os.Stat(filepath.Join(dir, "index"))
	assert.ErrorIs(t, err, os.ErrNotExist, "not renamed into place")

	// Once the daemon has read the failure, its changes are its own.
	resp := c.call(wire.Request{Op: wire.OpRename, Name: "index.lock", Name2: "index", Seen: 1})
	require.Nil(t, resp.Err)
	_, err = os.Stat(filepath.Join(dir, "index"))
	assert.NoError(t, err)
}
