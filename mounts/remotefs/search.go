package remotefs

import (
	"context"
	"regexp/syntax"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// Candidates implements mounts.SearchFS by running the search on the
// peer: the names it returns are exactly the files that match, so only
// they cross the link (the caller reads them for the matching lines).
func (f *ReadOnlyFS) Candidates(ctx context.Context, dir string, re *syntax.Regexp) ([]string, bool, error) {
	if err := mounts.CheckPath("grep", dir); err != nil {
		return nil, false, err
	}
	resp, err := f.do(ctx, &wire.Request{Op: wire.OpGrep, Name: dir,
		Grep: &wire.Grep{Dir: dir, Pattern: re.String(), FilesOnly: true}})
	if err != nil {
		return nil, false, err
	}
	names := make([]string, len(resp.Matches))
	for i, m := range resp.Matches {
		names[i] = m.Name
	}
	return names, true, nil
}
