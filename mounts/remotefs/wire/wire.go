// Package wire is the protocol between a remote mount (package remotefs,
// in the daemon) and its peer (package peer, on the remote machine): the
// message set, the handshake and the codec. docs/remote-protocol.md
// describes it for a reader who does not read Go.
//
// A connection is one byte stream in each direction (an ssh channel, the
// stdio of `kubectl exec`, a pipe in tests). Each side first writes one
// hello line, "vfsmount-remote <version> <build>\n", and reads the other's;
// a peer of another protocol version is refused before any message is
// decoded. Then the daemon sends [Request]s and the peer sends
// [Response]s, each a gob value on the stream. Requests carry an ID and are
// answered by ID, in any order, so any number may be in flight: the link's
// latency is paid once per batch of independent calls, not once per call.
// Requests that change names or files, and every request on a file
// opened for writing, are applied in the order they were sent, one at a
// time; so changes may be pipelined without waiting for each answer. The
// daemon names each file it opens (Request.Handle), so that requests on
// it may follow the open before its answer.
// A response with ID 0 is unsolicited: a batch of change events.
package wire

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Version is the protocol version. A change to the meaning of any field,
// or a new Op a peer must understand, increments it; both sides refuse a
// hello of another version.
const Version = 6

// Op names a request.
type Op uint8

// The message set. Each op lists the request fields it reads and the
// response fields it fills; see docs/remote-protocol.md.
const (
	OpStat        Op = iota + 1 // Name → Attr
	OpStatDir                   // Name → Entries (each with its Attr): a listing in one round trip
	OpReadLink                  // Name → Target
	OpOpen                      // Name, Flag, Mode, Quiet, Handle (the daemon's), Atime, Mtime (of a file it creates) → Handle, Attr, Data (whole content when small), EOF
	OpRead                      // Handle, Off, Size → Data, EOF
	OpWrite                     // Handle, Off, Data → N (pipelined: applied in order per handle)
	OpTruncateH                 // Handle, Size
	OpSyncH                     // Handle: answered once the peer's fsync returned
	OpClose                     // Handle: answered after every earlier request on it
	OpFstat                     // Handle → Attr
	OpTruncate                  // Name, Size
	OpMkdir                     // Name, Mode, Atime, Mtime (if set)
	OpUnlink                    // Name
	OpRmdir                     // Name
	OpRename                    // Name, Name2, Flag (mounts.RenameFlags)
	OpSymlink                   // Target, Name
	OpLink                      // Name, Name2
	OpMknod                     // Name, Mode, Dev
	OpChmod                     // Name, Mode
	OpChown                     // Name, Uid, Gid
	OpChtimes                   // Name, Atime, Mtime
	OpGetXattr                  // Name, Xattr → Data
	OpListXattr                 // Name → Names
	OpSetXattr                  // Name, Xattr, Data, Flag
	OpRemoveXattr               // Name, Xattr
	OpStatFS                    // → StatFS
	OpSync                      // Name
	OpWatch                     // start the change stream (responses with ID 0)
	OpGrep                      // Grep → Matches: a search run on the peer
	OpExec                      // Exec → ExecID; output arrives as ID-0 responses
	OpExecInput                 // ExecID, Data, EOF: the command's stdin
	OpExecSignal                // ExecID, Signal
	OpPrefetch                  // Names, Size → Tree, Files, Names: read-ahead of subtrees (see Prefetch)
	opMax
)

var opNames = [...]string{
	OpStat: "stat", OpStatDir: "readdir", OpReadLink: "readlink", OpOpen: "open",
	OpRead: "read", OpWrite: "write", OpTruncateH: "ftruncate", OpSyncH: "fsync",
	OpClose: "close", OpFstat: "fstat", OpTruncate: "truncate", OpMkdir: "mkdir",
	OpUnlink: "unlink", OpRmdir: "rmdir", OpRename: "rename", OpSymlink: "symlink",
	OpLink: "link", OpMknod: "mknod", OpChmod: "chmod", OpChown: "chown",
	OpChtimes: "chtimes", OpGetXattr: "getxattr", OpListXattr: "listxattr",
	OpSetXattr: "setxattr", OpRemoveXattr: "removexattr", OpStatFS: "statfs",
	OpSync: "sync", OpWatch: "watch", OpGrep: "grep", OpExec: "exec",
	OpExecInput: "exec-input", OpExecSignal: "exec-signal", OpPrefetch: "prefetch",
}

