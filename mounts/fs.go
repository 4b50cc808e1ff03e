package mounts

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// FS is the read side every mount implements. Names follow the rules in the
// package doc; every error is a *fs.PathError.
type FS interface {
	// Stat returns the attributes of name without following a final
	// symlink (lstat semantics).
	Stat(ctx context.Context, name string) (Attr, error)
	// ReadDir lists a directory, sorted by name, without "." and "..".
	ReadDir(ctx context.Context, name string) ([]DirEntry, error)
	// Open opens a regular file for reading with random access. Opening a
	// directory fails with ErrIsDir; opening a symlink fails with ErrLoop
	// (callers resolve links themselves); opening a FIFO, a socket or a
	// device fails with ErrSpecial.
	Open(ctx context.Context, name string) (File, error)
	// ReadLink returns the target of a symlink as stored, unresolved.
	// On a non-symlink it fails with fs.ErrInvalid.
	ReadLink(ctx context.Context, name string) (string, error)
}

// Attr is what stat reports. The zero value of a field means "unknown" where
// the comment says so; the kernel face fills in a sensible default.
type Attr struct {
	// Mode holds the type bits (fs.ModeDir, fs.ModeSymlink, ...) and the
	// permission bits, plus fs.ModeSetuid/ModeSetgid/ModeSticky.
	Mode fs.FileMode
	// Size in bytes. For a symlink, the length of its target.
	Size int64
	// Ino is stable for the life of the mount (and across remounts where
	// the mount can manage it). Entries that are the same file (hard links)
	// share it. 0 means the mount has none and the caller must assign one.
	Ino uint64
	// Nlink is the link count. 0 means unknown (1 for files, 2 for dirs).
	Nlink uint32
	// Uid and Gid own the entry.
	Uid, Gid uint32
	// Atime, Mtime and Ctime have nanosecond precision where the source
	// has it. A zero Atime or Ctime means "same as Mtime".
	Atime, Mtime, Ctime time.Time
	// Blocks counts 512-byte blocks allocated. 0 with Size > 0 means
	// unknown: the kernel face derives it from Size.
	Blocks int64
	// Rdev is the device number of a device node, in the kernel's
	// encoding (unix.Mkdev); 0 for every other type.
	Rdev uint32
}

// IsDir reports whether the attributes describe a directory.
func (a Attr) IsDir() bool { return a.Mode.IsDir() }

// FileInfo adapts a to fs.FileInfo under the given base name.
func (a Attr) FileInfo(name string) fs.FileInfo { return fileInfo{name: name, a: a} }

type fileInfo struct {
	name string
	a    Attr
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.a.Size }
func (fi fileInfo) Mode() fs.FileMode  { return fi.a.Mode }
func (fi fileInfo) ModTime() time.Time { return fi.a.Mtime }
func (fi fileInfo) IsDir() bool        { return fi.a.Mode.IsDir() }
func (fi fileInfo) Sys() any           { return fi.a }

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Name string
	// Type holds only the type bits of the entry's mode.
	Type fs.FileMode
	// Ino as Attr.Ino; 0 when the mount does not know it cheaply.
	Ino uint64
}

// File is an open file. ReadAt follows io.ReaderAt and is safe for
// concurrent use. Stat is fstat: it works after the name was removed.
type File interface {
	io.ReaderAt
	Stat() (Attr, error)
	Close() error
}

// WritableFile is a file opened for writing by [OpenFileFS.OpenFile]. A file
// opened with O_APPEND writes at its end whatever offset WriteAt is given.
type WritableFile interface {
	File
	io.WriterAt
	// Truncate changes the size of the open file.
	Truncate(size int64) error
	// Sync makes the content and attributes durable where the mount has
	// a notion of durability; memory mounts return nil.
	Sync() error
}

