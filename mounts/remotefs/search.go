package remotefs

import (
	"context"
	"regexp/syntax"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// grepContent is the most content of matching files a search brings
// along for the cache (see Candidates).
const grepContent = 8 << 20

// Candidates implements mounts.SearchFS by running the search on the
// peer: the names it returns are exactly the files that match, so only
// they cross the link. The caller reads them for the matching lines: so
// that those reads do not cross the link again, the small ones come with
// the answer and are cached as an open's answer would be (while the change
// stream is up: the cache keeps content only then), up to grepContent or
// a quarter of the cache.
func (f *ReadOnlyFS) Candidates(ctx context.Context, dir string, re *syntax.Regexp) ([]string, bool, error) {
	if err := mounts.CheckPath("grep", dir); err != nil {
		return nil, false, err
	}
	g := &wire.Grep{Dir: dir, Pattern: re.String(), FilesOnly: true}
	if f.cache.watched() {
		g.Content = min(grepContent, f.opts.CacheBytes/4)
	}
	epoch := f.cache.epoch()
	resp, err := f.do(ctx, &wire.Request{Op: wire.OpGrep, Name: dir, Grep: g})
	if err != nil {
		return nil, false, err
	}
	for _, file := range resp.Files {
		if mounts.CheckPath("grep", file.Name) != nil {
			continue
		}
		f.cache.putFile(epoch, file.Name, f.attrOf(file.Attr), file.Data)
	}
	names := make([]string, len(resp.Matches))
	for i, m := range resp.Matches {
		names[i] = m.Name
	}
	return names, true, nil
}
