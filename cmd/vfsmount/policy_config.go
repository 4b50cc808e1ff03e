package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The policy sections of the config file:
//
//	policy:
//	  deny_read: ["*.env", "/repo/secrets/"]
//	  deny_write: ["/repo/.git/"]
//	  read_only: [/repo]
//	  limits: {max_file_bytes: 16MiB, max_read_bytes: 1MiB, max_shell_timeout: 10m, max_output_bytes: 2MiB}
//	audit: {path: audit.jsonl, max_bytes: 64MiB}
//	approval: {command: [./approve.sh], on: [write, edit, delete, shell], timeout: 30s}
//	dry_run: false
type configPolicy struct {
	DenyRead  []string      `yaml:"deny_read"`
	DenyWrite []string      `yaml:"deny_write"`
	ReadOnly  []string      `yaml:"read_only"`
	Limits    *configLimits `yaml:"limits"`
}

type configLimits struct {
	MaxFileBytes    byteSize    `yaml:"max_file_bytes"`
	MaxReadBytes    byteSize    `yaml:"max_read_bytes"`
	MaxShellTimeout durationVal `yaml:"max_shell_timeout"`
	MaxOutputBytes  byteSize    `yaml:"max_output_bytes"`
}

type configAudit struct {
	Path     string   `yaml:"path"`
	MaxBytes byteSize `yaml:"max_bytes"`
}

type configApproval struct {
	Command argvVal     `yaml:"command"`
	On      []string    `yaml:"on"`
	Timeout durationVal `yaml:"timeout"`
}

// byteSize is a size in bytes: a number, or a number with a unit (KiB,
// MiB, GiB; K, M, G and KB, MB, GB mean the same powers of two).
type byteSize int64

func (b *byteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseByteSize(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return &lineError{n.Line, fmt.Sprintf("want a size such as 1048576 or 16MiB, got %s", nodeKind(n))}
	}
	*b = byteSize(v)
	return nil
}

func parseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return v * mult, nil
}

// durationVal is a Go duration ("30s", "10m").
type durationVal time.Duration

func (d *durationVal) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode || v <= 0 {
		return &lineError{n.Line, fmt.Sprintf("want a positive duration such as 30s, got %s", nodeKind(n))}
	}
	*d = durationVal(v)
	return nil
}

// argvVal is a command: a list (the argv, exactly) or a string split at
// white space (no quoting; use a list, or ["sh", "-c", "..."]).
type argvVal []string

func (a *argvVal) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*a = strings.Fields(n.Value)
		return nil
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			return &lineError{n.Line, "command: want a list of strings"}
		}
		*a = list
		return nil
	}
	return &lineError{n.Line, fmt.Sprintf("command: want a string or a list of strings, got %s", nodeKind(n))}
}
