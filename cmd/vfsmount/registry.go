package main

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// A mount type is declared once, in its own file (type_memory.go,
// type_git.go, ...), as a function returning a mountType. Adding a type is
// that one file plus one line in [mountTypes]. The declaration drives
// everything else: the validator accepts exactly the declared keys with
// their declared kinds, `vfsmount help mount` lists them, and build turns a
// validated spec into a mounts.FS.

// keySpec declares one option key of a mount type.
type keySpec struct {
	Kind     keyKind
	Required bool
	// Doc is a short phrase for help output: "host directory to serve".
	Doc string
}

// mountType is one kind of mount.
type mountType struct {
	Name string
	// Doc is one line for help output.
	Doc string
	// Example is a complete --mount spec.
	Example string
	// Keys lists the options besides type and dst, which every type has.
	Keys map[string]keySpec
	// Check, when set, judges the keys together once each is valid on its
	// own (two keys that exclude each other, one that needs another). It
	// returns specErrorf(spec.Origin, ...) naming the keys.
	Check func(spec *mountSpec) error
	// Build makes the mount. Return specErrorf(spec.Origin, ...) for
	// bad input (a missing source, a revision that does not exist): the
	// user gets exit 2. Any other error is a runtime failure (exit 1).
	// Resources to release when the workspace closes go to env.OnClose.
	Build func(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error)
}

// buildEnv is what a build function may use besides its spec.
type buildEnv struct {
	// Logger is scoped to the mount (it carries its dst).
	Logger *slog.Logger
	// Uid and Gid own what a mount creates on its own behalf (the root of
	// a memory mount): the user running vfsmount.
	Uid, Gid uint32
	// Git holds the workspace-wide git settings (cache, offline).
	Git gitSettings
	// Hook is git's fsmonitor hook command for writable git mounts
	// (fsmonitorHook).
	Hook []string
	// Worktree is where git runs in the workspace
	// (workspaceConfig.WorktreeRoot): "" is the shell tool's namespace.
	Worktree string
	// Self is this program's binary, what a remote mount installs as its
	// peer ("" when it cannot be told: a test binary).
	Self string
	// Resume is the checkpoint of a store the writable layers come back
	// from (nil: they start empty, or from their persist files).
	Resume  *resumeState
	onClose []func() error
}

// OnClose registers f to run when the workspace closes, after the kernel
// face is gone, in reverse order of registration.
func (e *buildEnv) OnClose(f func() error) { e.onClose = append(e.onClose, f) }

// registry maps a type name to its declaration.
type registry map[string]mountType

// mountTypes returns the registry of every mount type the binary knows.
func mountTypes() registry {
	reg := registry{}
	for _, mt := range []mountType{
		gitType(),
		memoryType(),
		hostType(),
		skillsType(),
		remoteType(),
	} {
		reg[mt.Name] = mt
	}
	return reg
}

// names lists the type names, sorted, for messages.
func (r registry) names() string { return strings.Join(sortedKeys(r), ", ") }

// allowed describes the keys a type accepts, for messages.
func (mt mountType) allowed() string {
	keys := append([]string{"type", "dst"}, sortedKeys(mt.Keys)...)
	return "allowed: " + strings.Join(keys, ", ")
}

// help renders the registry for `vfsmount help mount`.
func (r registry) help() string {
	var b strings.Builder
	names := sortedKeys(r)
	sort.Strings(names)
	for _, n := range names {
		mt := r[n]
		fmt.Fprintf(&b, "  %-8s %s\n", mt.Name, mt.Doc)
		fmt.Fprintf(&b, "           keys: type, dst (required, absolute workspace path)")
		for _, k := range sortedKeys(mt.Keys) {
			ks := mt.Keys[k]
			req := ""
			if ks.Required {
				req = ", required"
			}
			fmt.Fprintf(&b, "; %s (%s%s) %s", k, ks.Kind, req, ks.Doc)
		}
		fmt.Fprintf(&b, "\n           e.g. --mount %s\n", mt.Example)
	}
	return b.String()
}
