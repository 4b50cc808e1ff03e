package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// configCheckpoint is the checkpoint: section of the config file:
//
//	checkpoint:
//	  before: [write, edit, delete, shell]   # a checkpoint before each such tool call
//	  keep: 50                               # the newest 50 are kept
//	  tools: true                            # offer the checkpoint_* tools
type configCheckpoint struct {
	Before []string `yaml:"before"`
	Keep   *int     `yaml:"keep"`
	Tools  bool     `yaml:"tools"`
}

// defaultKeep bounds the checkpoints of a workspace when the config says
// nothing: automatic ones come with every effectful call.
const defaultKeep = 50

// checkpointSettings are the validated checkpoint settings.
type checkpointSettings struct {
	// Before are the canonical verbs a checkpoint precedes.
	Before []string
	// Keep bounds the number of checkpoints (0: none dropped).
	Keep int
	// Tools offers the checkpoint tool family.
	Tools bool
}

// autoVerbs are the verbs automatic checkpoints may precede: those that
// change the tree.
var autoVerbs = []string{agentbridge.VerbWrite, agentbridge.VerbEdit, agentbridge.VerbDelete, agentbridge.VerbShell}

// loadCheckpointConfig validates the checkpoint: section of file (nil:
// none, the defaults).
func loadCheckpointConfig(file *configFile) (checkpointSettings, error) {
	s := checkpointSettings{Keep: defaultKeep}
	if file == nil || file.Checkpoint == nil {
		return s, nil
	}
	c := file.Checkpoint
	for _, v := range c.Before {
		if !slices.Contains(autoVerbs, v) {
			return s, usageErrorf("config: checkpoint.before: %q is not a verb that changes the tree: want some of %s", v, strings.Join(autoVerbs, ", "))
		}
		if !slices.Contains(s.Before, v) {
			s.Before = append(s.Before, v)
		}
	}
	if c.Keep != nil {
		if *c.Keep < 0 {
			return s, usageErrorf("config: checkpoint.keep: must not be negative, got %d (0 keeps every checkpoint)", *c.Keep)
		}
		s.Keep = *c.Keep
	}
	s.Tools = c.Tools
	return s, nil
}

// autoNote is the line a tool result ends with when a checkpoint was taken
// before the call.
func autoNote(id string) string {
	return fmt.Sprintf("[checkpoint %s was taken before this call: restoring it undoes everything the call changed]", id)
}
