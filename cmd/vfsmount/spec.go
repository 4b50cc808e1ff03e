package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// A mount reaches the workspace in three steps, whatever its origin:
//
//  1. parse: a --mount flag ([parseSpec]) or a config entry ([loadConfig])
//     becomes a rawSpec: an ordered list of key/value pairs plus where it
//     came from. Nothing is interpreted yet.
//  2. validate: [validateSpec] checks a rawSpec against the mount type it
//     names (see registry.go) and produces a mountSpec with typed values;
//     [validateSpecs] adds the checks across specs (duplicate dst).
//  3. build: the type's build function turns a mountSpec into a mounts.FS
//     (workspace.go).
//
// Flags and config files share steps 2 and 3, so they accept exactly the
// same keys and report the same errors.

// rawItem is one key of a spec as written. Bare is set for a key given
// without a value ("ro" in a flag, "ro:" with a null value in YAML), which
// means true for a boolean key and is an error for any other.
type rawItem struct {
	Key   string
	Value string
	Bare  bool
	// List is a sequence value (a config file's `command: [a, b]`);
	// IsList says the value was one.
	List   []string
	IsList bool
}

// rawSpec is a mount as written, before validation.
type rawSpec struct {
	// Origin names the spec in error messages: `--mount "type=memory"`,
	// `ws.yaml:4` or `default`.
	Origin string
	Items  []rawItem
	// BaseDir resolves relative host paths: the working directory for
	// flags, the config file's directory for config entries.
	BaseDir string
	// Optional marks a mount of the default workspace: when its source
	// has nothing to serve (a spec error while building it, such as a
	// repository without a commit), it is left out with a log line
	// instead of failing the workspace.
	Optional bool
}

// keyAliases maps the Docker spellings onto the canonical keys, so
// `source=`, `target=` and `readonly` work as they do for `docker run
// --mount`.
var keyAliases = map[string]string{
	"source":      "src",
	"destination": "dst",
	"target":      "dst",
	"readonly":    "ro",
}

func canonicalKey(k string) string {
	if c, ok := keyAliases[k]; ok {
		return c
	}
	return k
}

// parseSpec parses a Docker-style mount spec: comma-separated key=value
// pairs, CSV-quoted where a value holds a comma ("src=\"a,b\""), a bare key
// meaning true. It checks syntax only; [validateSpec] checks meaning.
func parseSpec(s, baseDir string) (rawSpec, error) {
	raw := rawSpec{Origin: fmt.Sprintf("--mount %q", s), BaseDir: baseDir}
	if strings.TrimSpace(s) == "" {
		return raw, specErrorf(raw.Origin, "empty mount spec (want e.g. type=memory,dst=/memory)")
	}
	if strings.ContainsAny(s, "\n\r") {
		return raw, specErrorf(raw.Origin, "a mount spec is one line")
	}
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	fields, err := r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = fmt.Errorf("column %d: %w", pe.Column, pe.Err)
		}
		return raw, specErrorf(raw.Origin, "%v", err)
	}
	if _, err := r.Read(); err != io.EOF {
		return raw, specErrorf(raw.Origin, "a mount spec is one line")
	}
	for _, f := range fields {
		k, v, hasValue := strings.Cut(f, "=")
		k = strings.TrimSpace(k)
		if k == "" {
			if f == "" {
				return raw, specErrorf(raw.Origin, "empty option (stray comma?)")
			}
			return raw, specErrorf(raw.Origin, "option %q has no key", f)
		}
		raw.Items = append(raw.Items, rawItem{Key: k, Value: v, Bare: !hasValue})
	}
	return raw, nil
}

// mountSpec is a validated mount: its type, its place in the workspace and
// its typed options.
type mountSpec struct {
	Origin string
	// Optional as in rawSpec.
	Optional bool
	Type     string
	// Dst is absolute and clean: "/memory", "/agent/skills".
	Dst string
	// values holds the options other than type and dst, typed as the
	// mount type declares: string, bool, or (for kindPath) an absolute,
	// clean host path.
	values map[string]any
}

// String returns a string or path option, "" when absent.
func (s *mountSpec) String(key string) string {
	v, _ := s.values[key].(string)
	return v
}

// Bool returns a boolean option, false when absent.
func (s *mountSpec) Bool(key string) bool {
	v, _ := s.values[key].(bool)
	return v
}

// Strings returns a list option, nil when absent.
func (s *mountSpec) Strings(key string) []string {
	v, _ := s.values[key].([]string)
	return v
}

// Has reports whether the option was given.
func (s *mountSpec) Has(key string) bool {
	_, ok := s.values[key]
	return ok
}

