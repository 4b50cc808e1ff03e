package main

import (
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/workspace"
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

// loadCheckpointConfig validates the checkpoint: section of file (nil:
// none, the defaults).
func loadCheckpointConfig(file *configFile) (checkpointSettings, error) {
	s := checkpointSettings{Keep: defaultKeep}
	if file == nil || file.Checkpoint == nil {
		return s, nil
	}
	c := file.Checkpoint
	for _, v := range c.Before {
		if !slices.Contains(workspace.AutoVerbs, v) {
			return s, usageErrorf("config: checkpoint.before: %q is not a verb that changes the tree: want some of %s", v, strings.Join(workspace.AutoVerbs, ", "))
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
