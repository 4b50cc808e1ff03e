// Package agentbridge is the tool face of a workspace: the file and shell
// verbs agents are trained on (read, ls, glob, grep, write, edit, delete,
// shell), served over one [mounts.FS] (normally the union of every mount)
// and presented in the dialect of the harness that calls them.
//
// # One workspace, one namespace
//
// Every verb takes workspace paths ("/repo/src/main.go"; a relative one
// is relative to the caller's current directory, see Sessions) and
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
// Two families are offered only when the host provides what they need,
// and are the same tools in every dialect, outside the dialects' own
// lists: the checkpoint tools ([Options.Checkpoints]) and semSearch,
// search by meaning, when an embeddings endpoint is configured
// ([Options.SemSearch], package semsearch); an allowlist naming semSearch
// without one makes [New] fail.
//
// # Dialects
//
// Each dialect is one harness's tools as its current release has them,
// pinned by testdata/golden/NAME.json: "cursor", the canonical one (the
// verb names above, with @cursor/sdk 1.0.18's argument names: glob
// globPattern, grep's content default and contextBefore/sort, shell
// workingDirectory, ls as a tree within a budget of names); "claude",
// @anthropic-ai/claude-code 2.1.332's Read, Write, Edit, NotebookEdit, Glob, Grep, Bash
// and TaskStop with its result shapes, a background task's output being a
// file Read reads (dialect_claude.go); and
// "codex", @openai/codex 0.171.0's tool set (dialect_codex.go says which
// tools and why): its shell is exec_command, which keeps a command
// running past yield_time_ms in the caller's session for write_stdin, and
// answers in codex-rs's words ("Process exited with code N", "Success.
// Updated the following files:").
//
// A dialect tool is one row of its table (dialectTool): a name, a schema,
// renames onto the canonical keys (aliases included), a reshape, and,
// where the harness's tool does the work differently, its own run; which
// verb it is still decides whether it is offered, what policy sees and
// its hints. An argument the tool's schema does not name is refused by
// name, never dropped. Errors and hints name the caller's tool and keys
// (toolName, argName, args.key): "Read /x: …", "call read_file with
// offset=…", "old_string occurs 2 times".
//
// # Sessions
//
// A [Session] is what a caller keeps between calls: the shell's current
// directory and the processes its shell calls left running. Relative
// paths of every verb, a patch's included, resolve against the directory;
// it starts at the first writable mount, and a `cd` in a shell call moves
// it (the shell reports its final directory on a side channel, fd 3, so
// no command is parsed for it). A transport says what a session is
// ([WithSession]): a JSON-RPC connection, an MCP session; a call without
// one is a session of its own. [Workspace.Close] ends them all.
//
// An apply_patch typed into a shell tool (a heredoc, codex's argv, or
// after `cd DIR &&`) is the edit it stands for, as Codex intercepts it:
// verbs_shell_patch.go.
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
// holds no per-call state, and what a caller keeps is its Session's.
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
//   - One file per verb family, shared by every dialect: verbs_read.go
//     (read), verbs_list.go (ls, glob), verbs_grep.go (grep),
//     verbs_write.go (write, edit, delete), verbs_patch.go (the apply_patch
//     format of edit's patchContent), verbs_shell.go (shell, and the run
//     path every shell tool shares), verbs_shell_patch.go (an apply_patch
//     typed into a shell), verbs_checkpoint.go (the checkpoint family),
//     verbs_lints.go (readLints, which runs the configured [Linter]s in
//     the shell's namespace; its output parsers in verbs_lints_parse.go),
//     verbs_semsearch.go (semSearch, over the engine in package semsearch).
//   - The shell apart from its verbs: shell_namespace.go (the bubblewrap
//     namespace: [ShellOptions], what is bound where, and
//     [Workspace.Command]), shell_process.go (one command running in it,
//     with its pty and output buffers), shell_session.go ([Session]: the
//     caller's directory and the processes it keeps running).
//   - What the verbs share: args.go (decoding arguments, naming the key in
//     the caller's dialect), paths.go (workspace paths, the one rule for
//     ".." at the root, symlinks through [mounts.Resolve], error
//     sentences), walk.go (the one recursive directory walk), diff.go (the
//     unified diff of dry runs), limits.go ([Limits]), hooks.go (what the
//     hooks see of a call: [CallInfo], call ids).
//   - dialect.go: the dialect registry and schema helpers. Each dialect's
//     code is in its own dialect_NAME*.go: its tools, their schemas and
//     reshapes, and the runs where its harness does the work differently —
//     dialect_cursor.go; dialect_claude.go (Read in dialect_claude_read.go);
//     dialect_codex.go (exec_command, write_stdin and shell_command, and
//     codex-rs's output truncation, in dialect_codex_exec.go). A new
//     dialect is a new dialect_NAME.go and a row in the registry.
//     testdata/golden/NAME.json pins a dialect's tools to the release it
//     matches; testdata/golden/update.sh rewrites them.
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
//   - The session's directory follows a command that ends normally. One
//     that replaces its shell (exec), sets its own EXIT trap, closes fd 3
//     or is killed reports nothing, and the directory stays; one that ends
//     outside the workspace (/tmp) leaves it too, and the result says so.
//   - exec_command's tty output is the terminal's: it echoes input and
//     ends lines with CR LF. Its shell argument may name a POSIX shell
//     only (bash, sh, dash, zsh, ksh, mksh), and sandbox_permissions
//     "require_escalated" is refused: nothing runs outside the namespace.
//   - A session keeps at most 16 processes, none longer than
//     Limits.MaxShellTimeout; its processes end with it. Jobs a command
//     left running (`server &`) are kept until they end or the session
//     does, with no time limit; a call without a session stops them. Under
//     a terminal (tty) a command ends with its process, jobs included; on
//     a remote mount's machine the session does not keep a command's jobs
//     (the call ends with its shell; their later output is not kept).
package agentbridge
