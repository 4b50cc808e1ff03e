package mounts

// FDFile is implemented by open files that are backed by a host file
// descriptor (the host mount). The kernel face may hand that descriptor to
// the kernel (FUSE passthrough) so reads and writes bypass the serving
// process. A wrapper that must see every read or write (a policy hook, an
// audit of content) must not forward this method.
type FDFile interface {
	File
	// Fd returns the descriptor. It stays owned by the File: valid until
	// Close, and the caller must not close it. The descriptor was opened
	// with the access mode of the OpenFile call that produced the File.
	Fd() uintptr
}
