// Package agentbridge is the tool face of a workspace: the file and shell
// verbs agents are trained on (read, ls, glob, grep, write, edit, delete,
// shell), served over one [mounts.FS] (normally the union of every mount)
// and presented in the dialect of the harness that calls them.
//
// # One workspace, one namespace
//
// Every verb takes absolute workspace paths ("/repo/src/main.go") and
// resolves them in the same tree the kernel face serves. The shell verb runs
// each command in a private mount namespace where each top-level name of
// the workspace appears at its own absolute path, bound from the kernel
// face's mountpoint, so `ls /repo` in the shell and ls {path: "/repo"}
// list the same entries and a write by either is seen by the other at once.
//
// # Capabilities
//
// The verb set is derived from what the tree can do ([mounts.Capabilities]):
// read, ls, glob and grep always; write and edit when some mount can create
// files; delete when some mount can remove; shell only when [ShellOptions]
// are given and bubblewrap works on this machine (probed once in [New]; when
// it does not, the shell verb is omitted and a log line says why). An
// allowlist ([Options.Tools]) may only narrow that set: naming a verb that
// no mount can serve makes [New] fail.
//
// # Dialects
//
// The canonical dialect is "cursor" (the verb names above). "claude" and
// "codex" rename and reshape arguments for Claude Code and Codex harnesses
// (see TOOLS.md); behaviour, limits and errors are the canonical ones.
//
// # Errors
//
// A failing call is a [Result] with IsError set and one sentence a model can
// act on ("write /repo/a.go: read-only mount /repo (git@1a2b3c4); writable:
// /memory"). Nothing a caller sends makes [Workspace.Call] panic or hang:
// arguments are validated before anything is touched, edits and patches are
// computed in memory and written only when every hunk applies.
//
// # Transports
//
// This package has no transport of its own: [Workspace.Tools],
// [Workspace.Call] and [Workspace.Brief] are what every transport calls,
// and [WithCallID] carries a transport's request id into the call. Package
// jsonrpc serves them as JSON-RPC 2.0 (methods tools.list, tools.call,
// workspace.brief), one message per line, over stdio or a socket, and is
// its client; package mcpserver presents the same tools as an MCP server
// on the official Go SDK. All are safe for concurrent calls: the Workspace
// holds no per-call state.
//
// # Where things are
//
// One file per topic, so it is clear where a new verb, dialect or
// transport goes:
//
//   - workspace.go: [Workspace], [Options], [New] (which verbs are
//     offered), [Workspace.Call], [Workspace.Tools], [Workspace.Brief],
//     the mount table.
//   - verbs.go: the verb table: each verb's name, MCP hints, the
//     capability it needs and its function. A new verb starts with a row
//     there.
//   - One file per verb family: verbs_read.go (read), verbs_list.go (ls,
//     glob), grep.go (grep), verbs_write.go (write, edit, delete),
//     patch.go (the apply_patch format of edit's patchContent), shell.go
//     (shell and [Workspace.Command]).
//   - What the verbs share: args.go (decoding arguments, naming the key in
//     the caller's dialect), paths.go (workspace paths, the one rule for
//     ".." at the root, the one symlink resolver, error sentences), walk.go
//     (the one recursive directory walk), diff.go (the unified diff of dry
//     runs), policy.go (the hooks' [CallInfo], [Limits], call ids).
//   - dialect.go: the dialect registry and schema helpers;
//     dialect_cursor.go, dialect_claude.go, dialect_codex.go: one file per
//     dialect. A new dialect is a new dialect_NAME.go and a row in the
//     registry.
//   - Transports are subpackages over Tools, Call and Brief: jsonrpc
//     (JSON-RPC 2.0 over stdio or a socket, and its client) and mcpserver
//     (MCP). A new transport is a new subpackage; this package does not
//     import any.
//
// # The kernel face
//
// This package never mounts anything. The caller (cmd/vfsmount) mounts the
// kernel face, passes its mountpoint in [ShellOptions], and wraps the tree
// given to [New] with mounts.Observe so that every tool write invalidates
// the kernel's caches for the names it touched: the shell sees it at once.
//
// # Policy hooks
//
// This package enforces no policy of its own and imports none: path rules
// and the audit of changes live in decorators of the tree it is given.
// [Options] has the hooks a caller plugs policy into: BeforeCall (an
// approval; an error refuses the call), AfterCall (an audit line), DryRun
// (effectful verbs report what they would do: write the size and whether
// it creates, edit and apply_patch the unified diff, delete what it would
// remove; shell does not run) and [Limits]. Every call carries an id
// ([CallInfo]: its transport's, see [WithCallID], or a random one) into
// the tree as mounts.Caller{Face: "tool", CallID: id}, so each change can
// be traced to its call.
//
// # Limitations
//
//   - grep reads every file through the tree, policy decorators included;
//     there is no index.
//     .gitignore files are honoured in "host" mounts only, and only
//     .gitignore (not .ignore, .git/info/exclude or the global excludes
//     file ripgrep also reads).
//   - A binary file is one with a NUL byte in its first 8 KiB. ripgrep
//     looks further (its first buffer), so a file whose first NUL comes
//     later is searched here and may be skipped by ripgrep.
//   - apply_patch undoes a half-applied patch when a write fails, but the
//     undo is itself writes and may fail on a broken mount (it is logged);
//     a deleted symlink is restored as a regular file.
//   - The shell runs as the calling user in new namespaces; it is isolation
//     of the file tree, not a security boundary against a hostile root.
package agentbridge
