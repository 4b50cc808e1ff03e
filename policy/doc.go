// Package policy holds the rules that bind both faces of a workspace:
// decorators over a [mounts.FS] that cmd/vfsmount stacks below the kernel
// face and the tool face alike, so a rule that binds the tools binds the
// shell too, plus the approval command for effectful tool calls.
//
// # The stack
//
//	union ─ Guard (path rules) ─ Audit (log) ─┬─ fusefs (kernel face)
//	                                          └─ Observe ─ agentbridge (tool face)
//
// Audit sits above Guard so that refused attempts are logged too. In a
// dry run the tool face gets [Freeze] of the same tree and the kernel face
// is mounted read-only. Guard and Freeze are mounts.Intercept wrappers and
// Audit a mounts.Watch one, so each offers exactly what it wraps and
// forwards the mount table; Guard corrects the table under its read_only
// rules.
//
// # Path rules
//
// [Rules] name workspace paths with gitignore patterns matched by go-git's
// matcher, as if one .gitignore file sat at the workspace root:
// "*.env" matches at any depth, "/repo/secrets/" is anchored and covers
// the directory and everything below it, "!keep.env" re-includes. A
// deny_read match fails reads of content (EACCES) but leaves the entry
// visible to Stat and to listings of its parent; a deny_write match fails
// every mutation (EACCES); a read_only prefix fails mutations at or below
// it with EROFS, as a read-only mount does.
//
// # Audit
//
// [AuditLog] is a JSON Lines file with one line per mutation (from
// [Audit]) and one per tool call ([AuditLog.ToolCall]). See [Record] for
// the fields and [AuditLog] for when lines are fsynced.
//
// # Approvals
//
// [Approver] runs an external command before an effectful tool call and
// fails closed. Approvals do not apply to the kernel face; see [Approver].
//
// # Limitations
//
//   - Rules are on names, checked when a name is used: a file opened
//     before, or content reachable through a hard link made outside the
//     workspace, is not covered (see [Guard]).
//   - The audit log records the caller a context carries; a kernel write
//     is attributed to the process that opened the file.
package policy
