package agentbridge

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/vfsmount/vfsmount/mounts"
)

// Canonical verb names.
const (
	VerbRead   = "read"
	VerbLs     = "ls"
	VerbGlob   = "glob"
	VerbGrep   = "grep"
	VerbWrite  = "write"
	VerbEdit   = "edit"
	VerbDelete = "delete"
	VerbShell  = "shell"
)

// AllVerbs lists the canonical verbs in presentation order, the order of
// verbTable.
var AllVerbs = []string{VerbRead, VerbLs, VerbGlob, VerbGrep, VerbWrite, VerbEdit, VerbDelete, VerbShell}

// OptionalVerbs are the verbs offered only where the configuration lets
// them be honoured (readLints, semSearch): offered by default then, and
// an allowlist naming one otherwise is an error saying why.
var OptionalVerbs = []string{VerbReadLints, VerbSemSearch}

// verb is one canonical verb: what it is called, how harnesses should
// treat it (the MCP hints), what the tree must be able to do for it to be
// offered, and the function that runs it.
type verb struct {
	name string
	ann  Annotations
	// needs is what some mount must be able to do for the verb to be
	// offered (0: nothing); lacking says why it is not, for the error of
	// an allowlist that names it.
	needs   mounts.Capability
	lacking string
	run     func(w *Workspace, ctx context.Context, a *args) (string, error)
}

// verbTable is every verb of the tool face. A new verb is a row here, a
// name in AllVerbs, its function in a verbs_*.go file of its family, and
// a tool in each dialect that offers it (dialect_*.go). The shell's
// condition (a kernel face and a working bubblewrap) is checked in New.
func verbTable() []*verb {
	ro := Annotations{ReadOnly: true, Idempotent: true}
	const noCreate, noRemove = "no mount can create files", "no mount can remove files"
	return []*verb{
		{name: VerbRead, ann: ro, run: (*Workspace).read},
		{name: VerbLs, ann: ro, run: (*Workspace).ls},
		{name: VerbGlob, ann: ro, run: (*Workspace).glob},
		{name: VerbGrep, ann: ro, run: (*Workspace).grep},
		// write replaces a whole file: destructive, and the same call
		// twice leaves the same tree.
		{name: VerbWrite, ann: Annotations{Destructive: true, Idempotent: true}, needs: mounts.CapWrite, lacking: noCreate, run: (*Workspace).write},
		// A second identical edit fails (the old text is gone) or changes
		// more (replaceAll of a pattern the new text contains).
		{name: VerbEdit, ann: Annotations{Destructive: true}, needs: mounts.CapWrite, lacking: noCreate, run: (*Workspace).edit},
		// A second delete of the same path changes nothing more.
		{name: VerbDelete, ann: Annotations{Destructive: true, Idempotent: true}, needs: mounts.CapRemove, lacking: noRemove, run: (*Workspace).delete},
		{name: VerbShell, ann: Annotations{Destructive: true}, run: (*Workspace).shellVerb},
	}
}

// kindOf names the type of an entry for the model.
func kindOf(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "file"
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "unix socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// notRegular is the refusal of a file verb on a FIFO, a socket or a
// device: the tools never open one, since its data is a process's or the
// kernel's (and opening a FIFO waits for a writer).
func notRegular(op string, p wpath, m fs.FileMode) error {
	return fmt.Errorf("%s %s: is a %s, not a regular file; use the shell to work with it", op, p.abs(), kindOf(m))
}
