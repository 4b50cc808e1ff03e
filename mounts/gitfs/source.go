package gitfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/objstore"
)

// Sentinels of bad input to Open. The CLI exits 2 on each.
var (
	// ErrBadSource: the source is not a repository, or cannot be reached
	// or cloned.
	ErrBadSource = errors.New("not a usable git repository")
	// ErrBadRev: the revision does not name a commit, or is ambiguous.
	ErrBadRev = errors.New("not a commit")
	// ErrBadSubdir: the subdir is not a directory at the commit.
	ErrBadSubdir = errors.New("not a directory at the commit")
)

// isURL reports whether src names a remote (or file://) repository rather
// than a local path: anything with a scheme, or scp-like user@host:path.
func isURL(src string) bool {
	if strings.Contains(src, "://") {
		return true
	}
	return scpLike.MatchString(src)
}

var scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]`)

// redact hides a password in a URL before it appears in an error or a log.
func redact(src string) string {
	if u, err := url.Parse(src); err == nil && u.User != nil {
		return u.Redacted()
	}
	return src
}

func badSource(src string, err error) error {
	return fmt.Errorf("gitfs: src %q: %w: %w", redact(src), ErrBadSource, err)
}

// Discover returns the top directory of the repository containing dir (its
// worktree, or the repository itself when bare), for the default workspace.
// It fails with ErrBadSource outside a repository.
func Discover(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", badSource(dir, err)
	}
	for d := abs; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if isBareDir(d) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", badSource(dir, git.ErrRepositoryNotExists)
		}
		d = parent
	}
}

// isBareDir reports whether d looks like a git directory: HEAD, objects/
// and refs/, as git itself decides.
func isBareDir(d string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(d, name)); err != nil {
			return false
		}
	}
	return true
}

// resolveRev resolves rev once, to a full commit id. A short hex prefix
// that matches several commits is refused, as git refuses it, rather than
// silently picking one.
func resolveRev(obj *objstore.Store, rev string) (plumbing.Hash, error) {
	repo := obj.Repository()
	if hexPrefix.MatchString(rev) && len(rev) < 2*len(plumbing.ZeroHash) {
		if n := commitsWithPrefix(obj, strings.ToLower(rev)); n > 1 {
			return plumbing.ZeroHash, fmt.Errorf("gitfs: rev %q: %w: ambiguous, %d commits match", rev, ErrBadRev, n)
		}
	}
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil && hexPrefix.MatchString(rev) && rev != strings.ToLower(rev) {
		// git reads object ids in either case; go-git only in lower case.
		h, err = repo.ResolveRevision(plumbing.Revision(strings.ToLower(rev)))
	}
	if err != nil {
		if errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, plumbing.ErrObjectNotFound) {
			err = errors.New("no such revision")
			if alt := obj.Alternates(); alt != nil {
				// The commit may be in the alternate skipped: say so,
				// naming it, rather than only that there is none.
				err = fmt.Errorf("no such revision; an alternate that may hold it is skipped: %w", alt)
			}
		}
		return plumbing.ZeroHash, fmt.Errorf("gitfs: rev %q: %w: %w", rev, ErrBadRev, err)
	}
	return *h, nil
}

var hexPrefix = regexp.MustCompile(`^[0-9a-fA-F]{4,40}$`)

// commitsWithPrefix counts the commits (and tags of commits) whose id
// starts with prefix.
func commitsWithPrefix(obj *objstore.Store, prefix string) int {
	b, err := hex.DecodeString(prefix[:len(prefix)&^1])
	if err != nil {
		return 0
	}
	repo := obj.Repository()
	hashes, err := obj.HashesWithPrefix(b)
	if err != nil {
		return 0
	}
	n := 0
	for _, h := range hashes {
		if !strings.HasPrefix(h.String(), prefix) {
			continue
		}
		if _, err := repo.CommitObject(h); err == nil {
			n++
		} else if tag, err := repo.TagObject(h); err == nil {
			if _, err := tag.Commit(); err == nil {
				n++
			}
		}
	}
	return n
}

// defaultCacheDir is $XDG_CACHE_HOME/vfsmount, or ~/.cache/vfsmount.
func defaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "vfsmount"), nil
}

// cloneRefSpecs map the remote's branches and tags to the same names in the
// bare clone, so a rev names them as it would in the original.
var cloneRefSpecs = []config.RefSpec{
	"+refs/heads/*:refs/heads/*",
	"+refs/tags/*:refs/tags/*",
}

// cachedClone holds the exclusive lock of one cached clone while Open uses
// it, so two mounts never clone or fetch into it at once.
type cachedClone struct {
	dir  string
	lock *os.File
}

func (c *cachedClone) unlock() {
	if c.lock != nil {
		c.lock.Close() // closing the descriptor drops the flock
	}
}

// lockClone returns the cached clone directory for src under cacheDir,
// locked, cloning src first when it is not there yet.
func lockClone(ctx context.Context, src, cacheDir string, offline bool, progress io.Writer) (*cachedClone, error) {
	sum := sha256.Sum256([]byte(src))
	key := hex.EncodeToString(sum[:12])
	base := filepath.Join(cacheDir, "git")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, badSource(src, fmt.Errorf("cache directory: %w", unwrapPath(err)))
	}
	lf, err := os.OpenFile(filepath.Join(base, key+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, badSource(src, fmt.Errorf("cache lock: %w", unwrapPath(err)))
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		lf.Close()
		return nil, badSource(src, fmt.Errorf("cache lock: %w", err))
	}
	c := &cachedClone{dir: filepath.Join(base, key+".git"), lock: lf}
	if _, err := os.Stat(filepath.Join(c.dir, "HEAD")); err == nil {
		return c, nil
	}
	if offline {
		c.unlock()
		return nil, badSource(src, errors.New("not in the clone cache, and offline"))
	}
	tmp, err := os.MkdirTemp(base, key+".tmp-")
	if err != nil {
		c.unlock()
		return nil, badSource(src, fmt.Errorf("cache directory: %w", unwrapPath(err)))
	}
	if err := cloneInto(ctx, tmp, src, progress); err != nil {
		os.RemoveAll(tmp)
		c.unlock()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, badSource(src, err)
	}
	if err := os.Rename(tmp, c.dir); err != nil {
		os.RemoveAll(tmp)
		c.unlock()
		return nil, badSource(src, fmt.Errorf("cache directory: %w", unwrapPath(err)))
	}
	return c, nil
}

// cloneInto makes a bare clone of src in dir.
func cloneInto(ctx context.Context, dir, src string, progress io.Writer) error {
	repo, err := git.PlainInit(dir, true)
	if err != nil {
		return err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{
		Name: "origin", URLs: []string{src}, Fetch: cloneRefSpecs,
	}); err != nil {
		return err
	}
	return fetch(ctx, repo, progress)
}

// fetch updates the branches and tags of a cached clone from origin, and
// points HEAD where the remote's HEAD points.
func fetch(ctx context.Context, repo *git.Repository, progress io.Writer) error {
	remote, err := repo.Remote("origin")
	if err != nil {
		return err
	}
	refs, err := remote.ListContext(ctx, &git.ListOptions{})
	if err != nil {
		return err
	}
	err = remote.FetchContext(ctx, &git.FetchOptions{
		RefSpecs: cloneRefSpecs, Tags: git.NoTags, Progress: progress, Force: true,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return err
	}
	for _, r := range refs {
		if r.Name() != plumbing.HEAD {
			continue
		}
		if r.Type() == plumbing.SymbolicReference {
			return repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, r.Target()))
		}
		return repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, r.Hash()))
	}
	return nil
}

// unwrapPath drops the host path from an *fs.PathError-like error.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
