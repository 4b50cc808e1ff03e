package integration

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The differential tests (host, overlay) apply one seeded random sequence
// of operations to a plain tree and, through the kernel, to a mount of the
// same tree, and compare every outcome. This is what they share.

// diffRand returns the differential test's random source: seeded from
// VFSMOUNT_DIFF_SEED when set (to replay a failure), from the clock
// otherwise, the seed logged either way.
func diffRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("VFSMOUNT_DIFF_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (set VFSMOUNT_DIFF_SEED to replay)", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// treePicker picks the paths of the operations from the plain tree ref,
// scanned before each operation, so most operations name things that
// exist (or could): a random path of random names would mostly fail on a
// missing parent.
type treePicker struct {
	rng   *rand.Rand
	ref   string
	names []string
	// entries and dirs are ref's, relative, as the last scan found them
	// ("." among the dirs).
	entries, dirs []string
}

// scan lists ref again.
func (p *treePicker) scan() {
	p.entries, p.dirs = p.entries[:0], []string{"."}
	filepath.WalkDir(p.ref, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == p.ref {
			return err
		}
		rel, _ := filepath.Rel(p.ref, path)
		p.entries = append(p.entries, rel)
		if d.IsDir() {
			p.dirs = append(p.dirs, rel)
		}
		return nil
	})
}

// small reports whether ref, scanned again, holds too few entries for a
// sequence to have left a tree worth comparing.
func (p *treePicker) small() bool {
	p.scan()
	return len(p.entries) <= 10
}

func (p *treePicker) pick(list []string) string { return list[p.rng.IntN(len(list))] }

// existing names an entry that exists, most of the time.
func (p *treePicker) existing() string {
	if len(p.entries) == 0 || p.rng.IntN(8) == 0 {
		return filepath.Join(p.pick(p.dirs), p.pick(p.names))
	}
	return p.pick(p.entries)
}

// fresh names a child of an existing directory, maybe taken.
func (p *treePicker) fresh() string {
	if p.rng.IntN(8) == 0 && len(p.entries) > 0 {
		return p.pick(p.entries)
	}
	return filepath.Join(p.pick(p.dirs), p.pick(p.names))
}
