package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/vfsmount/vfsmount/mounts"
)

// DefaultApprovalTimeout is how long an approval command may take when
// ApprovalOptions.Timeout is 0.
const DefaultApprovalTimeout = 30 * time.Second

// ApprovalVerbs are the effectful tool verbs approvals can apply to.
var ApprovalVerbs = []string{"write", "edit", "delete", "shell"}

// maxReason caps the reason quoted from an approval command's stdout.
const maxReason = 1000

// ApprovalOptions configure [NewApprover].
type ApprovalOptions struct {
	// Command is the argv of the approval command; it is run directly,
	// not through a shell (write ["sh", "-c", "..."] for one).
	Command []string
	// On lists the verbs that need approval; empty means all of
	// ApprovalVerbs.
	On []string
	// Timeout bounds one approval; 0 means DefaultApprovalTimeout.
	Timeout time.Duration
}

// Approver asks an external command before effectful tool calls. It is
// for the tool face only: a kernel-face write cannot wait on a person
// (the writing process would hang in the kernel, and most programs treat
// a slow write as a hung disk), so path rules are what bind the kernel.
//
// The command gets the call as one JSON object on stdin. Exit status 0
// allows the call; any other status denies it, with the command's stdout
// (trimmed, at most 1000 bytes) as the reason. A timeout, a death by
// signal, or a command that cannot be started denies: approvals fail
// closed. The command runs in its own process group, killed whole at the
// timeout.
type Approver struct {
	argv    []string
	on      []string
	timeout time.Duration
}

// NewApprover checks opts: the command must exist now (a missing approval
// command would deny every call, which is better found at start), every
// verb of On must be an approval verb and the timeout positive.
func NewApprover(opts ApprovalOptions) (*Approver, error) {
	if len(opts.Command) == 0 || opts.Command[0] == "" {
		return nil, errors.New("approval: command: no command given")
	}
	path, err := exec.LookPath(opts.Command[0])
	if err != nil {
		return nil, fmt.Errorf("approval: command %q: not found or not executable", opts.Command[0])
	}
	for _, v := range opts.On {
		if !slices.Contains(ApprovalVerbs, v) {
			return nil, fmt.Errorf("approval: on: unknown verb %q (known: %s)", v, strings.Join(ApprovalVerbs, ", "))
		}
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("approval: timeout: must be positive, got %s", opts.Timeout)
	}
	a := &Approver{argv: append([]string{path}, opts.Command[1:]...), on: opts.On, timeout: opts.Timeout}
	if len(a.on) == 0 {
		a.on = ApprovalVerbs
	}
	if a.timeout == 0 {
		a.timeout = DefaultApprovalTimeout
	}
	return a, nil
}

// Applies reports whether calls of the canonical verb need approval.
func (a *Approver) Applies(verb string) bool { return a != nil && slices.Contains(a.on, verb) }

// NotApproved is the error of a denied approval. errors.Is(err,
// mounts.ErrDenied) holds.
type NotApproved struct {
	// Reason is the command's stdout, or what went wrong with it.
	Reason string
}

func (e *NotApproved) Error() string { return "not approved: " + e.Reason }

// Is makes a denial a policy denial.
func (e *NotApproved) Is(target error) bool { return target == mounts.ErrDenied }

// Approve runs the command with call (JSON) on stdin. nil allows the
// call; otherwise the error is a *NotApproved.
func (a *Approver) Approve(ctx context.Context, call []byte) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Stdin = bytes.NewReader(call)
	var out capBuffer
	cmd.Stdout = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return &NotApproved{Reason: "the approval command could not be started: " + unwrapPath(err).Error()}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &NotApproved{Reason: fmt.Sprintf("the approval command timed out after %s", a.timeout)}
		}
		return &NotApproved{Reason: "the call was cancelled while awaiting approval"}
	}
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return &NotApproved{Reason: "the approval command failed: " + err.Error()}
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &NotApproved{Reason: fmt.Sprintf("the approval command crashed (%s)", ws.Signal())}
	}
	reason := strings.TrimSpace(out.String())
	if reason == "" {
		reason = fmt.Sprintf("the approval command exited with status %d", ee.ExitCode())
	}
	return &NotApproved{Reason: reason}
}

// capBuffer keeps the first maxReason bytes written to it, whole runes.
type capBuffer struct{ b []byte }

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := maxReason - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	b := c.b
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return string(b)
}
