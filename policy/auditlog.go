package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Audit log defaults.
const (
	// DefaultAuditMaxBytes is the size at which the log is rotated when
	// AuditOptions.MaxBytes is 0.
	DefaultAuditMaxBytes = 64 << 20
	// DefaultSyncInterval bounds how long a mutation line may sit in the
	// page cache before it is fsynced.
	DefaultSyncInterval = time.Second
)

// AuditOptions configure [OpenAudit].
type AuditOptions struct {
	// Path is the log file; it is created (mode 0600) or appended to.
	// It must not lie inside the workspace's own kernel mount.
	Path string
	// MaxBytes rotates the log when a line would take it past this size:
	// Path is renamed to Path.1 (replacing an older one) and a new file
	// is started. 0 means DefaultAuditMaxBytes; negative never rotates.
	MaxBytes int64
	// SyncInterval is how often mutation lines are fsynced; 0 means
	// DefaultSyncInterval. Tool-call lines are fsynced at once.
	SyncInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives write and rotation failures; nil is silent.
	Logger *slog.Logger
}

// AuditLog is an append-only JSON Lines file: one object per line, one
// line per mutation of the tree (from [Audit]) and per tool call
// ([AuditLog.ToolCall]). It is safe for concurrent use.
//
// # Durability
//
// Each line reaches the file with one write(2) as it happens, so it
// survives a crash of this process. A tool-call line is fsynced before
// ToolCall returns (before the harness sees the result). Mutation lines
// are fsynced in batches, at most SyncInterval after they were written,
// and on Close: fsyncing each kernel write would make every small-file
// write wait on the disk.
type AuditLog struct {
	path     string
	maxBytes int64
	now      func() time.Time
	log      *slog.Logger

	mu    sync.Mutex
	f     *os.File
	size  int64
	dirty bool // written since the last fsync
	buf   []byte

	stop chan struct{}
	done chan struct{}
}

// OpenAudit opens (creating) the log file. An error names the path.
func OpenAudit(opts AuditOptions) (*AuditLog, error) {
	if opts.Path == "" {
		return nil, errors.New("audit: no path")
	}
	l := &AuditLog{path: opts.Path, maxBytes: opts.MaxBytes, now: opts.Now, log: opts.Logger,
		stop: make(chan struct{}), done: make(chan struct{})}
	if l.maxBytes == 0 {
		l.maxBytes = DefaultAuditMaxBytes
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if err := l.open(); err != nil {
		return nil, fmt.Errorf("audit: cannot open %s: %w", opts.Path, unwrapPath(err))
	}
	every := opts.SyncInterval
	if every <= 0 {
		every = DefaultSyncInterval
	}
	go l.syncer(every)
	return l, nil
}

func (l *AuditLog) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return errors.New("not a regular file")
	}
	l.f, l.size = f, st.Size()
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// syncer fsyncs batched lines every interval until Close.
func (l *AuditLog) syncer(every time.Duration) {
	defer close(l.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			// fsync outside the lock: it can take milliseconds, and
			// writers (kernel requests) must not wait for it. A
			// rotation meanwhile closes f after fsyncing it itself, so
			// an error on a closed file is harmless.
			l.mu.Lock()
			f := l.f
			due := l.dirty && f != nil
			l.dirty = false
			l.mu.Unlock()
			if due {
				if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
					l.log.Error("audit: fsync failed", "err", err)
				}
			}
		}
	}
}

func (l *AuditLog) syncLocked() {
	if !l.dirty || l.f == nil {
		return
	}
	if err := l.f.Sync(); err != nil {
		l.log.Error("audit: fsync failed", "err", err)
	}
	l.dirty = false
}

// Close fsyncs and closes the log. Lines written after Close are dropped.
func (l *AuditLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.f == nil {
		l.mu.Unlock()
		return nil
	}
	close(l.stop)
	l.dirty = true
	l.syncLocked()
	err := l.f.Close()
	l.f = nil
	l.mu.Unlock()
	<-l.done
	return err
}

