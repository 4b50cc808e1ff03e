package fusefs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsmount/vfsmount/mounts"
)

// Options configure a mount.
type Options struct {
	// Logger receives panics, unmapped errors and, at debug level, the
	// request trace. nil is silent.
	Logger *slog.Logger
	// Debug turns on go-fuse's request tracing (to Logger at debug level,
	// or to the standard logger when Logger is nil).
	Debug bool
	// AllowOther lets users other than the mounting one in (the kernel
	// still checks modes, see "# Permissions").
	AllowOther bool
	// ReadOnly mounts with MS_RDONLY (dry-run and read-only workspaces):
	// the kernel refuses every change with EROFS before asking.
	ReadOnly bool
	// FSName is the source shown in /proc/mounts; "vfsmount" when empty.
	FSName string
	// Passthrough lets the kernel read and write host files itself (FUSE
	// passthrough) when it can; see "# Passthrough" in the package doc.
	// Where the kernel refuses (not root, a kernel before 6.9) the mount
	// falls back to serving every read and write, and says so in the log.
	Passthrough bool
	// StackConnections serves each immutable mount of fsys's mount table
	// (a git commit, [mounts.Description.Immutable], with no other mount
	// below it) and each copy-on-write one
	// ([mounts.Description.CopyOnWrite], a writable git mount, with no
	// other mount below it) on a FUSE connection of its own, stacked on
	// top of the directory the main connection shows at its name, where
	// the kernel opens and closes files without asking; a single
	// immutable mount (no table), or a table of immutable mounts only,
	// is served that way on the main connection. See "# Connections" in
	// the package doc. A root that cannot be mounted is served through
	// the main connection like the rest, with a log line saying why.
	StackConnections bool
	// Counts, when set, counts every request each connection of the
	// mount receives, by opcode (see [RequestCounts]): a bench's and a
	// test's view of the round trips a workload costs.
	Counts *RequestCounts
}

// Cache lifetimes (see "# Caching" in the package doc).
const (
	immutableTimeout = time.Hour
	// internalTimeout bounds staleness should an invalidation ever be
	// missed; every change the library makes is invalidated explicitly.
	internalTimeout = 30 * time.Second
	externalTimeout = time.Second
)

// maxWrite is the largest WRITE request the kernel sends (go-fuse's cap).
const maxWrite = 1 << 20

// Server is a mounted file system.
type Server struct {
	srv        *fuse.Server
	mountpoint string
	conn       *conn
	// subs are the connections stacked on this one
	// ([Options.StackConnections]).
	subs []*Server
	// gated is the main connection's request layer (see "# Readiness"
	// in the package doc); nil on a stacked connection.
	gated *gated
}

// conn is the state shared by every node of one connection.
type conn struct {
	fsys mounts.FS
	// kind is what the connection serves, and how its strategy, set
	// together once by newConn (see "# Connections" in the package
	// doc).
	kind connKind
	how  strategy
	// prefix is the fsys-relative name of the connection's root: "."
	// for the main connection, the root's name for a stacked one.
	// parentIno is then the inode number of the root's parent, for its
	// ".." entry.
	prefix    string
	parentIno uint64
	// readers is the file cache of an openless connection, nil on the
	// others.
	readers *readerCache
	// pages is the page store every openless connection shares (the
	// main connection's too, which stops it), nil until every
	// connection is mounted, and when none is openless.
	pages atomic.Pointer[pageStore]
	log   *slog.Logger
	errs  errLog
	root  *node
	// rootNegs are the misses the kernel caches at root.
	rootNegs rootNegatives
	// passthrough is set when Options.Passthrough asked for it and the
	// kernel accepted a backing file at mount. It is set after the
	// handshake, when requests may already be served, hence atomic;
	// opens before it is set are plain ones.
	passthrough atomic.Bool
}

// Mount serves fsys at mountpoint (DirectMount, falling back to fusermount)
// and returns once every connection is mounted: the main one and those
// stacked on it ([Options.StackConnections]). Until then no other process
// gets an answer through the main connection (see "# Readiness" in the
// package doc), so whoever sees the mount answer sees it whole.
func Mount(mountpoint string, fsys mounts.FS, opts Options) (*Server, error) {
	return mount(mountpoint, fsys, opts, seams{})
}

// within reports whether name is dir or below it.
func within(name, dir string) bool {
	return name == dir || strings.HasPrefix(name, dir+"/")
}

