package main

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes, the same for every subcommand.
const (
	exitOK      = 0 // success
	exitFailure = 1 // runtime failure: a mount that failed, a busy mountpoint
	exitUsage   = 2 // usage or config error: nothing was done
)

// exitError carries the exit code of a failed command. A nil err means
// "exit with code, print nothing" (status reports its answer that way).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a usage or config error: exit 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// usageError marks err as a usage or config error: exit 2.
func usageError(err error) error {
	return &exitError{code: exitUsage, err: err}
}

// exitCode maps an error returned by a command to the process exit code:
// an *exitError says, anything else is a runtime failure.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// errorLine renders err as the single line printed on failure: newlines
// that a library put into its message are folded, so the user always gets
// one line naming the problem.
func errorLine(err error) string {
	s := err.Error()
	s = strings.ReplaceAll(s, "\r", "")
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' })
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	return strings.Join(fields, " ")
}

// specError is a bad mount spec or config entry: exit 2, and the message
// starts with where the spec came from. Mount type build functions return
// one (via specErrorf) for bad input such as a missing source directory,
// so the user gets exit 2 rather than 1.
type specError struct {
	origin string
	msg    string
	cause  error
}

func (e *specError) Error() string { return e.origin + ": " + e.msg }

// Unwrap keeps the cause (a %w argument) for errors.Is.
func (e *specError) Unwrap() error { return e.cause }

// specErrorf is a usage error about one spec. Like fmt.Errorf, a %w verb
// keeps its argument as the cause.
func specErrorf(origin, format string, args ...any) error {
	wrapped := fmt.Errorf(format, args...)
	return &exitError{code: exitUsage, err: &specError{origin: origin, msg: wrapped.Error(), cause: errors.Unwrap(wrapped)}}
}
