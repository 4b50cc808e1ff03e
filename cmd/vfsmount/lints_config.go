package main

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// configLint is one entry of the lints: section of the config file: a
// linter the readLints tool runs (agentbridge.Linter), in the shell's
// namespace, so only where the tool face has a shell (serve, mcp, call).
//
//	lints:
//	  - glob: "**/*.go"
//	    command: [go, vet, ./...]         # runs in the module root (nearest go.mod)
//	  - glob: "**/*.go"
//	    command: [gofmt, -l, "{files}"]   # {files}: the files asked about
//	    format: files
//	  - name: staticcheck
//	    glob: "**/*.go"
//	    command: [staticcheck, -f, sarif, ./...]
//	    env: [GOFLAGS=-mod=mod]
//	    timeout: 5m
//
// Keys: glob and command (required); name, format (line, files, sarif,
// json; default: told from the output), severity, message, env, roots,
// timeout.
type configLint struct {
	Name     string      `yaml:"name"`
	Glob     string      `yaml:"glob"`
	Command  lintArgv    `yaml:"command"`
	Format   string      `yaml:"format"`
	Severity string      `yaml:"severity"`
	Message  string      `yaml:"message"`
	Env      []string    `yaml:"env"`
	Roots    []string    `yaml:"roots"`
	Timeout  durationVal `yaml:"timeout"`
}

// lintArgv is a linter's command: a list (the argv, exactly) or a string
// split at white space. In a flow list an unquoted {files} is a YAML
// mapping; it is taken for the "{files}" it was meant as.
type lintArgv []string

func (a *lintArgv) UnmarshalYAML(n *yaml.Node) error {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.ScalarNode:
		*a = strings.Fields(n.Value)
		return nil
	case yaml.SequenceNode:
		var out []string
		for _, e := range n.Content {
			e = resolveAlias(e)
			switch {
			case e.Kind == yaml.ScalarNode:
				out = append(out, e.Value)
			case e.Kind == yaml.MappingNode && len(e.Content) == 2 && e.Content[0].Value == "files" && e.Content[1].Tag == "!!null":
				out = append(out, "{files}")
			default:
				return &lineError{e.Line, fmt.Sprintf("command: each word must be a plain value, got %s", nodeKind(e))}
			}
		}
		*a = out
		return nil
	}
	return &lineError{n.Line, fmt.Sprintf("command: want a string or a list of strings, got %s", nodeKind(n))}
}

// loadLintsConfig validates the lints: section of file (nil: none, no
// readLints tool). Every error is a usage error naming lints[N].key.
func loadLintsConfig(file *configFile) ([]agentbridge.Linter, error) {
	if file == nil || len(file.Lints) == 0 {
		return nil, nil
	}
	out := make([]agentbridge.Linter, 0, len(file.Lints))
	for i, c := range file.Lints {
		l := agentbridge.Linter{
			Name: c.Name, Glob: c.Glob, Command: c.Command, Format: c.Format, Severity: c.Severity,
			Message: c.Message, Env: c.Env, Roots: c.Roots, Timeout: time.Duration(c.Timeout),
		}
		if err := l.Check(); err != nil {
			return nil, usageErrorf("config: lints[%d].%v", i, err)
		}
		out = append(out, l)
	}
	return out, nil
}
