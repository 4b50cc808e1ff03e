package gitfs

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vfsmount/vfsmount/mounts"
)

// # Submodules
//
// With Options.Submodules, a gitlink is served as the tree of the commit
// it pins, read from the submodule's repository, found at Open as git
// finds it: the superproject's git directory's modules/NAME (NAME from
// .gitmodules), else the submodule's own .git in the source's worktree,
// else the URL .gitmodules gives (relative to the superproject's origin,
// or its directory when it has none), a local path read in place and any
// other URL cloned once into the cache directory, as a git mount's URL
// is, unless Offline. The repository's object directories join the
// store's (objects are named by their content: whichever directory holds
// one, it is the same). A submodule's own submodules are found the same
// way, in its git directory, to a depth of maxSubmoduleDepth.
//
// A gitlink whose repository is found nowhere is an empty directory, as
// git archive and an uninitialised submodule give (logged). One whose
// repository is found without the commit it pins is EIO, the error naming
// the path, the commit and the repository (logged at Open): the rest of
// the tree is served.
//
// Only the gitlinks .gitmodules names are served so: git knows no other
// (one it does not name is an empty directory). The search index of a
// mount that serves submodules is its own (keyed by the trees of the
// superproject and of every submodule), and an ancestor's does not
// narrow its searches. A writable mount's checkout (DotGit) keeps the
// gitlinks as gitlinks, as git's index has them.

// maxSubmoduleDepth bounds how deep submodules of submodules are served.
const maxSubmoduleDepth = 8

// submodule is what a gitlink serves.
type submodule struct {
	commit plumbing.Hash
	tree   plumbing.Hash // zero: served as an empty directory
	err    error         // the commit cannot be read: EIO naming it
}

// subSource is where the submodules of one repository are looked for.
type subSource struct {
	gitDir   string // its git directory (modules/NAME live in it)
	worktree string // its worktree, "" for none
	base     string // what a relative URL in its .gitmodules is relative to
	tree     plumbing.Hash
	prefix   string // its path in the served commit, "" for the top
}

// openSubmodules finds the submodules of the commit (see above), and
// records what each gitlink serves in f.subs. It runs at Open, before
// the store serves concurrent readers.
func (f *FS) openSubmodules(ctx context.Context, opts Options, repoDir, cacheDir string) {
	f.subs = map[string]submodule{}
	gitDir := repoDir
	worktree := ""
	if fi, err := os.Stat(filepath.Join(repoDir, ".git")); err == nil {
		worktree = repoDir
		if fi.IsDir() {
			gitDir = filepath.Join(repoDir, ".git")
		} else if d, err := readGitFile(filepath.Join(repoDir, ".git")); err == nil {
			gitDir = d
		}
	}
	if common, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		// A linked worktree: modules/ is in the common directory.
		c := strings.TrimSpace(string(common))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		gitDir = filepath.Clean(c)
	}
	base := originURL(f.obj.Repository())
	if base == "" {
		base = repoDir
	}
	f.findSubmodules(ctx, opts, cacheDir, subSource{gitDir: gitDir, worktree: worktree, base: base, tree: f.commitTree}, 0)
}

// readGitFile reads a gitfile ("gitdir: PATH"), relative to its directory.
func readGitFile(name string) (string, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	d, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return "", errors.New("not a gitfile")
	}
	d = strings.TrimSpace(d)
	if !filepath.IsAbs(d) {
		d = filepath.Join(filepath.Dir(name), d)
	}
	return filepath.Clean(d), nil
}

// originURL is the URL of a repository's remote origin, "" for none.
func originURL(repo *git.Repository) string {
	r, err := repo.Remote("origin")
	if err != nil || len(r.Config().URLs) == 0 {
		return ""
	}
	return r.Config().URLs[0]
}