// Record is one line of the log. Fields that do not apply are omitted;
// time, face, op and outcome are always there.
type Record struct {
	Time time.Time `json:"time"`
	// Face is "kernel", "tool", "operator" (a command of the person
	// running the workspace: the CLI's diff, commit, reset and checkpoint,
	// the JSON-RPC workspace.* and checkpoint.* methods) or "internal" (the
	// workspace's own work: no caller in the context, or the kernel
	// face's on a program's behalf, such as the open that keeps a file
	// about to lose its last name readable for a program that holds it).
	Face string `json:"face"`
	// Pid and Uid identify a kernel-face caller.
	Pid *uint32 `json:"pid,omitempty"`
	Uid *uint32 `json:"uid,omitempty"`
	// Call is the tool call id on the tool face.
	Call string `json:"call,omitempty"`
	// Op is the mutation (create, write, truncate, mkdir, unlink, rmdir,
	// rename, link, symlink, mknod, chmod, chown, chtimes, setxattr,
	// removexattr; restore and reset for a name a checkpoint restore or a
	// writable git mount's reset changed; commit for a writable git
	// mount's commit to a branch) or "call" for a tool call.
	Op string `json:"op"`
	// Path is the workspace path changed; To the second name of a rename
	// or link (the branch of a commit); Target the target of a symlink
	// (the id of a commit).
	Path   string `json:"path,omitempty"`
	To     string `json:"to,omitempty"`
	Target string `json:"target,omitempty"`
	// Bytes written through one open file (write); Size of a truncate.
	Bytes *int64 `json:"bytes,omitempty"`
	Size  *int64 `json:"size,omitempty"`
	// Mode of create, mkdir, mknod and chmod, in octal.
	Mode string `json:"mode,omitempty"`
	// Type of a mknod: "fifo", "socket", or "char MAJOR:MINOR" and
	// "block MAJOR:MINOR" for a device.
	Type string `json:"type,omitempty"`
	// Attr is the extended attribute name of setxattr and removexattr.
	Attr string `json:"attr,omitempty"`
	// Tool, Verb, Args and Paths describe a tool call; Args has file
	// contents replaced by their lengths.
	Tool  string          `json:"tool,omitempty"`
	Verb  string          `json:"verb,omitempty"`
	Args  json.RawMessage `json:"args,omitempty"`
	Paths []string        `json:"paths,omitempty"`
	// Outcome is "ok", "denied" (by policy or approval), "dry-run" or
	// "error"; Error says which error (never file contents or host paths).
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Ms is the duration of a tool call in milliseconds.
	Ms *float64 `json:"ms,omitempty"`
}

// ToolCall describes one finished tool call for [AuditLog.ToolCall].
type ToolCall struct {
	CallID   string
	Tool     string // as called, in the caller's dialect
	Verb     string // canonical
	Args     json.RawMessage
	Paths    []string
	Outcome  string
	Error    string
	Duration time.Duration
}

// ToolCall appends the line of a finished tool call and fsyncs it.
func (l *AuditLog) ToolCall(c ToolCall) {
	ms := float64(c.Duration.Microseconds()) / 1000
	l.write(&Record{Face: string(mounts.FaceTool), Call: c.CallID, Op: "call", Tool: c.Tool, Verb: c.Verb,
		Args: c.Args, Paths: c.Paths, Outcome: c.Outcome, Error: c.Error, Ms: &ms}, true)
}

// Change appends the line of one change a service made below the faces,
// with the caller of ctx: op is "restore" or "reset", p the workspace path
// it changed (or refused to change: err says why, as for any mutation).
func (l *AuditLog) Change(ctx context.Context, op, p string, err error) {
	l.mutation(ctx, &Record{Op: op, Path: p}, err)
}

// Commit appends the line of a writable git mount's commit, with the
// caller of ctx: the mount at prefix was committed as id to ref (err: it
// failed). The workspace does not change; the source repository does.
func (l *AuditLog) Commit(ctx context.Context, prefix, ref, id string, err error) {
	l.mutation(ctx, &Record{Op: "commit", Path: prefix, To: ref, Target: id}, err)
}

// mutation appends the line of one mutation, with the caller of ctx.
func (l *AuditLog) mutation(ctx context.Context, r *Record, err error) {
	if c, ok := mounts.CallerFrom(ctx); ok && c.Face != "" {
		r.Face = string(c.Face)
		if c.Face == mounts.FaceKernel {
			pid, uid := c.Pid, c.Uid
			r.Pid, r.Uid = &pid, &uid
		}
		r.Call = c.CallID
	} else {
		r.Face = string(mounts.FaceInternal)
	}
	r.Outcome, r.Error = outcome(err)
	l.write(r, false)
}

// outcome classifies err for a line.
func outcome(err error) (string, string) {
	switch {
	case err == nil:
		return "ok", ""
	case errors.Is(err, mounts.ErrDenied):
		return "denied", "denied by policy"
	}
	return "error", unwrapPath(err).Error()
}

// write encodes r as one line and appends it, rotating first when the
// line would take the file past maxBytes.
func (l *AuditLog) write(r *Record, sync bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	r.Time = l.now().UTC()
	b, err := json.Marshal(r)
	if err != nil { // only a RawMessage that is not JSON; never expected
		l.log.Error("audit: cannot encode a line", "op", r.Op, "err", err)
		return
	}
	l.buf = append(append(l.buf[:0], b...), '\n')
	if l.maxBytes > 0 && l.size > 0 && l.size+int64(len(l.buf)) > l.maxBytes {
		l.rotateLocked()
		if l.f == nil {
			return
		}
	}
	n, err := l.f.Write(l.buf)
	l.size += int64(n)
	l.dirty = true
	if err != nil {
		l.log.Error("audit: write failed", "err", err)
		return
	}
	if sync {
		l.syncLocked()
	}
}

// rotateLocked renames the full log to path.1 and starts a new one. When
// the new one cannot be opened, the old one is kept open (and grows).
func (l *AuditLog) rotateLocked() {
	if err := l.f.Sync(); err != nil {
		l.log.Error("audit: fsync before rotation failed", "err", err)
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		l.log.Error("audit: rotation failed; the log keeps growing", "err", err)
		return
	}
	old := l.f
	if err := l.open(); err != nil {
		l.log.Error("audit: cannot start a new log after rotation; appending to the rotated one", "err", err)
		l.f = old
		return
	}
	old.Close()
	l.dirty = false
}
