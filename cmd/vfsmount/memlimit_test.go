package main

import "testing"

// The soft memory limit is 128 MiB for a small live heap and follows a
// large one (a memory mount's content), never below what must live.
func TestMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, 128 << 20},
		{50 << 20, 128 << 20},
		{64 << 20, 128 << 20},
		{500 << 20, 1000 << 20},
		{1 << 62, 1 << 62},
	} {
		if got := memoryLimitFor(c.live); got != c.want {
			t.Errorf("live heap %d: limit %d, want %d", c.live, got, c.want)
		}
	}
}
