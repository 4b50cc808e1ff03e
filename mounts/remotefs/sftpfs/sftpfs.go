// Package sftpfs is the remote mount where no peer can run on the other
// machine (another architecture, a home mounted noexec, no place to
// install one, no vfsmount there and installing turned off): its file
// verbs go over the ssh server's SFTP subsystem (github.com/pkg/sftp) and
// its shell over ssh exec, on one ssh connection.
//
// It is the fallback, not the way: SFTP is one request per system call,
// so a listing, a stat and a read each cost a round trip (a search runs
// grep there, over ssh exec, when the pattern holds a literal, and
// reads every file across the link when not), and there is no change
// stream, so the mount says its content changes behind its back
// (Description.External) and the kernel face keeps its caches short.
//
// # What SFTP cannot honour, it does not offer
//
// Version 3 of the protocol (what OpenSSH speaks) carries times in whole
// seconds and no inode numbers, link counts, extended attributes or
// special files. So the mount has no ChtimesFS (a time set could not be
// read back as set), no LinkFS (hard links without inode numbers or link
// counts would be names the kernel face cannot tell are one file), no
// XattrFS or SetXattrFS, no MknodFS. Attr.Ino is 0 (the kernel face
// numbers entries itself), Nlink 0, times have whole seconds. Chown of a
// symlink, which the server's setstat would follow, runs chown -h over
// ssh exec. The OpenSSH extensions are used where the server has them:
// posix-rename@openssh.com (rename that replaces; without it Rename with
// no flags is ENOTSUP, while RenameNoReplace uses the protocol's own
// rename, which never replaces), fsync@openssh.com (Sync, and Sync of a
// file) and statvfs@openssh.com (StatFS); a verb whose extension the
// server lacks fails with ENOTSUP.
// RenameExchange is ENOTSUP.
//
// # Errors
//
// SFTP v3 answers most failures with SSH_FX_FAILURE, and OpenSSH sends
// SSH_FX_NO_SUCH_FILE for ENOENT, ENOTDIR and ELOOP alike. A failed call
// is explained by looking (lstat of the names and their parents): a
// name that exists is EEXIST, a directory with entries ENOTEMPTY, a
// parent that is a file ENOTDIR, and so on. Only failures pay for that.
//
// # Confinement
//
// The SFTP server resolves every name it is given, following symlinks
// in any component, and in the last one too for open, opendir and
// setstat. The mount never hands it a name that could leave DIR:
//
//   - names are checked (mounts.CheckPath: no "..", no empty component);
//   - each operation first asks the server to resolve the name
//     (SSH_FXP_REALPATH). When the answer is the name itself, no
//     component is a symlink and the name is used. Otherwise its parent
//     is resolved on its own and must be DIR or below it (else
//     mounts.ErrEscapes, EACCES through the kernel, as a host mount
//     says), and the operation acts on the resolved parent and the last
//     component;
//   - a last component that is a symlink is served as one (Stat,
//     ReadLink, Unlink, Rename) and never followed: Open, OpenFile,
//     Truncate and ReadDir of it fail with ELOOP (ENOTDIR for ReadDir) and
//     Chmod with ENOTSUP, as on a host mount; a create through a dangling
//     symlink fails with ELOOP.
//
// What remains is a race the protocol cannot close: between the check
// and the operation (two requests), a program on the remote machine
// that swaps a directory of the path, or the last component, for a
// symlink makes that one operation act where the link points. A host
// mount holds directories open (openat) and has no such window; the peer
// has none either. (Likewise a name checked to be no directory and then
// replaced by an empty one may be removed by Unlink: pkg/sftp's remove
// tries rmdir when unlink fails.) Only programs on the remote machine
// can race it, and a shell command there runs as the same user anyway.
//
// Symlinks whose target is absolute but inside DIR are followed in the
// middle of a name (the host mount refuses every absolute one).
//
// # Faults
//
// Each operation gets Options.Timeout in all (its checks included); one
// that has no answer by then declares the connection lost and fails with
// an EIO that says so (errors.Is remotefs.ErrLinkDown). The next
// operation dials again, no more often than a backoff allows; handles
// opened on a lost connection fail with EIO.
package sftpfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
)

// Dialer opens a new ssh connection to the remote machine.
type Dialer func(ctx context.Context) (*ssh.Client, error)