// mountCtx is the context of the requests a mount makes of itself.
func mountCtx() context.Context {
	return mounts.WithCaller(context.Background(), mounts.Caller{
		Uid: uint32(syscall.Geteuid()), Gid: uint32(syscall.Getegid()),
		Pid: uint32(syscall.Getpid()), Face: mounts.FaceKernel})
}

// mountConn mounts one connection serving c. The main connection has a
// gate, whose requests pass it (see "# Readiness" in the package doc).
func mountConn(mountpoint string, c *conn, opts Options, g *gate, sm seams) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c.log, c.errs = logger, errLog{log: logger}
	c.root = &node{conn: c}
	fsys := c.fsys

	ra, err := fsys.Stat(mountCtx(), c.prefix)
	if err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: stat root: %w", mountpoint, err)
	}
	if !ra.IsDir() {
		return nil, fmt.Errorf("fusefs: mount %s: the root of the file system is not a directory", mountpoint)
	}
	c.root.cache = c.how.policy(c, c.prefix)
	if c.how.readOnly {
		opts.ReadOnly = true
	}

	fsName := opts.FSName
	if fsName == "" {
		fsName = "vfsmount"
	}
	mo := fuse.MountOptions{
		DirectMount:       true,
		FsName:            fsName,
		Name:              "vfsmount",
		AllowOther:        opts.AllowOther,
		Debug:             opts.Debug,
		MaxWrite:          maxWrite,
		ExtraCapabilities: fuse.CAP_HANDLE_KILLPRIV_V2,
		// See "# Permissions" in the package doc.
		Options: []string{"default_permissions"},
		PanicHandler: func(p any) fuse.Status {
			logger.Error("fusefs: panic in go-fuse", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			return fuse.EIO
		},
	}
	if opts.ReadOnly {
		// "ro" for the fusermount fallback; the flag for DirectMount,
		// which would otherwise pass only nosuid,nodev.
		mo.Options = append(mo.Options, "ro")
		mo.DirectMountFlags = syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_RDONLY
	}
	if opts.Passthrough {
		// A backing file may live on a stacked file system (an
		// overlayfs /var in a container); with go-fuse's depth of 1
		// registering it fails with ELOOP and go-fuse turns
		// passthrough off for the whole mount. The price: this mount
		// cannot itself be a layer of an overlayfs.
		mo.MaxStackDepth = 2
	}
	if opts.Logger != nil {
		mo.Logger = slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug)
	}
	fo := &fs.Options{
		MountOptions: mo,
		// Mounts report real permissions, 0000 included (open(2) with
		// mode 0, chmod 0): go-fuse would otherwise show 0644 for it.
		NullPermissions: true,
		// Timeouts are set per node (conn.policy), those of failed
		// lookups too (negEntries): go-fuse's NegativeTimeout, which
		// is mount-wide, stays nil.
	}
	if opts.Logger != nil {
		fo.Logger = slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn)
	}
	if ra.Ino != 0 {
		// The root keeps the mount's number, so no entry below can
		// collide with it.
		fo.RootStableAttr = &fs.StableAttr{Ino: ra.Ino, Gen: 1}
	}
	raw := fs.NewNodeFS(c.root, fo)
	// Below the gate, which zeroes the timeouts of a miss as of any
	// entry while it is closed.
	raw = negEntries{raw}
	// The setuid and setgid bits a write, truncate or chown drops.
	raw = killPriv{raw}
	if c.how.openless {
		raw = noOpendir{raw}
	}
	if sm.wrapRaw != nil {
		raw = sm.wrapRaw(raw)
	}
	var gr *gated
	if g != nil {
		// Outermost: nothing below sees a request the gate holds.
		gr = newGated(raw, g)
		raw = gr
	}
	if opts.Counts != nil {
		raw = counted{RawFileSystem: raw, n: opts.Counts}
	}
	srv, err := fuse.NewServer(raw, mountpoint, &fo.MountOptions)
	closeFuseOnExec()
	if err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: %w", mountpoint, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: %w", mountpoint, err)
	}
	if !c.how.openless {
		// A connection with no handles has nothing to pass through.
		c.setupPassthrough(srv, opts.Passthrough, mountpoint)
	}
	logger.Debug("fusefs: mounted", "mountpoint", mountpoint, "root", c.prefix, "kind", c.kind, "readonly", opts.ReadOnly)
	return &Server{srv: srv, mountpoint: mountpoint, conn: c, gated: gr}, nil
}