func (o Op) String() string {
	if o > 0 && o < opMax {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Valid reports whether o is an op of this version.
func (o Op) Valid() bool { return o > 0 && o < opMax }

// Changes reports whether req, not on an open file, may change a name or
// a file: such requests are applied on the peer's change queue, in the
// order sent, as is every request on a file opened for writing.
func Changes(req *Request) bool {
	switch req.Op {
	case OpStat, OpStatDir, OpReadLink, OpGetXattr, OpListXattr,
		OpStatFS, OpWatch, OpGrep, OpPrefetch, OpExec, OpExecInput, OpExecSignal:
		return false
	case OpOpen:
		return mounts.WantsWrite(req.Flag) || req.Flag&(os.O_CREATE|os.O_TRUNC) != 0
	case OpRead, OpWrite, OpTruncateH, OpSyncH, OpClose, OpFstat:
		return false // by its handle
	}
	return true
}

// Touched is what a change may have changed, and what its answer's After
// reports: its names, each followed by its parent (the root has none).
func Touched(req *Request) []string {
	var names []string
	for _, n := range []string{req.Name, req.Name2} {
		if n == "" || !mounts.ValidPath(n) {
			continue
		}
		names = append(names, n)
		if parent, _ := mounts.Split(n); n != "." {
			names = append(names, parent)
		}
	}
	return names
}

// Request is one call from the daemon. Only the fields its Op names are
// set; gob sends no zero field.
type Request struct {
	ID     uint64
	Op     Op
	Name   string
	Name2  string
	Target string
	Handle uint64
	Off    int64
	Size   int64
	Flag   int
	Mode   fs.FileMode
	Dev    uint32
	Uid    int
	Gid    int
	Atime  time.Time
	Mtime  time.Time
	Xattr  string
	Data   []byte
	Grep   *Grep
	Exec   *Exec
	ExecID uint64
	EOF    bool
	Signal int
	// Names are OpPrefetch's directories to walk, in order.
	Names []string
	// Quiet asks OpOpen, for reading, to leave the file's access time
	// as it was, as the read-ahead reads (mounts.QuietReadFS): a file
	// opened ahead that no program reads is not marked read.
	Quiet bool
	// Posted marks a change the daemon answered before sending it
	// (write-behind): an open that creates, a mkdir. If the peer then
	// fails it, a later change naming the same name that the daemon sent
	// before it read that failure (Seen below the failure's number) is
	// refused: a program that made a lock file a moment after another
	// machine did must not remove or rename the other's.
	Posted bool
	// Seen is how many failures of posted changes the daemon had read
	// when it sent this change.
	Seen uint64
	// States asks a write for its answer's After, as a change's has:
	// the daemon answered it before sending it (a file created here,
	// written), and keeps what the peer made of the file.
	States bool
}

// Response answers the request of the same ID (or, with ID 0, carries
// events). Err is nil on success.
type Response struct {
	ID      uint64
	Err     *Error
	Attr    Attr
	Entries []Entry
	Target  string
	Handle  uint64
	Data    []byte
	EOF     bool
	N       int
	Names   []string
	StatFS  mounts.FSStat
	Matches []Match
	More    bool // Grep: the result was cut at Grep.Limit
	ExecID  uint64
	Events  []Event
	// Tree and Files answer OpPrefetch (Names then holds the
	// directories it did not reach, in order, for the next request).
	Tree  []Dir
	Files []File
	// After answers a request on the change queue that names files: what
	// its names and their parents are once it was applied, as the change
	// stream would say (EventChanged states), taken before any later
	// change. The daemon keeps them as it keeps a stat's answers.
	After []Event
	// Owner answers OpWatch: who the peer creates files as, for the
	// attributes a daemon gives a file it created before the answer.
	Owner *Owner
}

// Owner is the peer's user: a file it creates is the user's, of the
// user's group or of a setgid parent's, with exactly the mode asked.
type Owner struct {
	Uid, Gid uint32
}

// Dir is a directory's listing, with every entry's attributes.
type Dir struct {
	Name    string
	Entries []Entry
}

// File is a small regular file's whole content, as of Attr.
type File struct {
	Name string
	Attr Attr
	Data []byte
}

// Prefetch is OpPrefetch's walk: each directory of Names in turn, depth
// first, in listing order (the order a program walking the tree reads
// it: tar, cp -r, grep -r): its listing, then the content of its regular
// files small enough for an open to answer whole, then its
// subdirectories. It stops, between two directories, once Size bytes of
// content or PrefetchEntries names are in the answer, and says where. What it answers is what a stat, a listing and
// an open would have: the daemon caches it under the same rules.
const PrefetchEntries = 4096

// Attr is mounts.Attr on the wire.
type Attr struct {
	Mode                fs.FileMode
	Size, Blocks        int64
	Ino                 uint64
	Nlink, Uid, Gid     uint32
	Rdev                uint32
	Atime, Mtime, Ctime time.Time
}

// Entry is one name of a listing with its attributes.
type Entry struct {
	Name string
	Attr Attr
}

// FromAttr converts a mount's attributes.
func FromAttr(a mounts.Attr) Attr {
	return Attr{Mode: a.Mode, Size: a.Size, Blocks: a.Blocks, Ino: a.Ino, Nlink: a.Nlink,
		Uid: a.Uid, Gid: a.Gid, Rdev: a.Rdev, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime}
}

// Mounts converts back.
func (a Attr) Mounts() mounts.Attr {
	return mounts.Attr{Mode: a.Mode, Size: a.Size, Blocks: a.Blocks, Ino: a.Ino, Nlink: a.Nlink,
		Uid: a.Uid, Gid: a.Gid, Rdev: a.Rdev, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime}
}

// Grep is a content search run on the peer: every regular file at or
// below Dir whose content matches the RE2 expression Pattern (Go's regexp
// syntax), as the tool face's grep would find it there.
type Grep struct {
	Dir        string
	Pattern    string
	IgnoreCase bool
	// Globs filter the names searched (doublestar, relative to Dir);
	// none means every file.
	Globs []string
	// FilesOnly answers with the names only (grep -l).
	FilesOnly bool
	// Limit caps the matches (or names) returned; 0 means no cap.
	Limit int
	// Content, when above 0, asks for the whole content of the files
	// that match and that an open would answer whole (256 KiB at most),
	// in Response.Files, until Content bytes in all: the daemon caches
	// them, so that the caller reading the files it found does not cross
	// the link again. A peer that predates it sends none.
	Content int64
}

// Match is one matching line (Line > 0) or, in FilesOnly mode, one file.
type Match struct {
	Name string
	Line int
	Text string
}

// Exec runs a command on the peer's machine.
type Exec struct {
	Argv []string
	// Dir is the working directory, a name of the served tree.
	Dir string
	Env []string
	// Stdin says input follows in OpExecInput requests; without it the
	// command's stdin is empty.
	Stdin bool
	// Root, when set, is the path at which the command sees the served
	// directory (/workspace), where the peer can arrange it.
	Root string
	// DirFD3 gives the command a pipe at fd 3; what it wrote there (its
	// final directory, as Root-based path where it maps) comes with
	// EventExit as Data.
	DirFD3 bool
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventChanged: Name (and its parent's listing) may have changed.
	EventChanged EventKind = iota + 1
	// EventOverflow: the peer lost track (a watch queue overflowed):
	// every cached answer is stale.
	EventOverflow
	// EventStdout, EventStderr: output of ExecID.
	EventStdout
	EventStderr
	// EventExit: ExecID ended with Status (a signal as 128+n); Data is
	// what it wrote to fd 3 (Exec.DirFD3), Name is "rooted" when it ran
	// with the directory at Exec.Root.
	EventExit
)

// Event is one item of the change stream or of a command's output.
type Event struct {
	Kind   EventKind
	Name   string
	ExecID uint64
	Data   []byte
	Status int
	// State is what an EventChanged name is as the batch is sent (its
	// Attr, or missing). The peer takes it while no request that
	// changes names is being applied, and sends it before answering
	// any that starts after: a state is never older than an answer
	// sent before it (docs/remote-protocol.md, "Events"), so the
	// daemon may keep it as it keeps a stat's answer.
	State State
	Attr  Attr
}

// State says what an EventChanged carries of its name.
type State uint8

const (
	// StateUnknown: the name's state is not known (the daemon asks).
	StateUnknown State = iota
	// StateExists: the name exists, with the event's Attr.
	StateExists
	// StateMissing: the name does not exist.
	StateMissing
)

// Error is an error on the wire: an errno, or one of the contract's
// sentinel errors that is not an errno (so that errors.Is on the daemon's
// side answers as it would on the peer's), and the peer's text.
type Error struct {
	Op, Path string
	Errno    syscall.Errno
	Sentinel Sentinel
	Msg      string
}

// Sentinel names an error of package mounts or io/fs that is not an
// errno.
type Sentinel uint8

const (
	SentinelNone Sentinel = iota
	SentinelDenied
	SentinelEscapes
	SentinelNotExist
	SentinelExist
	SentinelPermission
	SentinelInvalid
	SentinelClosed
	SentinelUnsupported
)

// sentinels are tried in order: ErrDenied also matches ErrPermission.
var sentinels = []struct {
	s   Sentinel
	err error
}{
	{SentinelDenied, mounts.ErrDenied},
	{SentinelEscapes, mounts.ErrEscapes},
	{SentinelNotExist, fs.ErrNotExist},
	{SentinelExist, fs.ErrExist},
	{SentinelPermission, fs.ErrPermission},
	{SentinelInvalid, fs.ErrInvalid},
	{SentinelClosed, fs.ErrClosed},
	{SentinelUnsupported, errors.ErrUnsupported},
}

// FromError converts an error for the wire.
func FromError(err error) *Error {
	if err == nil {
		return nil
	}
	e := &Error{Msg: err.Error(), Errno: syscall.EIO}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		e.Op, e.Path, e.Msg = pe.Op, pe.Path, pe.Err.Error()
	}
	var errno syscall.Errno
	if errors.Is(err, mounts.ErrDenied) || errors.Is(err, mounts.ErrEscapes) || !errors.As(err, &errno) {
		for _, s := range sentinels {
			if errors.Is(err, s.err) {
				e.Sentinel = s.s
				return e
			}
		}
		return e // EIO, with the peer's words
	}
	e.Errno = errno
	return e
}

// Err converts back to the *fs.PathError the contract asks for, naming
// name (the caller's name, not the peer's) unless the peer named the
// second name of a two-name call.
func (e *Error) Err(op, name string) error {
	if e == nil {
		return nil
	}
	var inner error = e.Errno
	for _, s := range sentinels {
		if s.s == e.Sentinel {
			inner = s.err
		}
	}
	if e.Sentinel == SentinelNone && e.Errno == syscall.EIO && e.Msg != "" && e.Msg != syscall.EIO.Error() {
		inner = &peerError{msg: e.Msg}
	}
	path := name
	if e.Path != "" && (op == "rename" || op == "link") {
		path = e.Path
	}
	return &fs.PathError{Op: op, Path: path, Err: inner}
}

// peerError is an error the peer had no errno for: EIO, in its words.
type peerError struct{ msg string }

func (p *peerError) Error() string { return p.msg }
func (p *peerError) Unwrap() error { return syscall.EIO }

// Hello is the first line each side writes.
func Hello(build string) string {
	if build == "" {
		build = "unknown"
	}
	return fmt.Sprintf("vfsmount-remote %d %s\n", Version, strings.ReplaceAll(build, " ", "_"))
}

// ErrVersion is returned by ReadHello for a peer of another protocol
// version; its text names both.
type ErrVersion struct {
	Theirs string
}

func (e *ErrVersion) Error() string {
	return fmt.Sprintf("the other side speaks %q, not vfsmount-remote protocol %d", e.Theirs, Version)
}

// ReadHello reads the other side's hello line and returns its build. The
// line is read byte by byte so that nothing after it is consumed.
func ReadHello(r io.Reader) (build string, err error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < 256 {
		if _, err := io.ReadFull(r, b); err != nil {
			if len(line) == 0 {
				return "", fmt.Errorf("no hello: %w", err)
			}
			return "", &ErrVersion{Theirs: string(line)}
		}
		if b[0] == '\n' {
			f := strings.Fields(string(line))
			if len(f) != 3 || f[0] != "vfsmount-remote" || f[1] != fmt.Sprint(Version) {
				return "", &ErrVersion{Theirs: string(line)}
			}
			return f[2], nil
		}
		line = append(line, b[0])
	}
	return "", &ErrVersion{Theirs: string(line) + "…"}
}

// Codec sends and receives messages on one stream. Send is safe for
// concurrent use; Recv is called by one reader.
type Codec struct {
	mu    sync.Mutex
	since atomic.Int64 // unix nanoseconds when the send in progress began; 0: none
	bw    *bufio.Writer
	enc   *gob.Encoder
	dec   *gob.Decoder
}

// NewCodec makes a codec over r and w, after the hellos.
func NewCodec(r io.Reader, w io.Writer) *Codec {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &Codec{bw: bw, enc: gob.NewEncoder(bw), dec: gob.NewDecoder(bufio.NewReaderSize(r, 64<<10))}
}

// Stuck is how long the send in progress has been writing (0: none): a
// link that takes no bytes shows here before any answer is missed.
func (c *Codec) Stuck() time.Duration {
	t := c.since.Load()
	if t == 0 {
		return 0
	}
	return time.Since(time.Unix(0, t))
}

// Send writes one message and flushes.
func (c *Codec) Send(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.since.Store(time.Now().UnixNano())
	defer c.since.Store(0)
	if err := c.enc.Encode(v); err != nil {
		return err
	}
	return c.bw.Flush()
}

// SendBatch writes several messages with one flush: a batch costs one
// write on the link.
func (c *Codec) SendBatch(vs ...any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.since.Store(time.Now().UnixNano())
	defer c.since.Store(0)
	for _, v := range vs {
		if err := c.enc.Encode(v); err != nil {
			return err
		}
	}
	return c.bw.Flush()
}

// Recv reads one message into v.
func (c *Codec) Recv(v any) error { return c.dec.Decode(v) }