// Options configure the mount.
type Options struct {
	// Dial connects; called again after the connection is lost.
	Dial Dialer
	// Dir is the served directory on the remote machine: absolute.
	Dir string
	// Source describes the mount for the mount table and the model
	// ("ssh://dev-box (SFTP)"). It never holds a secret.
	Source string
	// Why says why the mount is not served by a peer, for the brief:
	// "no peer: …", "mode=sftp".
	Why string
	// ReadOnly offers no write capability at all (EROFS).
	ReadOnly bool
	// Timeout bounds each operation, and a dial. Default 5s.
	Timeout time.Duration
	// Logger gets the connection's state changes.
	Logger *slog.Logger
}

// ReadOnlyFS is the read side; FS adds the write verbs.
type ReadOnlyFS struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	cur      *conn
	dialing  chan struct{} // closed when the dial under way ends
	lastErr  error
	nextDial time.Time
	backoff  time.Duration
	closed   bool
	wasDown  bool
}

// FS is a writable SFTP mount.
type FS struct{ *ReadOnlyFS }

var (
	_ mounts.FS         = (*ReadOnlyFS)(nil)
	_ mounts.StatDirFS  = (*ReadOnlyFS)(nil)
	_ mounts.StatFSer   = (*ReadOnlyFS)(nil)
	_ mounts.Describer  = (*ReadOnlyFS)(nil)
	_ mounts.CommandFS  = (*ReadOnlyFS)(nil)
	_ mounts.OpenFileFS = (*FS)(nil)
	_ mounts.TruncateFS = (*FS)(nil)
	_ mounts.MkdirFS    = (*FS)(nil)
	_ mounts.RemoveFS   = (*FS)(nil)
	_ mounts.RenameFS   = (*FS)(nil)
	_ mounts.SymlinkFS  = (*FS)(nil)
	_ mounts.ChmodFS    = (*FS)(nil)
	_ mounts.ChownFS    = (*FS)(nil)
	_ mounts.SyncFS     = (*FS)(nil)
)

// conn is one ssh connection and its SFTP session.
type conn struct {
	ssh  *ssh.Client
	sc   *sftp.Client
	root string // Dir as the server resolves it
	dead chan struct{}
	once sync.Once
	err  error

	posixRename, fsync, statvfs bool
}

// fail declares the connection lost and closes it.
func (c *conn) fail(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.dead)
		// The connection first: the SFTP client's Close waits for its
		// reader, which a stalled link never wakes.
		c.ssh.Close()
		go c.sc.Close()
	})
}

func (c *conn) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// lost reports whether the connection is gone, asking it when it is not
// known to be: a session that ended without an exit status is often the
// first sign (x/crypto/ssh drops the channels of a dead connection before
// its Wait returns). The question is a keepalive request, which a live
// server answers (OpenSSH: with a refusal) within timeout; a connection
// that answers nothing in that time is lost too.
func (c *conn) lost(timeout time.Duration) bool {
	if !c.alive() {
		return true
	}
	asked := make(chan error, 1)
	go func() {
		_, _, err := c.ssh.SendRequest("keepalive@openssh.com", true, nil)
		asked <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.dead:
		return true
	case err := <-asked:
		if err != nil {
			c.fail(err)
			return true
		}
		return false
	case <-t.C:
		c.fail(fmt.Errorf("no answer for %v", timeout))
		return true
	}
}

// Open connects and returns a *FS, or a *ReadOnlyFS with opts.ReadOnly.
// The first connection's failure is returned as it is: nothing is
// mounted.
func Open(ctx context.Context, opts Options) (mounts.FS, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if !path.IsAbs(opts.Dir) || path.Clean(opts.Dir) != opts.Dir {
		return nil, fmt.Errorf("sftp: the remote directory %q is not absolute and clean", opts.Dir)
	}
	f := &ReadOnlyFS{opts: opts, log: opts.Logger, backoff: 100 * time.Millisecond}
	c, err := f.connect(ctx)
	if err != nil {
		return nil, err
	}
	f.cur = c
	if opts.ReadOnly {
		return f, nil
	}
	return &FS{f}, nil
}

// connect dials and starts the SFTP session, bounded by ctx.
func (f *ReadOnlyFS) connect(ctx context.Context) (*conn, error) {
	type result struct {
		c   *conn
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := f.connectNow(ctx)
		got <- result{c, err}
	}()
	select {
	case r := <-got:
		return r.c, r.err
	case <-ctx.Done():
		go func() { // the dial ends later: drop what it made
			if r := <-got; r.c != nil {
				r.c.fail(errors.New("dialled too late"))
			}
		}()
		return nil, ctx.Err()
	}
}