// closeFuseOnExec marks the process's /dev/fuse descriptors close-on-exec.
// go-fuse opens the device without O_CLOEXEC for DirectMount, so every
// program this process starts (a shell of the tool face, a test's stat)
// would hold the connection open: once this process is gone the mount
// would not turn stale (ENOTCONN) but hang, and a child waiting on it would
// wait for an answer that it alone could give. A program started between
// go-fuse's open and this call still inherits it.
func closeFuseOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			syscall.CloseOnExec(fd)
		}
	}
}

// Unmount unmounts the file system cleanly, the stacked connections
// first. It fails (EBUSY) while a process uses the mount;
// ForceUnmount detaches instead.
func (s *Server) Unmount() error {
	// go-fuse's Unmount of a server already unmounted succeeds, so a
	// retry after EBUSY starts over harmlessly.
	for i := len(s.subs) - 1; i >= 0; i-- {
		sub := s.subs[i]
		if !sub.mounted() {
			// Unmounted from outside: vfsmount umount takes the
			// stacked roots first and may then find the workspace
			// busy. go-fuse's Unmount would fail on it every time.
			sub.conn.closed()
			continue
		}
		if err := sub.Unmount(); err != nil {
			return err
		}
	}
	if err := s.srv.Unmount(); err != nil {
		return fmt.Errorf("fusefs: unmount %s: %w", s.mountpoint, err)
	}
	s.conn.closed()
	return nil
}

// closed releases what c holds once its connection is gone.
func (c *conn) closed() {
	c.pages.Load().stop(c)
	c.readers.clear(false)
}

// mounted reports whether a FUSE mount is still on top of s's mount
// point; when that cannot be told, it is.
func (s *Server) mounted() bool {
	abs, err := absMountpoint(s.mountpoint)
	if err != nil {
		return true
	}
	fuse, _, err := mountedAt(abs)
	return err != nil || fuse
}

// Wait blocks until the file system is unmounted: the main connection, and
// then the stacked ones, which a detach of the main one takes along.
func (s *Server) Wait() {
	s.srv.Wait()
	s.conn.closed()
	for _, sub := range s.subs {
		sub.Wait()
	}
}

// Mountpoint returns the directory the file system is mounted on.
func (s *Server) Mountpoint() string { return s.mountpoint }

// Invalidate drops the kernel's caches for names (fsys-relative, io/fs
// style: "memory/x"): the content and attributes of each name's inode, its
// entry in its parent, and the parent's attributes and listing. A name the
// kernel has never looked up costs nothing beyond the walk to its deepest
// known ancestor, whose entry for the next component is dropped so that a
// new name is found.
//
// It must not be called from inside a FUSE request handler (see "#
// Deadlocks" in the package doc).
func (s *Server) Invalidate(names ...string) {
	for _, name := range names {
		if !mounts.ValidPath(name) {
			s.conn.log.Debug("fusefs: invalidate: invalid name ignored", "name", name)
			continue
		}
		s.connOf(name).invalidate(name)
	}
}

// connOf returns the connection that serves name: one stacked at or above
// it whose names change (copy-on-write; immutable ones never change), or
// the main one. Only that connection is told: the main one's entry for a
// stacked root is a mount point, which the kernel would unmount to
// invalidate it.
func (s *Server) connOf(name string) *conn {
	for _, sub := range s.subs {
		if sub.conn.how.changes && within(name, sub.conn.prefix) {
			return sub.conn
		}
	}
	return s.conn
}

func (c *conn) invalidate(name string) {
	cur := c.root.EmbeddedInode()
	rest := mounts.Rel(name, c.prefix)
	if c.how.changes {
		// Pages offered of the name before it changed are not its.
		c.pages.Load().unpark(name)
	}
	if rest == "." {
		c.notify(cur.NotifyContent(0, 0), "content", name)
		for _, elem := range c.rootNegs.take() {
			c.notify(cur.NotifyEntry(elem), "entry", name)
		}
		if c.how.rootDropsAll {
			// Everything may have changed (a remote mount's link came
			// back, its change stream overflowed): the root has no
			// entry above it to drop, so each of its own goes, and
			// with it what the kernel holds below.
			for elem := range cur.Children() {
				c.notify(cur.NotifyEntry(elem), "entry", name)
			}
		}
		c.readers.clear(false)
		return
	}
	for rest != "" {
		elem, tail, _ := strings.Cut(rest, "/")
		child := cur.GetChild(elem)
		if child == nil || tail == "" {
			if child != nil {
				c.notify(child.NotifyContent(0, 0), "content", name)
				c.dropFiles(child)
			}
			c.notify(cur.NotifyEntry(elem), "entry", name)
			c.notify(cur.NotifyContent(0, 0), "content", name)
			return
		}
		cur, rest = child, tail
	}
}

