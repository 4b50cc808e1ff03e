// Package objstore reads the objects of one git repository for gitfs: by
// id, an object's size from its header, its whole content, or its content
// as a stream, safe for concurrent use. It knows nothing of trees, paths
// or commits: gitfs makes a pinned commit's tree of the objects.
//
// # Where objects come from
//
// Packed objects decode concurrently, without a lock, from read-only
// mappings of the packs, their indexes searched in place (packs.go,
// packindex.go; klauspost/compress's inflate: about git's own speed, twice
// go-git's), so opening a store costs the same whatever the number of
// objects. Loose objects up to 1 MiB (compressed) are read from their
// files the same way (loose.go). The rest — larger loose objects, a
// REF_DELTA whose base is in another pack, multi-pack indexes — goes
// through go-git's storage, which loads every pack index into memory on
// first use and, not being safe for concurrent use, is serialised by one
// lock (store.go).
//
// # Alternates
//
// A repository that borrows objects (git clone --shared or --reference,
// objects/info/alternates) is read from every object directory git would
// read, searched in git's order, each the same way: its packs mapped, its
// loose objects read in place, go-git's storage of it for the rest. The
// store reads the alternates files itself, recursively and with relative
// paths, as git does (alternates.go); go-git's own reading of them does
// not find a directory outside the repository. An alternate that cannot
// be used is skipped, as git skips it, and named: by [Store.Alternates],
// and in the error of an object found in no directory.
//
// # A live repository
//
// A repack (git gc) that moves objects into new packs is noticed on the
// first miss (the pack directory changed) and the pack indexes are read
// again; a pack that left stays mapped until its last reader is done.
//
// # Errors
//
// A missing object is plumbing.ErrObjectNotFound, as go-git says, and so
// is an object of another type than the one asked for. Content longer or
// shorter than its header says is [ErrSizeMismatch]; any other damage is a
// "corrupt pack" error. A damaged pack never panics: every read from a
// mapping is bounds-checked, and a fault on a mapping truncated under it
// becomes an error. No error names a host path, but for the object
// directories an alternates file names ([AlternateError]): that file is
// the repository's configuration, and the error is for its operator (gitfs
// logs it and answers EIO).
package objstore
