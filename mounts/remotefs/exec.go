package remotefs

import "github.com/vfsmount/vfsmount/mounts/remotefs/wire"

// execEvent delivers a command's output or exit to the one waiting.
func (f *ReadOnlyFS) execEvent(ev wire.Event) {}
