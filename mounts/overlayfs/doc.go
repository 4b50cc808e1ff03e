// Package overlayfs is a copy-on-write overlay mount: a read-only lower
// [mounts.FS] (a git commit) under a writable upper [mounts.FS] (a memory
// tree or a host directory) that receives every change, with all of the
// overlay's bookkeeping kept in the upper itself.
package overlayfs