// findSubmodules serves the submodules src's .gitmodules names.
func (f *FS) findSubmodules(ctx context.Context, opts Options, cacheDir string, src subSource, depth int) {
	t, err := f.tree(src.tree)
	if err != nil {
		return
	}
	e := t.find(".gitmodules")
	if e == nil || (e.kind != kindFile && e.kind != kindExec) {
		return
	}
	where := joinRel(src.prefix, ".gitmodules")
	data, err := f.obj.Bytes(plumbing.BlobObject, e.hash)
	if err != nil {
		f.log.Warn("gitfs: submodules: cannot read .gitmodules; gitlinks are empty directories", "path", where, "err", err)
		return
	}
	mods := config.NewModules()
	if err := mods.Unmarshal(data); err != nil {
		f.log.Warn("gitfs: submodules: cannot parse .gitmodules; gitlinks are empty directories", "path", where, "err", err)
		return
	}
	names := make([]string, 0, len(mods.Submodules))
	for name := range mods.Submodules {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if ctx.Err() != nil {
			return
		}
		sm := mods.Submodules[name]
		rel := strings.Trim(path.Clean(sm.Path), "/")
		if sm.Path == "" || rel == "." || strings.HasPrefix(rel, "../") || checkName("open", rel) != nil {
			continue
		}
		p := joinRel(src.prefix, rel)
		n, err := f.resolveCommit(ctx, p)
		if err != nil || n.kind != kindGitlink {
			continue // .gitmodules names no gitlink there
		}
		sub := submodule{commit: n.hash}
		dir, how := f.submoduleRepo(ctx, opts, cacheDir, src, name, rel, sm.URL, n.hash)
		if dir == "" {
			f.log.Info("gitfs: submodule not found; served as an empty directory", "path", p, "name", name, "commit", n.hash.String(), "why", how)
			f.subs[p] = sub
			continue
		}
		if _, err := f.obj.AddRepository(dir); err != nil {
			f.log.Warn("gitfs: submodule repository unusable; served as an empty directory", "path", p, "repository", dir, "err", err)
			f.subs[p] = sub
			continue
		}
		c, err := f.obj.Repository().CommitObject(n.hash)
		if err != nil {
			sub.err = fmt.Errorf("submodule %s: commit %s is not in its repository (%s): %w", p, n.hash, how, err)
			f.log.Warn("gitfs: submodule commit missing; reading it fails with EIO", "path", p, "commit", n.hash.String(), "repository", how, "err", err)
			f.subs[p] = sub
			continue
		}
		sub.tree = c.TreeHash
		f.subs[p] = sub
		if depth+1 < maxSubmoduleDepth {
			next := subSource{gitDir: dir, tree: c.TreeHash, prefix: p, base: sm.URL}
			if src.worktree != "" {
				next.worktree = filepath.Join(src.worktree, filepath.FromSlash(rel))
			}
			if r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true}); err == nil {
				if u := originURL(r); u != "" {
					next.base = u
				}
			}
			next.base = resolveURL(src.base, next.base)
			if ps, ok := gitDirOf(dir); ok {
				next.gitDir = ps
			}
			f.findSubmodules(ctx, opts, cacheDir, next, depth+1)
		}
	}
}

// joinRel joins a path in the commit ("" for its root) and a relative
// one.
func joinRel(prefix, rel string) string {
	if prefix == "" {
		return rel
	}
	return prefix + "/" + rel
}

// gitDirOf is the git directory of the repository at dir: dir/.git when
// it is a worktree, else dir.
func gitDirOf(dir string) (string, bool) {
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		if fi.IsDir() {
			return filepath.Join(dir, ".git"), true
		}
		d, err := readGitFile(filepath.Join(dir, ".git"))
		return d, err == nil
	}
	return dir, true
}

// submoduleRepo finds the repository of submodule name at rel (in src),
// and says where it was looked for or found.
func (f *FS) submoduleRepo(ctx context.Context, opts Options, cacheDir string, src subSource, name, rel, rawURL string, commit plumbing.Hash) (dir, how string) {
	var tried []string
	modules := filepath.Join(src.gitDir, "modules", filepath.FromSlash(name))
	if isBareDir(modules) {
		return modules, modules
	}
	tried = append(tried, modules)
	if src.worktree != "" {
		own := filepath.Join(src.worktree, filepath.FromSlash(rel))
		if d, ok := gitDirOf(own); ok && d != own && isBareDir(d) {
			return own, own
		}
		tried = append(tried, filepath.Join(own, ".git"))
	}
	if rawURL == "" {
		return "", "no url in .gitmodules; looked in " + strings.Join(tried, ", ")
	}
	u := resolveURL(src.base, rawURL)
	if !isURL(u) {
		if isBareDir(u) {
			return u, u
		}
		if _, err := os.Stat(filepath.Join(u, ".git")); err == nil {
			return u, u
		}
		return "", "looked in " + strings.Join(append(tried, u), ", ")
	}
	if u == opts.Src {
		// The superproject's own URL, whose clone Open holds locked:
		// its objects are the store's already.
		return f.repo, redact(u)
	}
	if cacheDir == "" {
		return "", "no cache directory to clone " + redact(u) + " into"
	}
	if opts.Offline {
		// A clone made before is used; none is made.
		c, err := lockClone(ctx, u, cacheDir, true, opts.Progress)
		if err != nil {
			return "", "offline, and " + redact(u) + " is not in the clone cache; looked in " + strings.Join(tried, ", ")
		}
		c.unlock()
		return c.dir, redact(u) + " (cached clone)"
	}
	c, err := lockClone(ctx, u, cacheDir, false, opts.Progress)
	if err != nil {
		return "", fmt.Sprintf("cloning %s: %v", redact(u), err)
	}
	defer c.unlock()
	if r, err := git.PlainOpen(c.dir); err == nil {
		if _, err := r.CommitObject(commit); err != nil {
			// The clone may predate the pinned commit: fetch once.
			if err := fetch(ctx, r, opts.Progress); err != nil {
				f.log.Warn("gitfs: submodule: fetch failed", "url", redact(u), "err", err)
			}
		}
	}
	return c.dir, redact(u) + " (cached clone)"
}