// validateSpec checks one spec against the registry and types its values.
// Every error is a *specError naming raw.Origin and, where one is at fault,
// the key.
func validateSpec(reg registry, raw rawSpec) (mountSpec, error) {
	spec := mountSpec{Origin: raw.Origin, Optional: raw.Optional, values: map[string]any{}}
	seen := map[string]bool{}
	var items []rawItem
	for _, it := range raw.Items {
		it.Key = canonicalKey(it.Key)
		if seen[it.Key] {
			return spec, specErrorf(raw.Origin, "key %q given twice", it.Key)
		}
		seen[it.Key] = true
		items = append(items, it)
	}
	for _, it := range items {
		switch it.Key {
		case "type":
			if it.Bare || it.Value == "" {
				return spec, specErrorf(raw.Origin, "key \"type\" needs a value (one of %s)", reg.names())
			}
			spec.Type = it.Value
		case "dst":
			if it.Bare || it.Value == "" {
				return spec, specErrorf(raw.Origin, "key \"dst\" needs a value (an absolute path such as /memory)")
			}
			spec.Dst = it.Value
		}
	}
	if spec.Type == "" {
		return spec, specErrorf(raw.Origin, "missing key \"type\" (one of %s)", reg.names())
	}
	mt, ok := reg[spec.Type]
	if !ok {
		return spec, specErrorf(raw.Origin, "unknown mount type %q (known: %s)", spec.Type, reg.names())
	}
	if spec.Dst == "" {
		return spec, specErrorf(raw.Origin, "missing key \"dst\" (an absolute path such as /%s)", spec.Type)
	}
	if err := checkDst(spec.Dst); err != nil {
		return spec, specErrorf(raw.Origin, "dst %q %v", spec.Dst, err)
	}
	for _, it := range items {
		if it.Key == "type" || it.Key == "dst" {
			continue
		}
		ks, ok := mt.Keys[it.Key]
		if !ok && it.Key == "writable" {
			return spec, specErrorf(raw.Origin, "key \"writable\" is for type git, which it makes copy-on-write; "+
				"type %s cannot have it (%s)", mt.Name, mt.allowed())
		}
		if !ok {
			return spec, specErrorf(raw.Origin, "unknown key %q for type %s (%s)", it.Key, mt.Name, mt.allowed())
		}
		v, err := ks.Kind.parse(it, raw.BaseDir)
		if err != nil {
			return spec, specErrorf(raw.Origin, "key %q: %v", it.Key, err)
		}
		spec.values[it.Key] = v
	}
	for _, k := range sortedKeys(mt.Keys) {
		if mt.Keys[k].Required && !spec.Has(k) {
			return spec, specErrorf(raw.Origin, "type %s needs key %q", mt.Name, k)
		}
	}
	if mt.Check != nil {
		if err := mt.Check(&spec); err != nil {
			return spec, err
		}
	}
	return spec, nil
}

// validateSpecs validates every spec and the table they form: no two
// mounts on one dst. Whether a dst lies under a file of its parent mount is
// known only once the mounts exist; union.New checks that.
func validateSpecs(reg registry, raws []rawSpec) ([]mountSpec, error) {
	specs := make([]mountSpec, 0, len(raws))
	byDst := map[string]string{}
	for _, raw := range raws {
		s, err := validateSpec(reg, raw)
		if err != nil {
			return nil, err
		}
		if prev, dup := byDst[s.Dst]; dup {
			return nil, specErrorf(s.Origin, "dst %q is already mounted by %s", s.Dst, prev)
		}
		byDst[s.Dst] = s.Origin
		specs = append(specs, s)
	}
	if err := checkUppers(specs, ""); err != nil {
		return nil, err
	}
	return specs, nil
}

// checkDst accepts an absolute, clean workspace path whose components are
// valid mount names. The message reads after `dst "x" `.
func checkDst(dst string) error {
	switch {
	case !strings.HasPrefix(dst, "/"):
		return errors.New("must be an absolute path (start with /)")
	case path.Clean(dst) != dst:
		return fmt.Errorf("is not clean (did you mean %q?)", path.Clean(dst))
	case dst != "/" && !mounts.ValidPath(dst[1:]):
		return errors.New("holds an invalid name (control character or empty component)")
	}
	return nil
}

// keyKind is the type of an option value.
type keyKind int

const (
	kindString keyKind = iota
	kindBool
	// kindPath is a host path, made absolute against the spec's base
	// directory (the working directory, or the config file's directory).
	kindPath
	// kindSource is a URL (scheme://... or scp-style user@host:path), kept
	// verbatim, or else a host path treated as kindPath: a git source.
	kindSource
	// kindArgv is a command line as a list of words: in a config file
	// only (`command: [kubectl, exec, -i, pod, --, vfsmount, peer, /w]`).
	kindArgv
)

func (k keyKind) String() string {
	switch k {
	case kindBool:
		return "bool"
	case kindPath:
		return "path"
	case kindSource:
		return "path or URL"
	case kindArgv:
		return "list of words"
	}
	return "string"
}

func (k keyKind) parse(it rawItem, baseDir string) (any, error) {
	switch {
	case k == kindArgv && !it.IsList:
		return nil, errors.New("want a list of words, given in a config file: [program, arg, ...]")
	case k == kindArgv && len(it.List) == 0:
		return nil, errors.New("needs at least the program")
	case k == kindArgv:
		for _, w := range it.List {
			if strings.IndexByte(w, 0) >= 0 {
				return nil, errors.New("holds a NUL byte")
			}
		}
		return it.List, nil
	case it.IsList:
		return nil, fmt.Errorf("want a single value (a %s), got a list", k)
	}
	if k == kindBool {
		if it.Bare {
			return true, nil
		}
		b, err := strconv.ParseBool(it.Value)
		if err != nil {
			return nil, fmt.Errorf("want true or false, got %q", it.Value)
		}
		return b, nil
	}
	if it.Bare || it.Value == "" {
		return nil, fmt.Errorf("needs a value (a %s)", k)
	}
	if strings.IndexByte(it.Value, 0) >= 0 {
		return nil, errors.New("holds a NUL byte")
	}
	if k == kindSource && isURL(it.Value) {
		return it.Value, nil
	}
	if k == kindPath || k == kindSource {
		p := it.Value
		if !filepath.IsAbs(p) {
			p = filepath.Join(baseDir, p)
		}
		return filepath.Clean(p), nil
	}
	return it.Value, nil
}

// isURL reports whether a source names a remote: "https://host/repo",
// "file:///srv/repo", or scp-style "git@host:repo" (a colon before any
// slash, as git itself decides).
func isURL(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	colon := strings.IndexByte(s, ':')
	return colon > 0 && !strings.Contains(s[:colon], "/")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