// ContentFile is a file that holds its whole content in memory, never to
// change (a blob of a commit): Content returns it, valid until the file
// closes and never to be written to, or false where the file reads its
// content otherwise. A reader that only looks at the bytes (a search)
// reads them in place, without the copy ReadAt makes.
type ContentFile interface {
	Content() ([]byte, bool)
}

// Content returns f's content in place when f holds it ([ContentFile]).
// Wrappers of files forward it with this.
func Content(f File) ([]byte, bool) {
	if c, ok := f.(ContentFile); ok {
		return c.Content()
	}
	return nil, false
}

// Open flags understood by OpenFile, as os and syscall define them.
// O_RDONLY, O_WRONLY, O_RDWR, O_CREATE, O_EXCL, O_TRUNC, O_APPEND.

// OpenOptions say how the caller will use a file it opens for reading, for
// a mount that can do better knowing it. They are hints: a mount may ignore
// them, and a file opened with them reads as any other. The zero value says
// nothing, and is what Open means.
//
// They are an argument of the open ([OpenWithFS], through [OpenWith]) and
// not a value of the context, so that every layer between the caller and
// the mount (the union, the decorators, an overlay) passes them on
// visibly, and a decorator sees them in its [Call].
type OpenOptions struct {
	// PagesKept says the caller keeps what it reads from the file, and
	// for longer than it keeps the file open: the kernel face on a
	// connection whose pages survive close (FOPEN_KEEP_CACHE, and every
	// openless connection). A mount that caches content for its readers
	// (a git mount's decoded blobs) need not keep that content once such
	// a file closes; the next reader is the kernel's page cache.
	PagesKept bool
	// InCase says the open is made in case the file is read later, and
	// most likely never read: the kernel face keeping a file that loses
	// its last name readable for a program that may hold it open. A
	// mount that works at open (a git mount decodes the blob, and counts
	// the open towards a scan) may put that off until the first read.
	InCase bool
	// Scan says the open is one of a scan the caller drives itself,
	// reading many files side by side with workers of its own (the tool
	// face's grep). A mount that reads ahead of the scans it detects (a
	// git mount) need not read ahead of this one: it would do the
	// caller's work twice, for a reader that is not the kernel.
	Scan bool
}

// OpenWithFS is implemented by a mount that acts on [OpenOptions] (a git
// mount), and by every layer that forwards opens to others (the union,
// the wrappers of [Intercept] and [Watch], an overlay), so that the
// options reach the mount that acts on them. OpenWith with the zero
// options is Open.
type OpenWithFS interface {
	FS
	OpenWith(ctx context.Context, name string, o OpenOptions) (File, error)
}

// OpenFileFS is the write capability: create and write regular files.
// OpenFile opens name with os.OpenFile flag semantics; perm applies when it
// creates. With only O_RDONLY it behaves as Open.
type OpenFileFS interface {
	FS
	OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (File, error)
}

// TruncateFS changes the size of a file by name.
type TruncateFS interface {
	FS
	Truncate(ctx context.Context, name string, size int64) error
}

// MkdirFS creates a directory. An existing name fails with fs.ErrExist.
type MkdirFS interface {
	FS
	Mkdir(ctx context.Context, name string, perm fs.FileMode) error
}

// RemoveFS removes names. Unlink removes a non-directory (ErrIsDir on a
// directory); Rmdir removes an empty directory (ErrNotDir on anything else,
// ErrNotEmpty when it has entries).
type RemoveFS interface {
	FS
	Unlink(ctx context.Context, name string) error
	Rmdir(ctx context.Context, name string) error
}

// RenameFlags select rename(2) variants.
type RenameFlags uint32

const (
	// RenameNoReplace fails with fs.ErrExist if newname exists.
	RenameNoReplace RenameFlags = 1 << 0
	// RenameExchange atomically swaps the two names, which must both exist.
	RenameExchange RenameFlags = 1 << 1
)