func (f *ReadOnlyFS) connectNow(ctx context.Context) (*conn, error) {
	sshc, err := f.opts.Dial(ctx)
	if err != nil {
		return nil, err
	}
	sc, err := sftp.NewClient(sshc, sftp.UseConcurrentWrites(true), sftp.UseFstat(true))
	if err != nil {
		sshc.Close()
		return nil, fmt.Errorf("the ssh server has no sftp subsystem: %w", err)
	}
	c := &conn{ssh: sshc, sc: sc, dead: make(chan struct{})}
	root, err := sc.RealPath(f.opts.Dir)
	if err == nil {
		var fi os.FileInfo
		if fi, err = sc.Stat(root); err == nil && !fi.IsDir() {
			err = syscall.ENOTDIR
		}
	}
	if err != nil {
		sshc.Close()
		go sc.Close()
		return nil, fmt.Errorf("the remote directory %s: %w", f.opts.Dir, plainErr(err))
	}
	c.root = root
	has := func(name string) bool { _, ok := sc.HasExtension(name); return ok }
	c.posixRename = has("posix-rename@openssh.com")
	c.fsync = has("fsync@openssh.com")
	c.statvfs = has("statvfs@openssh.com")
	go func() {
		err := sshc.Wait()
		if err == nil {
			err = errors.New("the ssh connection closed")
		}
		c.fail(err)
	}()
	go func() {
		err := sc.Wait()
		if err == nil {
			err = errors.New("the sftp session ended")
		}
		c.fail(err)
	}()
	return c, nil
}

// Close closes the connection; operations after it fail.
func (f *ReadOnlyFS) Close() error {
	f.mu.Lock()
	f.closed = true
	c := f.cur
	f.cur = nil
	f.mu.Unlock()
	if c != nil {
		c.fail(errors.New("the mount is closed"))
	}
	return nil
}

// linkError is an operation's failure because the connection is down
// or was lost: EIO, and remotefs.ErrLinkDown.
type linkError struct {
	what  string
	cause error
}

func (e *linkError) Error() string {
	if e.cause == nil {
		return e.what
	}
	return e.what + ": " + e.cause.Error()
}

func (e *linkError) Unwrap() []error {
	return []error{remotefs.ErrLinkDown, syscall.EIO, e.cause}
}

// conn returns the live connection, dialling one (once at a time, no
// sooner than the backoff allows) and waiting up to Timeout for it.
func (f *ReadOnlyFS) conn(ctx context.Context) (*conn, error) {
	t := time.NewTimer(f.opts.Timeout)
	defer t.Stop()
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, &linkError{what: "the remote mount " + f.opts.Source + " is closed"}
		}
		if c := f.cur; c != nil {
			if c.alive() {
				f.mu.Unlock()
				return c, nil
			}
			f.cur = nil
			f.lastErr = c.err
			f.wasDown = true
			f.log.Warn("remote: link lost", "source", f.opts.Source, "mode", "sftp", "err", c.err)
		}
		if f.dialing == nil {
			if time.Now().Before(f.nextDial) {
				err := f.lastErr
				f.mu.Unlock()
				return nil, &linkError{what: "the link to " + f.opts.Source + " is down", cause: err}
			}
			f.dialing = make(chan struct{})
			go f.redial(f.dialing)
		}
		ch := f.dialing
		f.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			f.mu.Lock()
			err := f.lastErr
			f.mu.Unlock()
			return nil, &linkError{what: "the link to " + f.opts.Source + " is down", cause: err}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// redial dials once and records the outcome.
func (f *ReadOnlyFS) redial(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*f.opts.Timeout)
	c, err := f.connect(ctx)
	cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	defer close(done)
	f.dialing = nil
	if err != nil {
		f.lastErr = err
		f.nextDial = time.Now().Add(f.backoff)
		f.log.Debug("remote: dial failed", "source", f.opts.Source, "mode", "sftp", "err", err, "retry", f.backoff)
		f.backoff = min(2*f.backoff, 5*time.Second)
		return
	}
	if f.closed {
		c.fail(errors.New("the mount is closed"))
		return
	}
	f.cur = c
	f.backoff = 100 * time.Millisecond
	if f.wasDown {
		f.log.Info("remote: link up again", "source", f.opts.Source, "mode", "sftp")
	}
}

