package mounts

import (
	"slices"
	"strings"
)

// Capability is one optional verb family of the contract.
type Capability uint32

const (
	CapWrite    Capability = 1 << iota // OpenFileFS
	CapTruncate                        // TruncateFS
	CapMkdir                           // MkdirFS
	CapRemove                          // RemoveFS
	CapRename                          // RenameFS
	CapSymlink                         // SymlinkFS
	CapLink                            // LinkFS
	CapChmod                           // ChmodFS
	CapChown                           // ChownFS
	CapChtimes                         // ChtimesFS
	CapXattr                           // XattrFS
	CapSetXattr                        // SetXattrFS
	CapStatFS                          // StatFSer
	CapMknod                           // MknodFS
	CapSearch                          // SearchFS
	CapFreeze                          // FreezeFS

	// CapMutating is every capability that changes the tree.
	CapMutating = CapWrite | CapTruncate | CapMkdir | CapRemove | CapRename |
		CapSymlink | CapLink | CapChmod | CapChown | CapChtimes | CapSetXattr | CapMknod
)

var capNames = []struct {
	c    Capability
	name string
}{
	{CapWrite, "write"}, {CapTruncate, "truncate"}, {CapMkdir, "mkdir"},
	{CapRemove, "remove"}, {CapRename, "rename"}, {CapSymlink, "symlink"},
	{CapLink, "link"}, {CapChmod, "chmod"}, {CapChown, "chown"},
	{CapChtimes, "chtimes"}, {CapXattr, "xattr"}, {CapSetXattr, "setxattr"},
	{CapStatFS, "statfs"}, {CapMknod, "mknod"}, {CapSearch, "search"},
	{CapFreeze, "freeze"},
}

// Has reports whether every capability in c2 is in c.
func (c Capability) Has(c2 Capability) bool { return c&c2 == c2 }

// String lists the capabilities by name, joined with "|".
func (c Capability) String() string {
	var parts []string
	for _, n := range capNames {
		if c.Has(n.c) {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return "read-only"
	}
	return strings.Join(parts, "|")
}

// CapabilityReporter is implemented by wrappers that declare every method
// statically but offer only some (the union offers a verb if any of its
// mounts does; a decorator offers what it wraps). Capabilities trusts it
// over method presence.
type CapabilityReporter interface {
	Capabilities() Capability
}

// Capabilities returns the optional verb families fsys offers: by method
// presence, or as reported by a CapabilityReporter.
func Capabilities(fsys FS) Capability {
	if r, ok := fsys.(CapabilityReporter); ok {
		return r.Capabilities()
	}
	var c Capability
	if _, ok := fsys.(OpenFileFS); ok {
		c |= CapWrite
	}
	if _, ok := fsys.(TruncateFS); ok {
		c |= CapTruncate
	}
	if _, ok := fsys.(MkdirFS); ok {
		c |= CapMkdir
	}
	if _, ok := fsys.(RemoveFS); ok {
		c |= CapRemove
	}
	if _, ok := fsys.(RenameFS); ok {
		c |= CapRename
	}
	if _, ok := fsys.(SymlinkFS); ok {
		c |= CapSymlink
	}
	if _, ok := fsys.(LinkFS); ok {
		c |= CapLink
	}
	if _, ok := fsys.(ChmodFS); ok {
		c |= CapChmod
	}
	if _, ok := fsys.(ChownFS); ok {
		c |= CapChown
	}
	if _, ok := fsys.(ChtimesFS); ok {
		c |= CapChtimes
	}
	if _, ok := fsys.(XattrFS); ok {
		c |= CapXattr
	}
	if _, ok := fsys.(SetXattrFS); ok {
		c |= CapSetXattr
	}
	if _, ok := fsys.(StatFSer); ok {
		c |= CapStatFS
	}
	if _, ok := fsys.(MknodFS); ok {
		c |= CapMknod
	}
	if _, ok := fsys.(SearchFS); ok {
		c |= CapSearch
	}
	if _, ok := fsys.(FreezeFS); ok {
		c |= CapFreeze
	}
	return c
}

// Writable reports whether fsys can change anything at all.
func Writable(fsys FS) bool { return Capabilities(fsys)&CapMutating != 0 }

// Describe returns fsys's description, or a generic one.
func Describe(fsys FS) Description {
	if d, ok := fsys.(Describer); ok {
		return d.Describe()
	}
	return Description{Type: "unknown", Source: "unknown"}
}

// PathDescriber is implemented by composites (the union) whose parts differ:
// DescribeAt returns the description of the mount that serves name.
type PathDescriber interface {
	DescribeAt(name string) Description
}

// DescribeAt returns the description of the mount serving name in fsys.
func DescribeAt(fsys FS, name string) Description {
	if d, ok := fsys.(PathDescriber); ok {
		return d.DescribeAt(name)
	}
	return Describe(fsys)
}

// Mounts returns fsys's mount table, sorted by prefix: a [MountTabler]'s
// answer, or nil for a single mount, which is no composition of mounts.
// The table belongs to the caller.
func Mounts(fsys FS) []MountInfo {
	if t, ok := fsys.(MountTabler); ok {
		return slices.Clone(t.Mounts())
	}
	return nil
}