// resolveURL resolves a .gitmodules URL: one starting with ./ or ../ is
// relative to base (the superproject's origin URL, or its directory), as
// git resolves it; any other is as written.
func resolveURL(base, u string) string {
	if !strings.HasPrefix(u, "./") && !strings.HasPrefix(u, "../") {
		return u
	}
	if pu, err := url.Parse(base); err == nil && pu.Scheme != "" && pu.Host != "" {
		pu.Path = path.Join(pu.Path, u)
		return pu.String()
	}
	if scpLike.MatchString(base) {
		host, p, _ := strings.Cut(base, ":")
		return host + ":" + path.Join(p, u)
	}
	return filepath.Join(strings.TrimPrefix(base, "file://"), filepath.FromSlash(u))
}

// resolveCommit resolves p in the commit's tree (no subdir), mapping the
// submodules served so far: the gitlinks of a submodule's own submodules
// are in its tree.
func (f *FS) resolveCommit(ctx context.Context, p string) (node, error) {
	saved := f.root
	f.root = node{kind: kindDir, hash: f.commitTree, path: "."}
	defer func() { f.root = saved }()
	return f.resolve(ctx, "open", p)
}

// mapSubmodule returns what the gitlink node n serves: the submodule's
// tree as a directory when it is served, else n.
func (f *FS) mapSubmodule(n node) node {
	if n.kind != kindGitlink || f.subs == nil {
		return n
	}
	if s, ok := f.subs[n.path]; ok && !s.tree.IsZero() {
		return node{kind: kindDir, hash: s.tree, path: n.path, e: n.e}
	}
	return n
}

// submoduleErr is the error of a gitlink whose commit is missing, nil
// for any other node.
func (f *FS) submoduleErr(op, name string, n node) error {
	if n.kind != kindGitlink || f.subs == nil {
		return nil
	}
	if s, ok := f.subs[n.path]; ok && s.err != nil {
		f.logOnce("submodule:"+n.path, "gitfs: cannot read submodule", "path", name, "commit", s.commit.String(), "err", s.err)
		return mounts.PathErr(op, name, fmt.Errorf("%w: %w", s.err, syscall.EIO))
	}
	return nil
}

// isGitlink reports whether n is a gitlink, served as a submodule's tree
// or not.
func (n node) isGitlink() bool {
	return n.kind == kindGitlink || (n.e != nil && n.e.kind == kindGitlink)
}

// submoduleAt returns the path of the served submodule that holds the
// path p of the commit (p itself, or above it), "" for none.
func (f *FS) submoduleAt(p string) string {
	for q := p; q != "." && q != "" && q != "/"; q = path.Dir(q) {
		if s, ok := f.subs[q]; ok && !s.tree.IsZero() {
			return q
		}
	}
	return ""
}

// submoduleKey is the search index's key of a mount that serves
// submodules: the trees of the superproject and of every submodule
// served, so that it is never taken for the index of the tree alone.
func (f *FS) submoduleKey() []byte {
	paths := make([]string, 0, len(f.subs))
	for p, s := range f.subs {
		if !s.tree.IsZero() {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	slices.Sort(paths)
	h := sha1.New()
	h.Write(f.root.hash[:])
	h.Write([]byte("\x00submodules"))
	for _, p := range paths {
		t := f.subs[p].tree
		fmt.Fprintf(h, "\x00%s\x00", p)
		h.Write(t[:])
	}
	return h.Sum(nil)
}
