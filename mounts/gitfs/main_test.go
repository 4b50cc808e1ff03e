package gitfs

import (
	"testing"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

// TestMain removes the main fixture (gittest.MainFixture) after the tests.
func TestMain(m *testing.M) { gittest.Main(m) }
