package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// configFile is the YAML config file. Decoding uses KnownFields, so a key
// this struct does not declare is an error; later sections (tools, policy,
// audit) are fields added here.
//
//	mounts:
//	  - {type: memory, dst: /memory}
//	  - {type: git, src: ., rev: main, dst: /repo}
type configFile struct {
	Mounts []configMount `yaml:"mounts"`
	// Tools is the tool face's allowlist (canonical names); it may only
	// narrow what the mounts offer. nil: every tool they can serve.
	Tools []string `yaml:"tools"`
	// Policy, Audit, Approval and DryRun are the policy sections (see
	// policy_config.go in this package).
	Policy   *configPolicy   `yaml:"policy"`
	Audit    *configAudit    `yaml:"audit"`
	Approval *configApproval `yaml:"approval"`
	DryRun   bool            `yaml:"dry_run"`
	// Checkpoint turns on automatic checkpoints and the checkpoint tools
	// (checkpoint_config.go).
	Checkpoint *configCheckpoint `yaml:"checkpoint"`
	// Store is where checkpoints are pushed (store_config.go).
	Store *configStore `yaml:"store"`
	// Lints are the linters of the readLints tool (lints_config.go).
	Lints []configLint `yaml:"lints"`
	// Semsearch names the embeddings endpoint that makes the tool face
	// offer semSearch (semsearch_config.go).
	Semsearch *configSemsearch `yaml:"semsearch"`

	// baseDir resolves relative host paths of the policy sections.
	baseDir string
}

// configMount is one entry of mounts:, kept as raw key/value pairs so that
// it goes through the same validator as a --mount flag.
type configMount struct {
	raw  rawSpec
	line int
}

// lineError is a problem at a line of the config file; loadConfig prefixes
// the file name.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// UnmarshalYAML takes a mapping of scalars. A null value (`ro:` or a bare
// `ro` in a flow mapping) is a bare key, as `ro` is in a --mount spec.
func (m *configMount) UnmarshalYAML(n *yaml.Node) error {
	m.line = n.Line
	if n.Kind != yaml.MappingNode {
		return &lineError{n.Line, fmt.Sprintf("a mount must be a mapping such as {type: memory, dst: /memory}, got %s", nodeKind(n))}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return &lineError{k.Line, fmt.Sprintf("a mount key must be a plain name, got %s", nodeKind(k))}
		}
		if v.Kind == yaml.SequenceNode && listKeys[k.Value] {
			item := rawItem{Key: k.Value, IsList: true, List: []string{}}
			for _, w := range v.Content {
				if w = resolveAlias(w); w.Kind != yaml.ScalarNode {
					return &lineError{w.Line, fmt.Sprintf("key %q: each word must be a plain value, got %s", k.Value, nodeKind(w))}
				}
				item.List = append(item.List, w.Value)
			}
			m.raw.Items = append(m.raw.Items, item)
			continue
		}
		if v.Kind != yaml.ScalarNode {
			return &lineError{v.Line, fmt.Sprintf("key %q: want a single value, got %s", k.Value, nodeKind(v))}
		}
		item := rawItem{Key: k.Value, Value: v.Value}
		if v.Tag == "!!null" {
			item = rawItem{Key: k.Value, Bare: true}
		}
		m.raw.Items = append(m.raw.Items, item)
	}
	return nil
}

// listKeys are the mount keys whose value is a list of words (kindArgv:
// a remote mount's command). Any other key given a list is an error at
// the list's line.
var listKeys = map[string]bool{"command": true}

// resolveAlias follows *anchor references to the node they name.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "something else"
}

// loadConfig reads and parses a config file. Relative host paths in it are
// resolved against the file's directory, so a config file means the same
// whatever the working directory.
func loadConfig(name string) (*configFile, []rawSpec, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, usageErrorf("config %s: cannot read: %v", name, err)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, nil, usageErrorf("config %s: %v", name, err)
	}
	return parseConfig(data, name, filepath.Dir(abs))
}

// parseConfig parses config data. origin names the file in messages.
// Every error is a usage error of one line: "origin:LINE: problem".
func parseConfig(data []byte, origin, baseDir string) (*configFile, []rawSpec, error) {
	var cfg configFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && err != io.EOF {
		return nil, nil, usageError(configError(origin, err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		line := extra.Line
		if err != nil {
			return nil, nil, usageError(configError(origin, err))
		}
		return nil, nil, usageErrorf("%s:%d: a config file holds one YAML document", origin, line)
	}
	cfg.baseDir = baseDir
	raws := make([]rawSpec, 0, len(cfg.Mounts))
	for _, m := range cfg.Mounts {
		r := m.raw
		r.Origin = fmt.Sprintf("%s:%d", origin, m.line)
		r.BaseDir = baseDir
		raws = append(raws, r)
	}
	return &cfg, raws, nil
}

var (
	reLine       = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	reNotFound   = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	reUnmarshal  = regexp.MustCompile("^cannot unmarshal (!!\\w+)(?: `(.*)`)? into (\\S+)$")
	yamlTagNames = map[string]string{
		"!!str": "a string", "!!int": "a number", "!!float": "a number", "!!bool": "a boolean",
		"!!seq": "a list", "!!map": "a mapping", "!!null": "null", "!!binary": "binary data",
		"!!timestamp": "a timestamp",
	}
	goTypeNames = map[string]string{
		"main.configFile":       "a mapping with keys: mounts, tools, policy, audit, approval, dry_run, checkpoint, lints",
		"[]main.configLint":     "a list of linters such as {glob: \"**/*.go\", command: [go, vet, ./...]}",
		"main.configLint":       "a mapping with keys: name, glob, command, format, severity, message, env, roots, timeout",
		"main.configCheckpoint": "a mapping with keys: before, keep, tools",
		"int":                   "a whole number",
		"[]main.configMount":    "a list of mounts",
		"main.configPolicy":     "a mapping with keys: deny_read, deny_write, read_only, limits",
		"main.configLimits":     "a mapping with keys: max_file_bytes, max_read_bytes, max_shell_timeout, max_output_bytes",
		"main.configAudit":      "a mapping with keys: path, max_bytes",
		"main.configApproval":   "a mapping with keys: command, on, timeout",
		"[]string":              "a list of strings",
		"string":                "a string",
		"bool":                  "true or false",
	}
)

// configError renders a yaml error as "origin:LINE: problem" in plain
// words: yaml's own messages name Go types and span several lines.
func configError(origin string, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return fmt.Errorf("%s:%d: %s", origin, le.line, le.msg)
	}
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		loc := origin
		if g := reLine.FindStringSubmatch(m); g != nil {
			loc, m = origin+":"+g[1], g[2]
		}
		m = strings.TrimPrefix(m, "yaml: ")
		if g := reNotFound.FindStringSubmatch(m); g != nil {
			m = fmt.Sprintf("unknown key %q", g[1])
		} else if g := reUnmarshal.FindStringSubmatch(m); g != nil {
			got := yamlTagNames[g[1]]
			if got == "" {
				got = g[1]
			}
			if g[2] != "" {
				got += fmt.Sprintf(" (%s)", g[2])
			}
			want := goTypeNames[g[3]]
			if want == "" {
				want = g[3]
			}
			m = fmt.Sprintf("want %s, got %s", want, got)
		}
		out = append(out, loc+": "+m)
	}
	return errors.New(strings.Join(out, "; "))
}
