package codeindex

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegionGrows: a region, mapped or from the heap (when no mapping can
// be had), keeps its content when it grows, with zeros after it.
func TestRegionGrows(t *testing.T) {
	for name, r := range map[string]region{"mapped": newRegion(1 << 16), "heap": {b: make([]byte, 1<<16)}} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, name == "mapped", r.mmap)
			require.Len(t, r.b, 1<<16)
			for i := range r.b {
				r.b[i] = byte(i * 7)
			}
			want := bytes.Clone(r.b)
			require.True(t, r.grow(1<<20))
			require.Len(t, r.b, 1<<20)
			assert.Equal(t, want, r.b[:1<<16])
			assert.Equal(t, make([]byte, 1<<20-1<<16), r.b[1<<16:], "zeros after the content")
			r.free()
			assert.Nil(t, r.b)
			r.free() // twice is harmless
		})
	}
}
