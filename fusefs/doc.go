// Package fusefs serves a [mounts.FS] (in practice the workspace union) to
// the kernel through go-fuse v2. It is the only package of vfsmount that
// imports go-fuse. What a name means is never decided here: that belongs
// to the mounts below, reached only through the helper functions of
// package mounts. How the kernel sees the tree is decided here, and that
// is most of the package, well beyond a translation of requests: the
// caching policy per mount, three kinds of connection, of which the
// immutable and copy-on-write ones are stacked over their mounts (OPEN
// answered with ENOSYS, reads through a file cache, unlinked open files
// pinned), the readiness gate that holds other processes until every
// connection is mounted, the page store that hands decoded files to the
// kernel ahead of their reads, and FUSE passthrough for host files. The
// sections below take them in turn.
//
// # Nodes and names
//
// The adapter is path based. A node remembers nothing of its own but its
// position in go-fuse's inode tree; each request recomputes the node's
// mount-relative name ("memory/notes/a.md") from that position and calls the
// mounts helper with it ([mounts.OpenFile], [mounts.Rename], ...). Capability
// checks are therefore the helpers' (a verb the mount lacks becomes EROFS or
// ENOTSUP), never this package's.
//
// Inode numbers are the mount's own ([mounts.Attr.Ino]); the union makes them
// unique across mounts, so two names with the same number are hard links and
// share one kernel inode. A mount that reports 0 gets a number from go-fuse.
// A node whose last name was removed while a file handle is still open
// (unlink of an open file) answers fstat from that handle; one without a
// handle (an open directory that a rename replaced, or a stat racing with
// the removal) answers with the attributes last known and no links, as a
// local file system answers for an unlinked inode.
//
// # Caching
//
// The policy is chosen per mount, from [mounts.DescribeAt] of the name (on
// an immutable connection, see "# Connections", without asking: every
// name is):
//
//   - Immutable mounts (a git commit) never change, so entries and
//     attributes are cached for an hour, files are opened with
//     FOPEN_KEEP_CACHE so the page cache survives close and reopen, and
//     directories with FOPEN_CACHE_DIR so listings are cached too.
//     A read-only open with FOPEN_KEEP_CACHE (here, and for the memory
//     mount below), and every open of an openless connection, tells
//     the mount so ([mounts.OpenOptions] PagesKept, an argument of the
//     open that every layer passes on), so that a git mount does not
//     keep decoded what the page cache now holds.
//   - External mounts (a host directory other programs edit) use one-second
//     entry and attribute timeouts and drop the page cache on every open,
//     the trade-off libfuse makes by default: nothing tells us about their
//     changes, so staleness is bounded by time. Their listings are cached
//     too (FOPEN_CACHE_DIR): the kernel refreshes a directory's expired
//     attributes when a program starts reading it and drops the cached
//     listing when the mtime moved, so a listing is as fresh as a stat —
//     and git status in a 10,000-file checkout costs about what it does
//     natively instead of five times as much. (On a host file system with
//     coarse mtimes, a change within the same tick as the cached listing
//     shows only with the directory's next change.)
//   - Everything else (the memory mount) changes only through this process,
//     either through the kernel (which then knows) or through the library
//     API used by the tool face, which calls [Server.Invalidate] after each
//     change (mounts.Observe wires that up). So it is cached like immutable
//     content — KEEP_CACHE, CACHE_DIR — with 30-second timeouts that only
//     bound the damage should an invalidation ever be missed. Invalidation,
//     not a zero timeout, is the mechanism: a zero timeout would turn every
//     path walk into a LOOKUP per component, while the tool face knows
//     exactly which names it touched.
//
// A cached listing is checked by the kernel against the directory's mtime
// whenever a program rewinds to its start, so a listing never outlives a
// change made through the kernel; Invalidate drops it for library changes.
//
// FLUSH is answered with ENOSYS, which makes the kernel stop sending it:
// writes reach the mount as they are made, so close(2) has nothing to push.
//
// Failed lookups are cached as long as found names are, on every mount
// but external ones (negative entries): a build looking for the same
// missing header, a shell walking PATH, git probing for files that are
// not there ask the kernel, not this process, the second time. The same
// invalidation drops them: a library change invalidates the name's entry
// in its directory, or a directory's entry, which takes every entry
// below it along, and for the root of a connection, which has no entry
// above it, the misses the kernel was told to cache there (a bounded
// set, past which misses at the root are not cached). go-fuse sets the
// negative timeout only mount-wide, so the timeout is set per directory
// by Lookup and put into the kernel's form (a reply with node id 0) by a
// layer below the readiness gate (negEntries). External mounts keep
// timeout 0: a file another program creates there is found by the next
// lookup.
//
// The kernel refetches attributes after a read of a writable mount anyway,
// to update atime, and drops a file's cached pages when it sees its size or
// mtime change (FUSE_AUTO_INVAL_DATA).
//
// # Connections
//
// A mount is served on one FUSE connection or several, each of one kind
// (connKind), chosen when the connection is mounted and never changed.
// Everything a kind does differently is one field of its strategy
// (kind.go), which the handlers read; none tests the kind.
//
//   - main: the workspace. The kernel asks before it opens a file or a
//     directory, so every open has a handle (unlink of an open file,
//     passthrough, the audit log's per-open accounting), and the caching
//     policy is that of the mount of each name.
//   - immutable: content that never changes (a git commit). Read-only;
//     OPEN and OPENDIR answer ENOSYS, after which the kernel opens and
//     closes files and directories by itself; every name is cached as
//     immutable content and each directory is listed once.
//   - copy-on-write: a writable layer over a commit that only this
//     process changes (the overlay of a writable git mount). Openless as
//     an immutable connection is, but writable: WRITE and FSYNC come
//     without a handle too, and go by name.
//   - notified: a mount whose changes behind this process's back are told
//     ([mounts.Description.Notified]: a remote mount with its change
//     stream). Openless and writable as a copy-on-write connection is,
//     and told of the changes made elsewhere (see "# Notified
//     connections").
//
// Without [Options.StackConnections] there is one connection, of the main
// kind. With it, each immutable, copy-on-write and notified mount of the mount
// table ([mounts.Mounts]) with nothing mounted below it gets a connection
// of its own, stacked on top of the directory the main connection shows
// at that name ([ImmutableRoots], [CopyOnWriteRoots], [NotifiedRoots]); when every mount is
// immutable (or fsys is a single immutable mount) the main connection is
// an immutable one and nothing is stacked. A root that cannot be stacked
// is served through the main connection, with a log line. Stacking and
// the readiness gate that hides it from other processes live in stack.go.
//
// A stacked connection serves the same tree, by the same names
// (conn.prefix), through the same decorators, with the same inode
// numbers. The price is the kernel's view of two mounts: the stacked
// directory has its own device number (find -xdev and du -x stop there),
// a rename out of it fails with EXDEV (it would anyway: mounts are
// separate in the union), and it must be unmounted first — [Server.Unmount]
// and [ForceUnmount] do that, a plain umount(8) of the workspace alone
// fails with EBUSY.
//
// # Immutable connections
//
// Even with every entry, attribute and page cached, each open(2) of a file
// costs an OPEN and a RELEASE round trip, and for a full read of a
// repository (tar, a build) those round trips were most of the time: about
// 30 µs a file where a local file system takes 6. FUSE lets a server answer
// OPEN with ENOSYS, after which the kernel opens and closes every file of
// the connection by itself, keeps their pages across opens as with
// FOPEN_KEEP_CACHE, and sends READs without a handle. That holds for the
// whole connection, and writable mounts need their handles, hence
// connections of their own. A READ without a handle goes through a small
// cache of open files, one per recently read node (readerCache), so that a
// large file read in many READs is opened once and no more than a few
// dozen files are held open. OPENDIR answers ENOSYS too (the kernel then
// caches listings as with FOPEN_CACHE_DIR), and a READDIR without a handle
// is served through one opened for that request (noOpendir); a listing is
// built once per directory and, when the tree implements
// [mounts.StatDirFS], comes with every entry's attributes, so READDIRPLUS
// asks the mount once per directory rather than once per entry (when that
// fails, say for one git blob gone missing, the directory is listed
// plainly and only that entry's lookup fails). A warm tar of a 20 000-file
// commit, which sent an OPEN, a RELEASE and a FLUSH per file and an
// OPENDIR and a RELEASEDIR per directory, now sends nothing: it went from
// 5.9x to about 1.1-1.3x of a local checkout.
//
// # Notified connections
//
// A remote mount with its change stream is cached as content only this
// process changes (30-second timeouts, listings kept): every change made
// on the remote machine is told ([mounts.ChangeNotifier]) and relayed to
// [Server.Invalidate]. What the kernel still asked for, with handles, was
// an OPENDIR and a RELEASEDIR per directory opened and an OPEN and a
// RELEASE per file, with nothing to answer but a handle: a cold tar of a
// 13,000-file remote tree, its content already here, went at the pace of
// those round trips (1.6 times `ssh tar c | tar x`), and a warm git status
// sent 2,700 OPENDIRs. Its connection is openless, as a copy-on-write one
// is: the kernel opens files and directories by itself, keeps listings
// and pages until an invalidation drops them, and READs, WRITEs and FSYNCs
// go by name through the file cache; the same tar then takes about the
// time of ssh's. What a handle gave is kept otherwise:
//   - close(2) sends nothing (FLUSH answers ENOSYS; no FOPEN_NOFLUSH can
//     spare the reads without an OPEN to answer): the remote mount orders
//     what follows after the writes made (its write-behind), and reports
//     a write the peer refused at the next write, at fsync of the file
//     or of any directory of the mount, and in the log;
//   - a file removed or renamed over through the kernel is pinned
//     (pinOrphan) with the file the cache holds (a remote handle, no
//     second open), or one opened in case;
//   - a file's cached file opened for writing stays when the change
//     stream reports the file changed (strategy.writersStay): it is the
//     remote file the node is.
//
// The price is copy-on-write's: a file the remote machine removes while a
// program here holds it open reads as gone unless the kernel still has
// its pages, and a program's open(2) of a file it may not read fails at
// its first READ rather than at the open. An invalidation of the
// connection's root (the link came back, the change stream overflowed:
// anything may have changed) drops every entry the kernel holds below
// it, since the root has no entry above it on this connection to drop
// instead.
//
// # Copy-on-write connections
//
// A writable layer over a commit ([mounts.Description.CopyOnWrite]) is
// mostly files nobody changed, and a full read of it through the main
// connection paid the OPEN and RELEASE round trips per file that an
// immutable connection saves: ten times the git mount's warm tar. Since it
// changes only through this process (the kernel, or the library, which
// calls [Server.Invalidate]), its connection answers OPEN and OPENDIR with
// ENOSYS as an immutable one does, but stays writable. Its READs, WRITEs
// and FSYNCs come without a handle and go through the connection's file
// cache (readerCache): one file per recently used node, opened by name
// read-only, or for reading and writing at the first WRITE, which is when
// the overlay copies a commit's file up; a read-only file is dropped when
// its content changes by name (a truncate), and every cached file of a
// name the library changed goes at its Invalidate. A file created here
// (CREATE) gets no handle either: the kernel sends no RELEASE on a
// connection whose OPEN answers ENOSYS, so a handle would hold the file
// open for the life of the node (a descriptor per file with a host
// upper); the file just created, when opened for writing, starts in the
// file cache instead, and its WRITEs go by name like any other's. The
// kernel keeps every file's pages across opens and is told of library
// changes as on the main connection.
//
// Nothing tells the server when the kernel opens or closes a file, so an
// UNLINK or a RENAME over the last name of a regular file the kernel knows
// first opens that file once more and pins it to the node (pinOrphan),
// until the kernel's FORGET, which comes after the last close: reads of an
// unlinked open file go on working, and so do writes when the file was
// written through this connection before (one only ever read is pinned
// read-only, so that removing a commit's file never copies it up). The
// other prices: the audit log records one open per cached file rather than
// per open(2), a read-denied file fails at READ rather than at open(2), a
// file the library removes while a program holds it open reads as gone,
// and an open file shows changes made by name since it was opened (the
// kernel reads the inode, not the file it opened), as on a local file
// system but unlike the main connection, whose handles keep the file they
// opened (as Linux's overlayfs does across a copy-up).
//
// # Readiness
//
// [Mount] returns once every connection is mounted, and no other process
// sees the workspace before that: until Mount returns, the main connection
// holds every request whose caller is not a thread of the serving process
// or the fusermount3 child that mounts a stacked connection (pid 0, a
// caller in a pid namespace the connection cannot name, is another
// process). Held requests go on when Mount returns, whether every stacked
// root could be mounted or some fell back to the main connection; one whose
// caller gets a signal meanwhile (a FUSE INTERRUPT) fails with EINTR. The
// kernel must not answer another process from what it cached for the
// serving one (mount(2) of a stacked root walks the path through the main
// connection), so until then replies carry zero entry and attribute
// timeouts. Afterwards the gate costs one atomic load per request. So a
// program that stats the workspace while it mounts waits, then sees it
// whole: /repo already has its own device, and a file opened there stays
// on it. (The same rule holds for programs the serving process starts:
// only its own threads pass.)
//
// The root of the main connection answers the read-only extended
// attribute [StackedXattr], user.vfsmount.stacked, with the stacked
// connections it mounted, one name a line. [Probe] reads it: a workspace
// whose listed connection is not in the mount table at that path (unmounted
// by hand, or a non-recursive bind of the workspace) or does not answer
// is [StateIncomplete], not live. A probe from another process therefore
// waits while the workspace mounts, and reports live only once it is whole.
//
// # Read-ahead: the page store
//
// On an immutable connection, reading a file whose content the mount must
// decode first (a git blob) makes the reader wait for the decode, file
// after file. This package does not guess what will be read next: the
// mount does, on the one read-pattern detector (package readpattern; a
// scan, as tar, cp -r or a build does, is two files of one directory read
// in a row), and offers what it decoded ahead ([mounts.PageOfferer]). Once
// every connection is mounted, the main one registers its page store as
// the sink: an offered file whose node an immutable connection knows, and
// has not read yet, is handed to the kernel with NOTIFY_STORE, once per
// node, so the reads that follow are page cache hits. An offer for a node
// the kernel is still learning of (the mount offers from the listing that
// introduces it, before the reply is out) is parked by directory, within
// a bound, and tried again as soon as the kernel shows it took the
// listing in (the READDIR that finds its end, which stores them before it
// is answered, or the first READ in that directory) or a couple of
// milliseconds later, whichever comes first; anything that fails then is
// dropped, and the file is read by READ as usual, as it is when the
// kernel drops those pages like any others. The offers come
// through the decorators, so the path rules drop the pages of denied files
// before they reach the kernel. A copy-on-write connection takes them too:
// the overlay passes on only the pages of names it still serves from the
// commit, and the store leaves alone a node whose content or name changed
// there (and drops what it stored when the change came while the pages
// went in, since the kernel's write held them), and forgets parked pages
// of a name the library changed. A single file read in a directory (an
// agent looking at one file) triggers nothing, and neither does listing
// alone (find, ls -R).
//
// A notified connection (a remote mount) takes them as well: the mount
// offers the content its read-ahead brought of a directory's small files
// when the directory is listed (parked until the kernel took the listing
// in) and when the first of them is read (the kernel knows their nodes
// then). A cold tar of a 13,000-file remote tree then sends almost no
// READ (85 in a run, for files whose content arrived after their
// directory was listed), and none of the GETATTRs that a READ's access
// time costs on a writable connection. A node the change stream
// invalidates is never stored again, and what a store put in while the
// invalidation came is dropped.
//
// # Passthrough
//
// With [Options.Passthrough], files of host mounts are served by FUSE
// passthrough: the kernel reads and writes the host file itself, and READ
// and WRITE requests never reach this process. A file qualifies when the
// [mounts.File] the mount returns implements [mounts.FDFile] all the way
// up: the union forwards the descriptor, and a decorator that must see
// content (the audit log, which counts bytes written) does not, so under
// it every file is served the plain way. Memory and git files have no
// descriptor and are never passed through.
//
// The kernel allows one backing file per inode and refuses (EIO) an open
// that is not in the mode of the opens already there, so the mode is
// chosen per node: the first open of a node decides, and every later open
// while any is still there follows it. go-fuse registers the first
// passthrough handle's descriptor and shares it with the later ones; its
// access mode does not matter, because the kernel opens its own file on
// the backing path with the flags of each open (a read-only first open
// does not stop a later writer, and O_APPEND writes land at the end of the
// host file). O_TRUNC and ftruncate still come to this process.
//
// Everything a passthrough handle reads is the host file's current
// content, so changes by other programs or by the tool face are seen at
// once. Attributes still come from the mount, under the timeouts of "#
// Caching".
//
// Every qualifying file is passed through, whatever its size. Registering
// a backing file costs two ioctls at the first open and the last release
// of a node, noise next to the CREATE or OPEN and RELEASE round trips
// every open pays anyway, while each READ or WRITE saved is a round trip
// and a copy: untarring 10 000 files of 600 bytes was no slower with
// passthrough than without (each file's one WRITE is saved), and 1 GiB
// sequential reads and writes went from 0.6x and 0.25x of the host
// directory to about 0.9x (see make bench). A size threshold would also
// have to be sticky per node, since the first open decides for the rest.
//
// At mount the package registers and drops a memfd to learn whether the
// kernel accepts backing files (it needs CAP_SYS_ADMIN and Linux 6.9 or
// later) and logs the outcome once. Where it does not, files are served
// the plain way, as they are when the option is off.
//
// # Requests per file
//
// A request costs a round trip to this process, about 30 µs on a shared
// machine where the system call on tmpfs takes a few, so for small files
// the number of requests is the cost. [Options.Counts] counts them by
// opcode; bench's requests table (make bench) prints them per file for
// create+write+close, stat, sed -i, tar -x and rm -rf on a memory mount, a
// writable git mount and a host directory, and its TestRequestCeilings
// fails when one grows. What the kernel can answer from what it was told,
// it does: entries and attributes under the timeouts of "# Caching", misses
// too (negative entries), FLUSH answered ENOSYS once, attributes returned
// with CREATE, MKDIR, SETATTR and every LOOKUP. What is left is asked by the
// kernel whatever the answers:
//
//   - a LOOKUP of a new name before its CREATE or MKDIR (the kernel has no
//     entry to go by), and of a rename's target (revalidated always);
//   - a GETATTR of the directory after each entry it gains or loses: the
//     kernel drops a directory's attributes when its entries change, and
//     default_permissions (see "# Permissions") refreshes them for the
//     next permission check in it;
//   - a GETATTR after a WRITE before a stat (the kernel drops size and
//     times it cannot compute without the writeback cache). The one it
//     sent before a chown, to recompute the setuid bits to clear, is gone:
//     the connection clears them itself (HANDLE_KILLPRIV_V2, killPriv);
//   - a GETXATTR of security.capability at the first write to a file and
//     at a chown: the kernel still checks for file capabilities itself,
//     and forgets that a file has none at every attribute refresh;
//   - on the main connection, OPEN and RELEASE per open (the handles it
//     keeps, see "# Connections").
//
// The writeback cache would save the GETATTR after writes and coalesce
// WRITEs, but the kernel would then hold written data until close or
// writeback, and the tool face would not see a shell's write at once; it
// stays off.
//
// # Permissions
//
// The mount uses the default_permissions option: the kernel checks the mode
// bits and owners this package reports before it sends a request, exactly as
// for a local file system. The mounts below do not implement access control
// of their own (policy decorators refuse by path, not by uid), so without it
// any user of an allow_other mount could write any file. It also means the
// kernel never sends ACCESS requests, which removes one of go-fuse's known
// fork/exec deadlocks.
//
// With allow_other, many users share the mount as they share ext4, and the
// work divides as it does there. The kernel decides every permission
// question from the attributes reported, with the caller's full
// credentials (supplementary groups included): modes, the sticky rule on
// unlink and rename, who may chmod and chown, protected hard links, setgid
// dropped from a file created by a non-member in a setgid directory or
// chmod'ed by one. The setuid and setgid bits a write, truncate or chown
// drops are the one exception: the connection negotiates
// HANDLE_KILLPRIV_V2, the kernel marks those requests, and killPriv
// drops the bits with a mode change with the caller's ids, as the kernel
// did before (saving the GETATTR it sent to compute them): a mount must
// apply such a SETATTR, never refuse it. Otherwise neither this package
// nor the mounts second-guess the kernel. What the mounts do is what ext4 does beyond
// permissions: a new entry belongs to the caller's uid and gid (from
// [mounts.Caller], which this package fills from the request), or to a
// setgid directory's group, a new subdirectory inheriting the bit; chown
// clears setuid, and setgid with group exec, on a non-directory; link
// counts are those of the tree. The tool face calls the mounts as the
// daemon's own user and is bound by the policy layer, by path.
//
// Two limits are the kernel's: a FUSE request carries the caller's uid and
// primary gid only, and the FUSE module drops setgid on a write by a
// non-member only with group exec on (fuse_setattr), where ext4 drops it
// without too (integration.TestUsersDifferential marks that step known).
//
// # Errors
//
// [ToErrno] is the one mapping from errors to errno values. An error it
// does not know becomes EIO, and the server logs it once per distinct
// message. A panic in any handler is recovered, answered with EIO and logged
// as one line; the mount stays up.
//
// # Concurrency
//
// go-fuse serves requests in parallel and negotiates parallel directory
// operations with the kernel. The mounts are safe for concurrent use and
// their renames are atomic, so this package emulates no multi-step
// operation and holds no lock across a call into a mount. What it keeps
// itself is small and guarded where it lives: per node, the open handles
// and the attributes last reported (node.mu), and on an immutable
// connection the directory's listing, built once; per connection, the
// reader cache, under its own mutex; the page store's flags per node
// (served, pushed), atomic; and the readiness gate, one atomic load once
// open. Change notices from the tool face and offered pages from the
// mounts arrive on other goroutines: the first only ask the kernel to
// drop entries (see "# Caching"), the second to store pages, never from
// inside a request.
//
// # Interrupts
//
// When a process waiting for a request gets a signal, the kernel sends
// INTERRUPT for it and keeps waiting (only a fatal signal stops the wait,
// and not for a request the server already has): whatever the server
// answers is what the system call returns. go-fuse cancels the request's
// context on INTERRUPT, and a mount that honours the cancellation fails
// with context.Canceled, which [ToErrno] maps to EINTR. That EINTR reaches
// the caller even when its handler has SA_RESTART (the kernel restarts a
// system call only on its own ERESTART codes), and Go programs get SIGURG,
// the runtime's preemption signal, all the time: a getdents(2) that a
// local file system would have answered failed with "interrupted system
// call" (the host mount checks its context between getdents calls; git
// lookups check it too). So requests hand the mounts a context without
// the kernel's cancellation: every request runs to its end and answers
// its real result, as libfuse serves by default (without -o intr). The
// mounts' operations are bounded local work; a caller killed while one
// runs exits when it ends.
//
// # Deadlocks
//
// go-fuse's warnings apply (see the "Deadlocks" section of its fs package):
// the process serving a mount must not exec a binary that lives on it, nor
// mmap files from it. [Server.Invalidate] must not be called from inside a
// request handler, that is, from a mount method invoked by this package: the
// kernel may hold the directory lock the notification needs until that very
// request returns. Hand Mount the union itself and the observed union
// (mounts.Observe) only to the tool face.
//
// # Limitations
//
// The contract has no verb for space reservation or unnamed files, so
// FALLOCATE and O_TMPFILE answer EOPNOTSUPP (go-fuse's answer for a node
// that does not implement them). MKNOD is served through [mounts.Mknod]: a
// regular file is created as by open(2), and FIFOs, sockets and devices by
// a mount with [mounts.MknodFS] (memory, host, the overlay); one without it
// answers EROFS or ENOTSUP, as for any verb a mount lacks. Record
// locks are the kernel's own (per process, not shared with the tool face).
// Attribute changes and xattrs of a file whose last name is gone fail with
// ENOENT, except ftruncate through an open handle.
//
// # Flush
//
// Writes go straight to the mount (WriteAt), and what a reader asks next
// sees them (a remote mount, whose writes are pipelined to the other
// machine, orders every later request after them), so there is nothing to
// flush on close: FLUSH answers ENOSYS (see "# Caching"). A write a
// remote mount's peer refused is reported at the next write of the file,
// at its fsync, or at fsync of a directory of the mount. FSYNC calls
// [mounts.WritableFile.Sync].
package fusefs
