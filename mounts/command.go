package mounts

import (
	"context"
	"io"
)

// CommandFS is implemented by a mount whose files are on another machine
// (a remote mount): it runs a command on that machine, in a directory of
// the mount, so that a shell whose working directory lies in the mount
// runs where its files, processes and toolchain are. It is not a verb of
// the tree (the union and the decorators do not forward it): the
// workspace hands the mounts that have it to the tool face's shell by
// their workspace path.
type CommandFS interface {
	StartCommand(ctx context.Context, c Command) (Process, error)
}

// Command is one command for [CommandFS].
type Command struct {
	// Argv is the program and its arguments, looked up on the other
	// machine's PATH.
	Argv []string
	// Dir is the working directory, a name of the mount.
	Dir string
	// Env holds KEY=VALUE entries added to the other side's environment.
	Env []string
	// Root is the workspace path of the mount (/workspace): where the
	// command should see the mount's files, where the other machine can
	// arrange that (a mount namespace); [Process.Wait] tells whether it
	// did.
	Root string
	// Stdout and Stderr receive the output; Stderr nil merges it into
	// Stdout. Writes come from one goroutine at a time.
	Stdout, Stderr io.Writer
	// DirFD3 gives the command a pipe at file descriptor 3 whose content,
	// when it ends, is its final directory (a shell's EXIT trap writes
	// $PWD there), reported by Wait as a workspace path.
	DirFD3 bool
}

// Process is a command started by [CommandFS.StartCommand].
type Process interface {
	// Wait waits for the command's end: its exit status (128+n for
	// signal n), and its final directory as a workspace path when
	// Command.DirFD3 asked ("" if unknown or outside the mount). err is
	// set when the status is unknown (the link to the machine was lost).
	Wait() (status int, finalDir string, err error)
	// Kill kills the command and everything it started.
	Kill() error
}

// ChangeNotifier is implemented by a mount whose content others change
// behind its back and that hears of it (a remote mount's change stream):
// fn learns the names changed, mount-relative ("." when anything may
// have), so that the kernel face drops its caches of them at once rather
// than at their timeout. fn may be called from any goroutine.
type ChangeNotifier interface {
	OnChange(fn func(names ...string))
}

// WorkspaceShower is implemented by a mount that runs commands on another
// machine and can show them the rest of its workspace there (a remote
// mount: /repo and /memory served back to the remote machine over its
// link). ShowWorkspace gives it the workspace's tree as the faces see it,
// under the same policy, and the mount's own prefix in it.
type WorkspaceShower interface {
	ShowWorkspace(fsys FS, self string)
}