// do runs fn on the live connection within Timeout. An fn that has no
// answer by then declares the connection lost. The error is a
// *fs.PathError naming name. fn may still run after do returned an
// error: what it writes is read only after a nil error.
func (f *ReadOnlyFS) do(ctx context.Context, op, name string, fn func(c *conn) error) error {
	c, err := f.conn(ctx)
	if err != nil {
		return mounts.PathErr(op, name, err)
	}
	return f.on(ctx, c, op, name, fn)
}

// on is do on a given connection (the one a handle belongs to).
func (f *ReadOnlyFS) on(ctx context.Context, c *conn, op, name string, fn func(c *conn) error) error {
	if !c.alive() {
		return mounts.PathErr(op, name, &linkError{what: "the link to " + f.opts.Source + " was lost", cause: c.err})
	}
	done := make(chan error, 1)
	go func() { done <- fn(c) }()
	t := time.NewTimer(f.opts.Timeout)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		c.fail(fmt.Errorf("no answer for %v", f.opts.Timeout))
		err = &linkError{what: "the link to " + f.opts.Source + " was lost", cause: c.err}
	case <-ctx.Done():
		return mounts.PathErr(op, name, ctx.Err())
	}
	if err == nil {
		return nil
	}
	var nm *named
	if errors.As(err, &nm) {
		return mounts.PathErr(op, nm.name, f.errno(c, nm.err))
	}
	return mounts.PathErr(op, name, f.errno(c, err))
}

// named is an error of an operation on two names that concerns the
// second one.
type named struct {
	name string
	err  error
}

func (e *named) Error() string { return e.name + ": " + e.err.Error() }
func (e *named) Unwrap() error { return e.err }

// at says err concerns name.
func at(name string, err error) error { return &named{name, err} }

// errno turns what the SFTP client returned into the contract's errors.
func (f *ReadOnlyFS) errno(c *conn, err error) error {
	var le *linkError
	if errors.As(err, &le) {
		return err
	}
	err = plainErr(err)
	var se *sftp.StatusError
	switch {
	case errors.As(err, &se):
		switch se.FxCode() {
		case sftp.ErrSSHFxNoSuchFile:
			return fs.ErrNotExist
		case sftp.ErrSSHFxPermissionDenied:
			return fs.ErrPermission
		case sftp.ErrSSHFxOpUnsupported:
			return mounts.ErrNotSupported
		case sftp.ErrSSHFxBadMessage:
			return fs.ErrInvalid
		case sftp.ErrSSHFxNoConnection, sftp.ErrSSHFxConnectionLost:
		default:
			return fmt.Errorf("%w (%v)", syscall.EIO, err)
		}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrExist):
		return err
	case errors.As(err, new(syscall.Errno)):
		return err
	}
	for _, known := range []error{fs.ErrClosed, fs.ErrInvalid, mounts.ErrEscapes} {
		if errors.Is(err, known) {
			return err
		}
	}
	// The connection's: an SFTP session that ended, a closed channel.
	if c.alive() && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || se != nil || errors.As(err, new(net.Error))) {
		c.fail(err)
	}
	if !c.alive() {
		return &linkError{what: "the link to " + f.opts.Source + " was lost", cause: err}
	}
	return fmt.Errorf("%w (%v)", syscall.EIO, err)
}

// plainErr strips the *os.PathError pkg/sftp wraps some errors in (it
// names remote paths) and maps the statuses it already maps.
func plainErr(err error) error {
	var pe *os.PathError
	for errors.As(err, &pe) {
		err = pe.Err
	}
	return err
}

// statusOf is the SFTP status err carries, or nil.
func statusOf(err error) *sftp.StatusError {
	var se *sftp.StatusError
	if errors.As(plainErr(err), &se) {
		return se
	}
	return nil
}

// answered reports whether err is the server's answer (a status), not
// the connection's failure.
func answered(err error) bool {
	return statusOf(err) != nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)
}

// notFound reports whether err is SSH_FX_NO_SUCH_FILE (which OpenSSH
// also sends for ENOTDIR and ELOOP).
func notFound(err error) bool {
	if se := statusOf(err); se != nil {
		return se.FxCode() == sftp.ErrSSHFxNoSuchFile
	}
	return errors.Is(err, fs.ErrNotExist)
}

// failure reports whether err is the catch-all SSH_FX_FAILURE.
func failure(err error) bool {
	se := statusOf(err)
	return se != nil && se.FxCode() == sftp.ErrSSHFxFailure
}