// dropFiles drops the cached files of ch, whose content changed behind the
// kernel's back: of every node when ch is a directory (a checkpoint
// restored, a tree reset), whose files below are not worth a walk. Where
// writers stay (strategy.writersStay), the cached files opened for writing
// are kept.
func (c *conn) dropFiles(ch *fs.Inode) {
	if c.readers == nil {
		return
	}
	if ch.IsDir() {
		c.readers.clear(c.how.writersStay)
		return
	}
	if n, ok := nodeOf(ch); ok {
		// Pages offered before the change are not the file's: a
		// store under way drops what it put in (pageStore.store).
		n.changed.Store(true)
		c.readers.drop(n, c.how.writersStay)
	}
}

// notify logs a failed notification. ENOENT only means the kernel had
// nothing cached, and ENOSYS that the mount is already gone.
func (c *conn) notify(errno syscall.Errno, what, name string) {
	if errno != 0 && errno != syscall.ENOENT && errno != syscall.ENOSYS {
		c.log.Debug("fusefs: invalidate failed", "what", what, "name", name, "errno", errno.Error())
	}
}

// cachePolicy says how long the kernel may trust what it learnt about a
// node (see "# Caching" in the package doc).
type cachePolicy struct {
	entry, attr time.Duration
	// negative is how long a failed lookup of a name in the directory
	// may be trusted: 0 (not cached) where names change behind the
	// process's back.
	negative time.Duration
	// keepCache keeps a file's pages across close and open
	// (FOPEN_KEEP_CACHE); cacheDir keeps a directory's listing
	// (FOPEN_CACHE_DIR), checked against the directory's mtime.
	keepCache, cacheDir bool
}

// immutablePolicy is the caching policy of immutable content, and of every
// node of an immutable connection (kindImmutable).
var immutablePolicy = cachePolicy{entry: immutableTimeout, attr: immutableTimeout, negative: immutableTimeout, keepCache: true, cacheDir: true}

// mountPolicy returns the caching policy of the mount serving name: a name
// may be a mount point of another mount. The mount serving a node never
// changes (renames across mounts fail with EXDEV), so nodes compute it
// once.
func (c *conn) mountPolicy(name string) cachePolicy {
	d := mounts.DescribeAt(c.fsys, name)
	switch {
	case d.Immutable:
		return immutablePolicy
	case d.External:
		return cachePolicy{entry: externalTimeout, attr: externalTimeout, cacheDir: true}
	default:
		return cachePolicy{entry: internalTimeout, attr: internalTimeout, negative: internalTimeout, keepCache: true, cacheDir: true}
	}
}

// ctx is the context a request hands the mounts: the FUSE caller, for
// owners of new files and the audit log, and not the request's
// cancellation, which the kernel's INTERRUPT triggers (see "#
// Interrupts" in the package doc).
func (c *conn) ctx(ctx context.Context) context.Context { return callerCtx(ctx, mounts.FaceKernel) }

// ownCtx is ctx for the kernel face's own work on a request's behalf (a
// file kept open in case a program holds it: pinOrphan), not the
// caller's: the policy binds it as any call, and the audit log says whose
// it was (mounts.FaceInternal), not that the program asked.
func (c *conn) ownCtx(ctx context.Context) context.Context {
	return callerCtx(ctx, mounts.FaceInternal)
}

// callerCtx carries the request's uid and gid as a caller of face, and
// its pid when the call is the program's own (mounts.FaceKernel).
func callerCtx(ctx context.Context, face mounts.Face) context.Context {
	caller := mounts.Caller{Face: face}
	if fc, ok := fuse.FromContext(ctx); ok {
		caller.Uid, caller.Gid = fc.Uid, fc.Gid
		if face == mounts.FaceKernel {
			caller.Pid = fc.Pid
		}
	}
	// Background rather than context.WithoutCancel(ctx), one allocation
	// less a request: go-fuse's request context carries nothing but the
	// caller (read above) and the cancellation dropped here.
	return mounts.WithCaller(context.Background(), caller)
}

// rescue is deferred by every handler: a panic below becomes EIO and one
// log line instead of a dead mount.
func (c *conn) rescue(op string, errno *syscall.Errno) {
	if p := recover(); p != nil {
		c.log.Error("fusefs: panic in handler", "op", op, "panic", fmt.Sprint(p),
			"stack", string(debug.Stack()))
		*errno = syscall.EIO
	}
}