// RenameFS renames atomically with rename(2) semantics: a file replaces a
// file, a directory replaces an empty directory. A mount that cannot honour
// a flag returns ErrNotSupported for that call (as the kernel returns EINVAL
// for flags a filesystem lacks).
type RenameFS interface {
	FS
	Rename(ctx context.Context, oldname, newname string, flags RenameFlags) error
}

// SymlinkFS creates symlinks. The target is stored verbatim.
type SymlinkFS interface {
	FS
	Symlink(ctx context.Context, target, name string) error
}

// LinkFS creates hard links to non-directories.
type LinkFS interface {
	FS
	Link(ctx context.Context, oldname, newname string) error
}

// MknodFS creates special files with mknod(2) semantics: a named pipe
// (fs.ModeNamedPipe), a unix socket's name (fs.ModeSocket, as bind(2)
// makes it), or a character or block device (fs.ModeDevice, with
// fs.ModeCharDevice for a character one) numbered dev. mode holds the type
// bits and the permission bits. An existing name fails with fs.ErrExist, a
// type not among those with fs.ErrInvalid, and a device for a caller that
// may not create one ([MayCreateDevice]) with fs.ErrPermission. Callers
// use [Mknod], which also creates regular files as mknod(2) does.
//
// A special file holds no content of the mount's: the kernel opens it
// itself (the pipe, the socket and the device live in the kernel), and
// Open fails with [ErrSpecial].
type MknodFS interface {
	FS
	Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error
}

// ChmodFS changes permission bits (and setuid, setgid, sticky).
type ChmodFS interface {
	FS
	Chmod(ctx context.Context, name string, mode fs.FileMode) error
}

// ChownFS changes owners. A value of -1 leaves that id unchanged. It does
// not follow a final symlink (lchown).
type ChownFS interface {
	FS
	Chown(ctx context.Context, name string, uid, gid int) error
}

// ChtimesFS sets access and modification times. A zero time leaves that
// time unchanged. It does not follow a final symlink.
type ChtimesFS interface {
	FS
	Chtimes(ctx context.Context, name string, atime, mtime time.Time) error
}

// XattrFS reads extended attributes. A missing attribute is ErrNoAttr.
type XattrFS interface {
	FS
	GetXattr(ctx context.Context, name, attr string) ([]byte, error)
	ListXattr(ctx context.Context, name string) ([]string, error)
}

// Xattr flags for SetXattr, as setxattr(2).
const (
	XattrCreate  = 1 // fail with fs.ErrExist if the attribute exists
	XattrReplace = 2 // fail with ErrNoAttr if it does not
)

// SetXattrFS writes extended attributes.
type SetXattrFS interface {
	XattrFS
	SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error
	RemoveXattr(ctx context.Context, name, attr string) error
}

// FSStat is what statfs reports, in Bsize units.
type FSStat struct {
	Bsize   uint32
	Blocks  uint64
	Bfree   uint64
	Bavail  uint64
	Files   uint64
	Ffree   uint64
	NameLen uint32
}

// StatFSer reports filesystem-wide usage.
type StatFSer interface {
	FS
	StatFS(ctx context.Context) (FSStat, error)
}

// Description says what a mount is, for the mount table ([MountInfo]) and
// for the kernel face.
type Description struct {
	// Type is the mount type: "git", "host", "skills", "memory".
	Type string
	// Source is a short, model-safe description, such as "git@1a2b3c4"
	// or "memory". It never contains a host path.
	Source string
	// Immutable content never changes for the life of the mount (a git
	// commit): the kernel face caches it for long.
	Immutable bool
	// External content may change behind the mount's back (a host
	// directory edited by other programs): the kernel face keeps its
	// caches short.
	External bool
	// CopyOnWrite content is a writable layer over immutable content (a
	// git commit made writable) that changes only through this process:
	// the kernel face serves it on a connection of its own where the
	// kernel opens files without asking, as it does for immutable
	// content. Never set together with External.
	CopyOnWrite bool
	// Notified content changes behind the mount's back (a remote
	// machine's directory), but every change is told ([ChangeNotifier]),
	// so the kernel face caches it as content only this process changes
	// and serves it on a connection of its own where the kernel opens
	// directories without asking. Never set together with External.
	Notified bool
	// IgnoreFiles says the mount's .gitignore files describe its own
	// content (a host checkout, where build output and the like are
	// ignored), so a search of the tree honours them. A git commit's
	// .gitignore files describe files that are not in it; a memory or
	// skills mount has none of its own.
	IgnoreFiles bool
}