// Describe implements mounts.Describer: no change stream, so the content
// is External (the kernel face keeps its caches short).
func (f *ReadOnlyFS) Describe() mounts.Description {
	return mounts.Description{Type: "remote", Source: f.opts.Source, External: true}
}

// Mode says how the mount is served: "sftp".
func (f *ReadOnlyFS) Mode() string { return "sftp" }

// BriefNote is what the tool face's brief says of the mount, after
// its workspace path ("/workspace is …").
func (f *ReadOnlyFS) BriefNote() string {
	why := ""
	if f.opts.Why != "" {
		why = " (" + f.opts.Why + ")"
	}
	return "served over SFTP, not by a vfsmount peer" + why + ": each stat, listing and read is a round trip, " +
		"so walks of big trees, and greps for a pattern without a literal, are slower; " +
		"a command run there sees these files at their own path on that machine"
}

// lexical is name's path on the server, without resolving anything.
func (c *conn) lexical(name string) string {
	if name == "." {
		return c.root
	}
	if c.root == "/" {
		return "/" + name
	}
	return c.root + "/" + name
}

// within reports whether p (resolved) is the root or below it.
func (c *conn) within(p string) bool {
	return c.root == "/" || p == c.root || strings.HasPrefix(p, c.root+"/")
}

// where is a name resolved for an operation: the path to hand the
// server, whose parent holds no symlink and lies within the root.
type where struct {
	abs    string
	parent string // abs's parent, resolved
	base   string
	exact  bool // abs is the name as it is, with no symlink anywhere
}

// resolve checks name for an operation on its last component, which is
// not followed (see the package doc).
func (c *conn) resolve(name string) (where, error) {
	lex := c.lexical(name)
	if name == "." {
		return where{abs: lex, parent: lex, base: ".", exact: true}, nil
	}
	dir, base := mounts.Split(name)
	r, err := c.sc.RealPath(lex)
	if err == nil && r == lex {
		return where{abs: lex, parent: c.lexical(dir), base: base, exact: true}, nil
	}
	if err != nil && !answered(err) {
		return where{}, err // the connection's
	}
	p, err := c.resolveDir(dir)
	if err != nil {
		return where{}, err
	}
	return where{abs: path.Join(p, base), parent: p, base: base}, nil
}

// resolveDir resolves a directory name, following its symlinks while
// they stay within the root.
func (c *conn) resolveDir(dir string) (string, error) {
	lex := c.lexical(dir)
	if dir == "." {
		return lex, nil
	}
	r, err := c.sc.RealPath(lex)
	if err != nil {
		if !answered(err) {
			return "", err
		}
		return "", c.walk(dir, err)
	}
	if !c.within(r) {
		return "", mounts.ErrEscapes
	}
	return r, nil
}

// walk explains why dir does not resolve: a missing component
// (ENOENT), one that is not a directory (ENOTDIR), a symlink leaving the
// root (ErrEscapes). It looks one component at a time; only failures
// pay for it.
func (c *conn) walk(dir string, cause error) error {
	cur := c.root
	for _, comp := range strings.Split(dir, "/") {
		p := path.Join(cur, comp)
		fi, err := c.sc.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			r, err := c.sc.RealPath(p)
			if err != nil {
				return fs.ErrNotExist // dangling, or a loop
			}
			if !c.within(r) {
				return mounts.ErrEscapes
			}
			if fi, err = c.sc.Stat(r); err != nil {
				return err
			}
			p = r
		}
		if !fi.IsDir() {
			return mounts.ErrNotDir
		}
		cur = p
	}
	return cause
}

// explain turns a failure of an operation on w's last component that
// SFTP does not spell out into its errno: a parent that is not a
// directory (ENOTDIR) or missing (ENOENT). Otherwise it returns err.
func (c *conn) explainParent(w where, err error) error {
	fi, serr := c.sc.Stat(w.parent)
	switch {
	case serr != nil:
		return serr
	case !fi.IsDir():
		return mounts.ErrNotDir
	}
	return err
}

// attr converts what the server said.
func attr(fi os.FileInfo) mounts.Attr {
	a := mounts.Attr{Mode: fi.Mode(), Size: fi.Size(), Mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*sftp.FileStat); ok {
		a.Mode = mounts.FileModeOf(st.Mode)
		a.Uid, a.Gid = st.UID, st.GID
		a.Mtime = time.Unix(int64(st.Mtime), 0)
		a.Atime = time.Unix(int64(st.Atime), 0)
	}
	return a
}

