package agentbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Codex's shell tools (dialect_codex.go), run the way codex-rs runs them
// and answered in its words:
//
//   - exec_command runs cmd and waits up to yield_time_ms. A command that
//     ends by then is reported with its exit code; one still running keeps
//     running in the caller's [Session] under a session id, and
//     write_stdin reads what it printed since (and, with tty, types into
//     it). A session keeps at most 16 processes (the least recently used
//     is stopped for a new one), none longer than Limits.MaxShellTimeout,
//     and stops them all when it closes (shell_session.go). A call
//     that is a session of its own (no [WithSession]) cannot keep one: the
//     command is stopped at yield_time_ms and the result says so.
//   - shell_command runs a command string to its end or its timeout_ms.
//
// Their output is cut as codex-rs cuts it: a token budget of about four
// bytes a token, head and tail kept, "…N tokens truncated…" between.

// Codex's unified exec bounds (codex-rs unified_exec).
const (
	execDefaultYield    = 10000 // ms
	execMinYield        = 250
	execMaxYield        = 30000
	stdinDefaultYield   = 250
	pollMinYield        = 5000
	pollMaxYield        = 300000
	execDefaultTokens   = 10000
	shellCommandTimeout = 10000 // ms, codex-rs's default exec timeout
	execTimeoutExitCode = 124   // what codex-rs reports for a timed-out command
)

// unifiedExecOutputCap is what a running process's output may pile up to
// between two reads (Codex: 1 MiB).
const unifiedExecOutputCap = 1 << 20

func (w *Workspace) execCommand(ctx context.Context, a *args) (string, error) {
	command, err := a.str("command", true)
	if err != nil {
		return "", err
	}
	yield, err := a.integer("yield_time_ms", execDefaultYield, 0, maxInt)
	if err != nil {
		return "", err
	}
	yield = min(max(yield, execMinYield), execMaxYield)
	tokens, err := a.integer("max_output_tokens", execDefaultTokens, 0, maxInt)
	if err != nil {
		return "", err
	}
	tty, err := a.boolean("tty", false)
	if err != nil {
		return "", err
	}
	shell, err := w.codexShell(a)
	if err != nil {
		return "", err
	}
	run, err := w.prepareShell(ctx, a, "cwd")
	if err != nil {
		return "", err
	}
	run.tty, run.shell = tty, shell
	if w.dryRun {
		return run.dryRun(command), nil
	}
	start := time.Now()
	buf := newOutBuf(unifiedExecOutputCap)
	run.after = buf // write_stdin reads what its jobs print later
	p, err := w.startShell(run, command, buf, nil)
	if err != nil {
		return "", err
	}
	p.buf = buf
	var notes []string
	if run.note != "" {
		notes = append(notes, run.note)
	}
	if !p.wait(ctx, time.Duration(yield)*time.Millisecond) {
		if a.sess != nil && a.sess.keeps() {
			id, pruned, err := a.sess.add(p)
			if err == nil {
				if pruned != nil {
					pruned.stop("the session had too many processes")
					notes = append(notes, fmt.Sprintf("session ID %d (%s) was stopped: a session keeps at most %d processes", pruned.id, clip(pruned.cmdline), w.maxSessionProcs))
				}
				w.bound(p)
				return codexExecText(time.Since(start), nil, id, buf.drain(), tokens, notes), nil
			}
		}
		p.stop("still running at the end of a call that keeps no session")
		notes = append(notes, "the command was still running and was stopped: this call keeps no session (a JSON-RPC connection or an MCP session does), so nothing can be read from it later")
	}
	// Codex starts every exec_command in the session's working
	// directory: a cd inside one call does not carry to the next.
	code := exitOf(p)
	notes = append(notes, w.codexJobs(a.sess, p)...)
	return codexExecText(time.Since(start), &code, 0, buf.drain(), tokens, notes), nil
}

// codexJobs keeps the jobs p's ended command left running in the session
// and says so, as notes of codex's output.
func (w *Workspace) codexJobs(s *Session, p *process) []string {
	id, note := w.keepJobs(s, p)
	switch {
	case id != 0:
		return []string{fmt.Sprintf("jobs the command started are still running under session ID %d: write_stdin with that session_id and empty chars reads their output; they are stopped when this session ends", id)}
	case note != "":
		return []string{note}
	}
	return nil
}

