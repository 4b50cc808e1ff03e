// Package gitfs serves one commit of a git repository as a read-only
// [mounts.FS], lazily, straight from git objects. It and its internal
// object store (internal/objstore) are the only packages that reach a
// repository through go-git. Two others import a piece of go-git that
// knows nothing of repositories, its gitignore matcher: policy for its path
// patterns and agentbridge for grep's ignore files (internal/layering
// holds all three to that).
//
// # Pinning
//
// [Open] resolves the revision once, to a full commit SHA, and the mount
// serves that commit for its whole life: a branch that moves later changes
// nothing. The SHA is [FS.Commit], it is in [FS.Describe], and it is readable
// from inside the tree as the extended attribute user.git.commit on the root.
// Every entry carries user.git.oid (its blob or tree id); a submodule entry
// (gitlink) carries user.git.submodule, the commit it pins.
//
// # Laziness
//
// Opening reads the commit and the root tree (and the trees down to Subdir).
// A lookup reads only the trees on its path, decoded once into a small
// bounded cache. Stat takes a blob's size from its object header: for a
// deltified object in a pack that means inflating the delta's instruction
// stream to read the target size in its header, never resolving the delta
// chain. Blob content is read on Open only. Neither the time to mount nor
// the memory held grows with the number of files in the commit.
//
// # Walks and scans
//
// The one exception to reading only what is asked: a directory listed with
// [FS.StatDir] right after its parent was is taken for a walk (find, tar,
// ls -R, grep -r), and a background worker then reads, one level ahead,
// what listing the parent's and the directory's subdirectories will need:
// their blobs' sizes (object headers) and their subdirectories' trees,
// newest listing first, so it keeps a step ahead of a depth-first walker on
// a spare CPU. A lone listing or lookup triggers nothing; what it decodes
// goes to the same bounded caches. It reads blob content only while the
// files are being read too — a scan, as the mount's read-pattern detector
// tells (package readpattern: two files of one directory opened in a row,
// counting for a second after the last sign). Then the small files (under
// 1 MiB) after the one that started a directory's scan, and those of every
// directory listed or warmed during the scan, are decoded into the blob
// cache before they are opened, by two workers side by side; those the
// kernel knows of (after the file that started a scan, and of a directory
// as it is listed) are offered whole to the page sink a face registered
// ([FS.OfferPages], [mounts.PageOfferer]): the kernel face stores them in
// the page cache, so the reads that follow never reach the mount. They are
// offered once per scan, not once for the life of the mount: a later scan
// reads again what the kernel may have dropped since, which is what a
// full read with the kernel cold and the content decoded needs. A walk that
// only lists (find, ls -R) decodes nothing. A cold find over 20 000 files
// spends about 10 % less time waiting, a cold tar of them about 8 % less.
//
// # Reads
//
// Decoded blob content goes into a bounded LRU cache shared by every open
// file of the mount: small blobs in memory, blobs past a threshold in an
// unlinked temporary file. A large deltified blob read at random offsets is
// decoded once, not once per read, and files opened on it at once share
// that one decode (so do lookups missing one tree at once). An open file
// pins its content; a blob larger than the whole cache still decodes once
// per open. What the kernel's page cache keeps is not kept here too: a
// file the kernel face opens with its pages kept across opens
// ([mounts.OpenOptions] PagesKept: an openless connection, FOPEN_KEEP_CACHE) and
// reads to its end, or a file offered whole to the page sink, leaves the
// cache once no file uses it, unless a reader the kernel does not serve
// (the tool face, a search) used it; spilled content stays. If the kernel
// drops those pages, the next read decodes again.
//
// With a cache directory (the default), what is decoded is also written
// to its blob store, CacheDir/blobs/ab/cdef… by blob id (blobstore.go),
// as EdenFS keeps its local store: small content behind the read that
// decoded it, large content straight into its entry, which the open file
// then reads. Every mount checks the store before decoding, so a second
// daemon's mount of a commit whose blobs were read before decodes
// nothing, and the kernel's page cache (which can reclaim it) holds the
// content rather than the daemon's heap: the heap cache keeps 16 MiB of
// it at most. Entries are written to a temporary file and renamed into
// place (two daemons at once are harmless) and checked whole on every
// read (header, blob id, size, CRC-32C): an entry cut short or corrupt
// is removed and the blob decoded again. The store is not pruned.
//
// The index build, which reads every file of the tree, writes them (and
// the tree's trees) into one file instead, the tree pack,
// CacheDir/blobs/trees/<tree id>.v1.pack (treepack.go): every later mount
// of a commit with that tree maps it at open and reads sizes, content and
// trees from it, with no system call, inflate or delta per object (each
// content checked against its CRC-32C the first time it is used). The
// store then keeps what is read of other commits. A mount whose searches
// narrow with an ancestor's index (below) reads what it did not change
// from that ancestor's pack. Each pack is a whole copy of its tree: the
// cache directory keeps the four used last.
//
// # Search
//
// The mount names the files a content search may match
// ([mounts.SearchFS]) from a trigram index of its tree (internal/codeindex:
// codesearch's analysis of the regexp, this repository's storage). The
// index is built in the background on the first search (Options.Index
// "eager": at Open; "off": never), each file indexed in place from the
// blob cache when a read decoded it (the scan of the first search), else
// read from the object store without filling the cache; it pauses while a
// scan reads the mount so as not to slow it, and until it is there,
// searches scan. Searches use it as soon as it is built, reading its
// posting lists from the builder's memory while the bytes of its file are
// encoded (the bulk of the encoding; the log's "took" and "encoded"). It
// is published to CacheDir/index/<tree id>.v2.idx (a temporary file renamed
// into place, so concurrent daemons indexing one tree are harmless), and
// every later mount of a commit with that tree opens it, checked whole
// (CRC-32C, structure, tree id), on its first search. The mount holds its
// names and trigram table and reads posting lists from the file as
// searches need them (the file is never changed in place; one cut short
// anyway makes a search fail over to the scan and the index be rebuilt).
// A file that fails the check is ignored, logged once and rebuilt; a cache
// directory it cannot be saved to (a full disk) leaves it in memory,
// logged once.
// Binary files (a NUL byte), files over 8 MiB and files that cannot be
// read are always candidates. The index is per tree; until a mount's own
// is built, its searches narrow with the nearest one of an ancestor on
// the first-parent chain (32 commits back at most), or of a directory
// above a subdir mount's in its commit or an ancestor, found in the cache
// directory: the files that changed since (added or modified; at most a
// quarter of the index's files, or 256) are candidates whatever the
// pattern, and those deleted or modified are never named from it
// (search_ancestor.go). A task pinned at the next commit of a branch so
// greps at index speed, less the changed files' reads, from its first
// search, while its own index builds.
//
// # A faithful tree
//
//   - Modes come from git: 0644 for files, 0755 for executables and
//     directories, symlinks with their stored target.
//   - Submodules (gitlinks) are empty directories, unless
//     Options.Submodules: then each is its submodule's tree at the pinned
//     commit when its repository is found (submodules.go).
//   - Every time (atime, mtime, ctime) is the commit's committer time, so a
//     remount gives build tools the same timestamps.
//   - Owners are the mounting user; a directory's link count is 2 plus its
//     subdirectories.
//   - Inode numbers are derived from the object id and the path in the
//     commit, 56 bits wide (the union keeps the top 8 bits for the mount
//     index), nonzero, and the same on every remount.
//   - Tree entries whose names cannot be served (".", "..", ".git", "/",
//     control characters, over 255 bytes, or an unknown mode) are hidden
//     and logged once. A name with a ".git" component is refused with
//     fs.ErrInvalid, as [mounts.CheckPath] refuses other invalid names.
//
// # Errors
//
// Bad input to [Open] wraps [ErrBadSource], [ErrBadRev] or [ErrBadSubdir]
// and names the source or the revision: the CLI exits 2 on them. A corrupt
// or missing object met while serving fails that one call with syscall.EIO
// in a *fs.PathError and is logged once; the mount stays up.
//
// # Sources
//
// A source is a local repository (bare, non-bare, or a linked worktree whose
// .git is a file) or a URL (file://, https://, http://, ssh://, git://, or
// scp-like user@host:path). A URL is cloned once, bare, into
// CacheDir/git/<hash of the URL>.git, under a file lock, and reused by later
// mounts; it is fetched again only when the revision is not in the clone, and
// never when Offline is set.
//
// # A live source
//
// A local source may change under the mount: new commits change nothing
// served, and a repack (git gc) that moves the pinned commit's objects into
// new packs is noticed on the first miss (the pack directory changed) and
// the pack indexes are read again.
//
// # Export
//
// A writable copy of the commit (an overlay over the mount) goes back into
// git through [FS.WriteTree]: the commit's tree with a list of edits
// applied, the edited names read from the copy. [Tree.Diff] prints it
// against the commit as git diff-tree does (a patch git apply accepts,
// --stat, --name-status), and [Tree.Commit] makes it a commit on the
// pinned one under refs/heads/NAME. Both run the git binary's plumbing on
// the repository with a temporary index (see export.go for why): HEAD, the
// index and the working tree of the repository are never touched, a diff
// writes its objects to a temporary directory, and a branch checked out
// anywhere is never moved.
//
// # A checkout's .git
//
// [FS.DotGit] describes the .git that makes git work in a writable copy of
// the commit as in a clone: objects/info/alternates naming the source's
// object directory (the history, read in place, never copied or written),
// HEAD at the commit (or a branch made there), and an index of the commit's
// tree carrying, entry by entry, the stat data the mount reports, so that
// git's stat check (see dotgit.go for which fields it compares) passes
// for every untouched file and nothing is rehashed. The index also carries
// a full cache-tree (comparing it with HEAD reads no tree) and, when asked,
// an fsmonitor token saying no entry is dirty.
//
// # Limitations
//
//   - Objects come from the object store (internal/objstore): packed
//     objects decode concurrently, without a lock, from mappings of the
//     packs, at about git's own speed, so mounting costs the same whatever
//     the number of objects; so do loose objects up to 1 MiB (compressed).
//     Larger loose objects, multi-pack indexes and short-SHA revisions go
//     through go-git's storage, which loads every pack index into memory
//     on first use and, not being safe for concurrent use, is serialised
//     by one lock.
//   - A repository that borrows objects (git clone --shared or
//     --reference: objects/info/alternates) is read from every object
//     directory git reads, its alternates' alternates too, the same way.
//     An alternate that cannot be used is skipped, as git skips it, with
//     a warning naming it; a revision that resolves to nothing then says
//     which alternate was skipped, and a file whose object only it held
//     is EIO, logged with the object, the file and the alternate, while
//     the rest of the tree is served. [FS.ObjectDirs] lists the
//     directories, for a namespace that runs git on a checkout.
//     GIT_ALTERNATE_OBJECT_DIRECTORIES is not read (it is one git
//     command's environment, and a daemon serves many repositories).
//   - A revision missing from a cached clone is fetched with the clone's
//     branches and tags; a commit no branch or tag reaches is not fetched.
//
// # Partial clones
//
// A partial clone (git clone --filter=blob:none, or tree:0) mounts at
// once: the commit and, for a blobless clone, every tree are there. An
// object it lacks is fetched from its promisor remote when first needed,
// by git's own lazy-fetch command, and kept in the clone (objstore's
// promisor.go says how and why). A blob's size is in the blob, so a file's
// Stat fetches it too; fetches are batched where the reads to come are
// known: a directory listed with attributes (StatDir, and the walker's
// warming) fetches its blobs in one round trip, a directory read in a row
// (a scan, as for the walker) the rest of its files, a search the files
// the index names as candidates, and an index build every blob of the
// tree in a few large fetches. With the tree's index in the cache
// directory (from any mount of that tree, a full clone's included) a
// search so fetches only its candidates. Offline, or with the remote
// down, a missing object is EIO, the error naming the object and why (and
// logged); the rest of the tree is served.
package gitfs