// lstat is Stat on a resolved name.
func (c *conn) lstat(w where) (mounts.Attr, error) {
	fi, err := c.sc.Lstat(w.abs)
	if err != nil {
		if notFound(err) {
			return mounts.Attr{}, c.explainParent(w, fs.ErrNotExist)
		}
		return mounts.Attr{}, err
	}
	return attr(fi), nil
}

// resolveStat is resolve and an lstat of the last component, sent
// together: when the name has no symlink (the common case) both answer
// in one round trip.
func (c *conn) resolveStat(name string) (where, mounts.Attr, error) {
	lex := c.lexical(name)
	type st struct {
		fi  os.FileInfo
		err error
	}
	ch := make(chan st, 1)
	go func() {
		fi, err := c.sc.Lstat(lex)
		ch <- st{fi, err}
	}()
	w, err := c.resolve(name)
	s := <-ch
	if err != nil {
		return where{}, mounts.Attr{}, err
	}
	if w.exact && s.err == nil {
		return w, attr(s.fi), nil
	}
	a, err := c.lstat(w)
	return w, a, err
}

// Stat implements mounts.FS.
func (f *ReadOnlyFS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	if err := mounts.CheckPath("stat", name); err != nil {
		return mounts.Attr{}, err
	}
	var a mounts.Attr
	err := f.do(ctx, "stat", name, func(c *conn) (err error) {
		_, a, err = c.resolveStat(name)
		return err
	})
	if err != nil {
		return mounts.Attr{}, err // a timed-out call may still write a
	}
	return a, nil
}

// dirOf resolves name as a directory to list: its last component is not
// followed.
func (c *conn) dirOf(name string) (string, error) {
	w, a, err := c.resolveStat(name)
	if err != nil {
		return "", err
	}
	if !a.IsDir() {
		return "", mounts.ErrNotDir
	}
	return w.abs, nil
}

// StatDir implements mounts.StatDirFS: the SFTP listing carries each
// entry's attributes.
func (f *ReadOnlyFS) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	if err := mounts.CheckPath("readdir", name); err != nil {
		return nil, nil, err
	}
	var fis []os.FileInfo
	err := f.do(ctx, "readdir", name, func(c *conn) error {
		abs, err := c.dirOf(name)
		if err != nil {
			return err
		}
		fis, err = c.sc.ReadDir(abs)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(fis, func(a, b os.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	ents := make([]mounts.DirEntry, 0, len(fis))
	attrs := make([]mounts.Attr, 0, len(fis))
	for _, fi := range fis {
		if fi.Name() == "." || fi.Name() == ".." {
			continue
		}
		a := attr(fi)
		ents = append(ents, mounts.DirEntry{Name: fi.Name(), Type: a.Mode.Type()})
		attrs = append(attrs, a)
	}
	return ents, attrs, nil
}

// ReadDir implements mounts.FS.
func (f *ReadOnlyFS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	ents, _, err := f.StatDir(ctx, name)
	return ents, err
}

// ReadLink implements mounts.FS.
func (f *ReadOnlyFS) ReadLink(ctx context.Context, name string) (string, error) {
	if err := mounts.CheckPath("readlink", name); err != nil {
		return "", err
	}
	var target string
	err := f.do(ctx, "readlink", name, func(c *conn) error {
		w, a, err := c.resolveStat(name)
		if err != nil {
			return err
		}
		if a.Mode.Type() != fs.ModeSymlink {
			return fs.ErrInvalid
		}
		target, err = c.sc.ReadLink(w.abs)
		return err
	})
	if err != nil {
		return "", err
	}
	return target, nil
}

// StatFS implements mounts.StatFSer, with statvfs@openssh.com.
func (f *ReadOnlyFS) StatFS(ctx context.Context) (mounts.FSStat, error) {
	var st mounts.FSStat
	err := f.do(ctx, "statfs", ".", func(c *conn) error {
		if !c.statvfs {
			return mounts.ErrNotSupported
		}
		v, err := c.sc.StatVFS(c.root)
		if err != nil {
			return err
		}
		bs := v.Frsize
		if bs == 0 {
			bs = v.Bsize
		}
		st = mounts.FSStat{Bsize: uint32(bs), Blocks: v.Blocks, Bfree: v.Bfree, Bavail: v.Bavail,
			Files: v.Files, Ffree: v.Ffree, NameLen: uint32(v.Namemax)}
		return nil
	})
	if err != nil {
		return mounts.FSStat{}, err
	}
	return st, nil
}