func (w *Workspace) writeStdin(ctx context.Context, a *args) (string, error) {
	if !a.present("session_id") {
		return "", a.missing("session_id")
	}
	id, err := a.integer("session_id", 0, 0, maxInt)
	if err != nil {
		return "", err
	}
	chars, err := a.str("chars", false)
	if err != nil {
		return "", err
	}
	yield, err := a.integer("yield_time_ms", stdinDefaultYield, 0, maxInt)
	if err != nil {
		return "", err
	}
	if chars == "" {
		yield = min(max(yield, pollMinYield), pollMaxYield)
	} else {
		yield = min(max(yield, execMinYield), execMaxYield)
	}
	tokens, err := a.integer("max_output_tokens", execDefaultTokens, 0, maxInt)
	if err != nil {
		return "", err
	}
	var p *process
	if a.sess != nil {
		p, _ = a.sess.proc(id)
	}
	if p != nil && p.buf == nil {
		p = nil // another dialect's background task, not an exec session
	}
	if p == nil {
		msg := fmt.Sprintf("write_stdin failed: Unknown process id %d", id)
		if a.sess != nil {
			if ids := a.sess.running(); len(ids) > 0 {
				msg += fmt.Sprintf(" (this session's: %s)", joinInts(ids))
			} else {
				msg += " (this session keeps no running processes)"
			}
		}
		return "", errors.New(msg)
	}
	if w.dryRun {
		return fmt.Sprintf("would write %d bytes to session ID %d (dry run: nothing was written)", len(chars), id), nil
	}
	p.touch()
	start := time.Now()
	if chars != "" {
		if !p.tty {
			return "", errors.New("write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open")
		}
		if err := p.write([]byte(chars)); err != nil && !p.exited() {
			return "", fmt.Errorf("write_stdin failed: %v", err)
		}
	}
	var notes []string
	if !p.wait(ctx, time.Duration(yield)*time.Millisecond) {
		return codexExecText(time.Since(start), nil, id, p.buf.drain(), tokens, nil), nil
	}
	if !p.running() {
		a.sess.drop(id)
	} else {
		notes = append(notes, "jobs the command started are still running under this session ID; they are stopped when this session ends")
	}
	if why := p.whyKilled(); why != "" {
		notes = append(notes, "the process was stopped: "+why)
	}
	code := exitOf(p)
	return codexExecText(time.Since(start), &code, 0, p.buf.drain(), tokens, notes), nil
}

func (w *Workspace) shellCommand(ctx context.Context, a *args) (string, error) {
	command, err := a.str("command", true)
	if err != nil {
		return "", err
	}
	maxMs := int(w.limits.MaxShellTimeout.Milliseconds())
	timeout, err := a.integer("timeout", min(shellCommandTimeout, maxMs), 1, maxMs)
	if err != nil {
		return "", err
	}
	shell, err := w.codexShell(a)
	if err != nil {
		return "", err
	}
	run, err := w.prepareShell(ctx, a, "cwd")
	if err != nil {
		return "", err
	}
	run.shell, run.keepDir = shell, true
	if w.dryRun {
		return run.dryRun(command), nil
	}
	buf := newOutBuf(unifiedExecOutputCap)
	run.after = buf
	p, err := w.startShell(run, command, buf, nil)
	if err != nil {
		return "", err
	}
	p.buf = buf
	res := w.finishShell(ctx, run, p, time.Duration(timeout)*time.Millisecond)
	content := buf.drain()
	code := exitOf(p)
	if res.killed != "" {
		content = fmt.Sprintf("command timed out after %d milliseconds\n%s", timeout, content)
		code = execTimeoutExitCode
	}
	// codex-rs's freeform exec output: the wall time to a tenth of a
	// second, the line count when the output was cut.
	secs := float64(int64(res.elapsed.Seconds()*10+0.5)) / 10
	out := truncateTokens(content, execDefaultTokens)
	sections := []string{fmt.Sprintf("Exit code: %d", code), fmt.Sprintf("Wall time: %s seconds", strconv.FormatFloat(secs, 'f', -1, 64))}
	if n := rustLines(content); n != rustLines(out) {
		sections = append(sections, fmt.Sprintf("Total output lines: %d", n))
	}
	if res.dirNote != "" {
		sections = append(sections, "Note: "+res.dirNote)
	}
	if res.jobs != 0 {
		sections = append(sections, fmt.Sprintf("Note: jobs the command started are still running under session ID %d: write_stdin with that session_id and empty chars reads their output; they are stopped when this session ends", res.jobs))
	}
	if res.jobsNote != "" {
		sections = append(sections, "Note: "+res.jobsNote)
	}
	sections = append(sections, "Output:", out)
	return strings.Join(sections, "\n"), nil
}

