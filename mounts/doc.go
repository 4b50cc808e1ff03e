// Package mounts is the contract between the sources of a workspace (a git
// commit, a host directory, a skills directory, an in-memory tree) and the
// faces that serve it (the union, the kernel adapter, the agent tools).
//
// A mount is a value of type [FS]: a small read side shaped like io/fs, plus
// optional capability interfaces, one per verb family. Callers never type
// assert; they call the free helper functions of this package ([OpenFile],
// [Mkdir], [Rename], ...), which check for the method and return the
// documented error when it is absent.
//
// # Path names
//
// Inside a mount, names are relative to the mount's root, io/fs style: "." is
// the root, "src/main.go" a file below it. A name is valid when
// [fs.ValidPath] accepts it and it holds no NUL and no other control
// character ([ValidPath]). Mounts reject invalid names with a *fs.PathError
// wrapping [fs.ErrInvalid] before touching anything ([CheckPath]). Mount
// types may add rules of their own (the git mount refuses a ".git"
// component).
//
// The workspace namespace seen by users is absolute ("/repo/src/main.go").
// The union is a mount like the others: its names are "repo/src/main.go",
// and it rewrites its mounts' error paths into those names (as io/fs's Sub
// does), so a host path never leaks into an error. The faces that show
// paths to people make them absolute.
//
// # Capabilities
//
// Capability is method presence. A mount implements [OpenFileFS] only if it
// can really create and write files, [LinkFS] only if it can really make hard
// links, and so on. Nothing implements a method only to refuse it: a read-only
// mount has no write methods at all, and the helpers turn that absence into
// [ErrReadOnly] (EROFS through the kernel). A writable mount that lacks one
// verb (say hard links) gets [ErrNotSupported] for that verb instead.
//
// Special files (FIFOs, sockets, devices; [MknodFS]) are attributes only as
// far as a mount is concerned: what they carry lives in the kernel, which
// opens them itself, so [FS.Open] refuses them with [ErrSpecial] and the
// tool face never opens one.
//
// Wrappers that must declare every method statically (the union, policy
// decorators) report the capabilities they really offer through
// [CapabilityReporter]; [Capabilities] consults it.
//
// One capability changes no content: [SearchFS] ([CapSearch]) names the
// files a content search may match, from an index of an immutable tree
// (the git mount's), so that grep reads those instead of every file. The
// union splits it by mount, [Intercept] rules on every name it returns as
// the walk it replaces would, and an overlay answers from its lower with
// its changes added; a caller checks every candidate with the real
// pattern, so the answer changes what is read, never what is found.
//
// # Wrappers
//
// Every decorator of a mount is built on one of two primitives, which share
// one forwarder per verb: [Intercept] sees each call ([Call]) before the
// mount does and may refuse or rewrite it (the path rules of package
// policy); [Watch] is told of each call after it returned, with its error
// (the audit log, and [Observe], which tells the kernel face what the tool
// face changed). Both declare the whole contract, forward each call through
// the helpers of this package, forward capabilities, descriptions and the
// mount table, and wrap what must be wrapped of the files they open.
// mountstest.RunWrapper checks that a wrapper offers exactly what it wraps.
// A new verb of the contract is added once to that forwarder, to [Op], and
// to RunWrapper, which then checks it in every wrapper's tests.
//
// # The mount table
//
// A workspace composed of mounts (the union) answers its mount table,
// [MountInfo] per mount, through [MountTabler]; the wrappers over it forward
// the table, correcting what they change (a read-only rule of policy makes
// the mounts it covers read-only), and the faces read it with [Mounts] from
// the top of the stack they were given.
//
// # Pages offered up
//
// A mount that reads ahead of its callers (a git mount during a scan, on
// the one detector of package readpattern) offers what it read, whole
// files, to the sink a face registered ([PageOfferer], [OfferPages]). The
// offers travel up the stack as the table does: the union translates their
// names, the wrappers pass them on, each page first through the
// interceptor as an [OpOffer] of its name, so policy's path rules drop the
// pages of denied files. The kernel face stores them in the page cache.
//
// # Errors
//
// Every error a mount returns is a *fs.PathError whose Path is the name the
// caller passed. Checks use errors.Is against the sentinels of io/fs
// ([fs.ErrNotExist], [fs.ErrExist], [fs.ErrPermission], [fs.ErrInvalid]) and
// of this package ([ErrReadOnly], [ErrNotSupported], [ErrCrossMount],
// [ErrBusy], [ErrDenied], [ErrEscapes], [ErrNotDir], [ErrIsDir],
// [ErrNotEmpty], [ErrNoSpace], [ErrLoop], [ErrNameTooLong], [ErrSpecial]). Underlying
// syscall.Errno values may be wrapped as they are (the host mount passes
// ENOSPC and EIO through unchanged); the kernel face maps both kinds in one
// table.
//
// # Testing
//
// Package mountstest holds the conformance suite every mount passes, in the
// manner of testing/fstest: it checks the read side through [IOFS] with
// fstest.TestFS, then round-trips each capability the mount implements and
// checks the documented error for each it lacks.
package mounts
