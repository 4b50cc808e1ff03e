package memfs

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContentAgainstFlatModel drives the page store with random writes and
// truncates around page edges and checks it against a plain byte slice, and
// its allocation counters against a recount of the pages.
func TestContentAgainstFlatModel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var c content
	var model []byte
	// Offsets cluster around the first few page boundaries.
	offset := func() int64 {
		return max(0, int64(rnd.IntN(4))*pageSize+int64(rnd.IntN(2000))-1000)
	}
	for step := range 1500 {
		if rnd.IntN(4) == 0 {
			size := offset()
			c.truncate(size)
			if size <= int64(len(model)) {
				model = model[:size]
			} else {
				model = append(model, make([]byte, size-int64(len(model)))...)
			}
		} else {
			off := offset()
			p := bytes.Repeat([]byte{byte(step)}, 1+rnd.IntN(3000))
			grow := c.growth(off, len(p))
			before := c.alloc
			c.writeAt(p, off)
			require.Equal(t, before+grow, c.alloc, "step %d: growth predicted the allocation", step)
			if end := off + int64(len(p)); end > int64(len(model)) {
				model = append(model, make([]byte, end-int64(len(model)))...)
			}
			copy(model[off:], p)
		}
		require.Equal(t, int64(len(model)), c.size, "step %d: size", step)
		got := make([]byte, len(model)+10)
		n := c.readAt(got, 0)
		require.Equal(t, len(model), n, "step %d: read count", step)
		require.True(t, bytes.Equal(model, got[:n]), "step %d: content", step)

		var alloc, blocks int64
		for idx, page := range c.pages {
			alloc += int64(len(page))
			blocks += blocksOf(len(page))
			assert.LessOrEqual(t, len(page), pageSize, "step %d: page %d overflows", step, idx)
			assert.Less(t, idx*pageSize, max(c.size, 1), "step %d: page %d past the end", step, idx)
		}
		require.Equal(t, alloc, c.alloc, "step %d: alloc", step)
		require.Equal(t, blocks, c.blocks, "step %d: blocks", step)
	}
	held := c.alloc
	assert.Equal(t, held, c.release(), "release returns what was allocated")
	assert.Zero(t, c.alloc)
	assert.Empty(t, c.pages)
}