// Describer is implemented by mounts that describe themselves.
type Describer interface {
	Describe() Description
}

// MountInfo is one entry of a workspace's mount table: where a mount is,
// what it is, and what it can do as the caller sees it.
type MountInfo struct {
	// Prefix is the absolute mount point: "/repo", or "/" for a root
	// mount.
	Prefix string
	// Description is the mount's own ([Describe]).
	Description
	// Writable reports whether anything at or below Prefix can change
	// through the tree that answered the table.
	Writable bool
	// Caps is the mount's capability set, as the tree that answered the
	// table offers it.
	Caps Capability
}

// MountTabler is implemented by a composition of mounts (the union) and by
// the wrappers over one: Mounts returns the mount table, sorted by prefix.
// The union answers it from the mounts it was built from; a wrapper
// forwards it, correcting what it changes (a read-only rule of policy makes
// the mounts it covers read-only). Like Describe and Capabilities, the
// table is fixed when the tree is built, so the call takes no context and
// cannot fail.
type MountTabler interface {
	Mounts() []MountInfo
}

// SyncFS makes changes durable by name: fsync of a directory (and syncfs)
// through the kernel face. A mount that cannot sync less than everything
// syncs everything. A mount with nothing to make durable need not
// implement it; [Sync] then succeeds, as fsync does on tmpfs.
type SyncFS interface {
	FS
	Sync(ctx context.Context, name string) error
}

// PageSink receives content a mount read ahead of its callers: all of the
// regular file name (a name of the tree the sink was registered with),
// from offset 0. data is the mount's and valid only during the call: a
// sink copies what it keeps.
type PageSink func(name string, data []byte)

// PageOfferer is implemented by a mount that reads ahead (a git mount
// decoding the files a scan is about to read, see package readpattern):
// it offers what it read to the sink a face registered, so that the face
// can put it where the next read finds it without asking (the kernel's
// page cache, through fusefs's "store these pages" hook). OfferPages
// registers sink, replacing the one before (nil: none), and reports
// whether fsys offers pages at all. Offers are an optimisation only: a
// sink may drop any, and a wrapper that decides about reads (policy's
// path rules) drops those it would refuse, so a denied file's content
// never reaches a face this way either.
type PageOfferer interface {
	OfferPages(sink PageSink) bool
}

// QuietReadFS is implemented by a mount that can read without changing
// access times (O_NOATIME): for what is read ahead of a reader that may
// never come (a remote mount's read-ahead), which must not look like a
// read. Each fails, with fs.ErrPermission, where it cannot be quiet (a
// file the process does not own); the caller then does not read it.
type QuietReadFS interface {
	FS
	OpenQuiet(ctx context.Context, name string) (File, error)
	ReadDirQuiet(ctx context.Context, name string) ([]DirEntry, error)
}

// StatDirFS lists a directory together with the attributes of its entries,
// for a caller that would otherwise Stat every entry (the kernel face
// answering READDIRPLUS). attrs[i] is what Stat of entries[i] reports. It
// is an optimisation only: a wrapper that cannot forward it exactly (a
// policy decorator) does not implement it, and callers fall back to Stat.
type StatDirFS interface {
	FS
	StatDir(ctx context.Context, name string) (entries []DirEntry, attrs []Attr, err error)
}