// codexShell is the shell a codex tool runs its command with: the
// workspace's, or the POSIX shell the shell argument names (the cwd trap
// is POSIX), as a login shell unless login is false (codex-rs's default).
// A sandbox escalation is refused: nothing runs outside the namespace.
func (w *Workspace) codexShell(a *args) ([]string, error) {
	if a.present("sandbox_permissions") {
		sp, err := a.str("sandbox_permissions", false)
		if err != nil {
			return nil, err
		}
		switch sp {
		case "", "use_default":
		case "require_escalated":
			return nil, a.errf("argument %q: %q cannot be granted here: every command already runs in the workspace namespace, with the network as the workspace was started with, and there is nothing outside it to escalate to; run it with \"use_default\"", a.key("sandbox_permissions"), sp)
		default:
			return nil, a.errf("argument %q must be \"use_default\" or \"require_escalated\", got %q", a.key("sandbox_permissions"), sp)
		}
	}
	if _, err := a.str("justification", false); err != nil {
		return nil, err
	}
	if _, err := a.strs("prefix_rule"); err != nil {
		return nil, err
	}
	login, err := a.boolean("login", true)
	if err != nil {
		return nil, err
	}
	sh := w.shell.sh
	if a.present("shell") {
		name, err := a.str("shell", true)
		if err != nil {
			return nil, err
		}
		if sh, err = lookShell(name); err != nil {
			return nil, a.errf("argument %q: %v", a.key("shell"), err)
		}
	}
	if login {
		return []string{sh, "-lc"}, nil
	}
	return []string{sh, "-c"}, nil
}

// posixShells are the shells a codex tool may name: the cwd trap needs a
// POSIX shell.
var posixShells = []string{"bash", "sh", "dash", "zsh", "ksh", "mksh"}

// lookShell finds shell in the namespace's PATH (its system directories
// are the host's, bound read-only).
func lookShell(shell string) (string, error) {
	base := filepath.Base(shell)
	ok := false
	for _, s := range posixShells {
		ok = ok || base == s
	}
	if !ok {
		return "", fmt.Errorf("%q is not a POSIX shell this workspace runs commands with (%s)", shell, strings.Join(posixShells, ", "))
	}
	cands := []string{shell}
	if !filepath.IsAbs(shell) {
		cands = nil
		for _, dir := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			cands = append(cands, filepath.Join(dir, shell))
		}
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", fmt.Errorf("%q is not installed in the workspace namespace", shell)
}

// codexExecText is codex-rs's exec_command and write_stdin result: a chunk
// id, the wall time, the exit code or the session id of a process still
// running, the token count before truncation and the output.
func codexExecText(wall time.Duration, exit *int, sessionID int, output string, tokens int, notes []string) string {
	sections := []string{"Chunk ID: " + chunkID(), fmt.Sprintf("Wall time: %.4f seconds", wall.Seconds())}
	if exit != nil {
		sections = append(sections, fmt.Sprintf("Process exited with code %d", *exit))
	} else {
		sections = append(sections, fmt.Sprintf("Process running with session ID %d", sessionID))
	}
	sections = append(sections, fmt.Sprintf("Original token count: %d", approxTokens(len(output))))
	for _, n := range notes {
		sections = append(sections, "Note: "+n)
	}
	sections = append(sections, "Output:", formattedTruncate(output, tokens))
	return strings.Join(sections, "\n")
}

// execPatchResult is an apply_patch typed into exec_command as codex-rs
// answers it: an exec result with no process behind it.
func execPatchResult(text string) string {
	return "Wall time: 0.0000 seconds\nOutput:\n" + text
}

func chunkID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func joinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ", ")
}

// codex-rs's output truncation (codex_utils_output_truncation): a token is
// about four bytes.
const approxBytesPerToken = 4

func approxTokens(n int) int { return (n + approxBytesPerToken - 1) / approxBytesPerToken }

// formattedTruncate is codex-rs's formatted_truncate_text: content within
// the budget as it is, else "Total output lines: N" and the truncation.
func formattedTruncate(content string, tokens int) string {
	if len(content) <= tokens*approxBytesPerToken {
		return content
	}
	return fmt.Sprintf("Total output lines: %d\n\n%s", rustLines(content), truncateTokens(content, tokens))
}

// truncateTokens keeps the head and the tail of content within tokens
// (half the byte budget each, on rune boundaries) and says how many
// tokens lie between: codex-rs's truncate_with_token_budget.
func truncateTokens(content string, tokens int) string {
	budget := tokens * approxBytesPerToken
	if content == "" || (tokens > 0 && len(content) <= budget) {
		return content
	}
	marker := func(removedBytes int) string {
		return fmt.Sprintf("…%d tokens truncated…", approxTokens(removedBytes))
	}
	if budget == 0 {
		return marker(len(content))
	}
	left := budget / 2
	right := budget - left
	prefixEnd, suffixStart := 0, len(content)
	tailStart := len(content) - right
	suffixStarted := false
	for i, r := range content {
		end := i + utf8.RuneLen(r)
		if end <= left {
			prefixEnd = end
			continue
		}
		if i >= tailStart && !suffixStarted {
			suffixStart, suffixStarted = i, true
		}
	}
	if suffixStart < prefixEnd {
		suffixStart = prefixEnd
	}
	return content[:prefixEnd] + marker(len(content)-budget) + content[suffixStart:]
}

// rustLines counts lines as Rust's str::lines does: a last line without a
// newline counts, the empty rest after a final newline does not.
func rustLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
