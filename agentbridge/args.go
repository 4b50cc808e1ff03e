package agentbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// maxInt is the upper bound of an integer argument that has none.
const maxInt = int(^uint(0) >> 1)

// args holds the arguments of one call in canonical key names. Values are
// decoded lazily by the typed getters, which name the key (in the caller's
// dialect) in every error.
type args struct {
	tool  string                     // tool name as called, for messages
	m     map[string]json.RawMessage // canonical key -> raw value
	alias map[string]string          // canonical key -> key as the dialect names it
	// rename is the dialect's key map (dialect -> canonical), also used
	// for the keys of nested objects (edits[]).
	rename map[string]string
	// schemaKeys are the keys the tool's schema names: of two dialect
	// keys for one canonical key, a message names the schema's.
	schemaKeys map[string]bool
	// dialect is the caller's dialect; nil in tests that build args by
	// hand (canonical).
	dialect *dialect
	// cwd is the directory relative paths resolve against, a name of the
	// workspace FS ("" is the root): the session's current directory, or
	// the directory a shell call names (paths.go).
	cwd string
	// sess is the caller's session (shell_session.go); nil only in tests that
	// build args by hand.
	sess *Session
	// content, when a tool sets it, is the result's content parts (an
	// image Read returns); the text returned stays its description.
	content []Content
}

// parseArgs decodes raw as a JSON object and renames the dialect's keys to
// canonical ones. A key the tool's schema does not have is refused by
// name (after the tool's reshape, which may refuse it more precisely):
// dropped, it could change what the call does without the caller knowing.
func parseArgs(t *dialectTool, raw json.RawMessage) (*args, error) {
	a := &args{tool: t.name, m: map[string]json.RawMessage{}, alias: map[string]string{}, rename: t.rename, schemaKeys: t.keys()}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("%s: arguments must be a JSON object: %v", t.name, jsonErr(err))
	}
	known := t.keys()
	var unknown []string
	for k, v := range in {
		if _, alias := t.rename[k]; !known[k] && !alias {
			unknown = append(unknown, k)
		}
		c := k
		if r, ok := t.rename[k]; ok {
			c = r
			a.alias[c] = k
		}
		a.m[c] = v
	}
	if t.reshape != nil {
		if err := t.reshape(a); err != nil {
			return nil, err
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, 0, len(known))
		for k := range known {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, a.errf("unknown %s %s; %s takes %s", plural(len(unknown), "argument", "arguments"),
			quoteList(unknown), t.name, strings.Join(names, ", "))
	}
	return a, nil
}

func quoteList(ks []string) string {
	q := make([]string, len(ks))
	for i, k := range ks {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}

func jsonErr(err error) string {
	s := err.Error()
	return strings.TrimPrefix(s, "json: ")
}

func (a *args) key(k string) string {
	if d, ok := a.alias[k]; ok {
		return d
	}
	return dialectArg(a.rename, a.schemaKeys, k)
}

// dialectArg is what a tool calls canonical key k: the rename to k its
// schema lists, else k itself, else any rename to k (an alias).
func dialectArg(rename map[string]string, schema map[string]bool, k string) string {
	alias := ""
	for d, c := range rename {
		if c != k {
			continue
		}
		if schema[d] {
			return d
		}
		if alias == "" || d < alias {
			alias = d
		}
	}
	if alias == "" || schema[k] {
		return k
	}
	return alias
}

func (a *args) errf(format string, v ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{a.tool}, v...)...)
}

func (a *args) present(k string) bool {
	v, ok := a.m[k]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

func (a *args) missing(k string) error {
	return a.errf("missing required argument %q", a.key(k))
}

func (a *args) str(k string, required bool) (string, error) {
	if !a.present(k) {
		if required {
			return "", a.missing(k)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(a.m[k], &s); err != nil {
		return "", a.errf("argument %q must be a string, got %s", a.key(k), brief(a.m[k]))
	}
	if required && s == "" {
		return "", a.errf("argument %q must not be empty", a.key(k))
	}
	return s, nil
}

// integer decodes an integer in [lo, hi]; numeric strings are accepted
// because models send them.
func (a *args) integer(k string, def, lo, hi int) (int, error) {
	if !a.present(k) {
		return def, nil
	}
	raw := bytes.TrimSpace(a.m[k])
	var n int
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil && f == float64(int64(f)) {
		n = int(f)
	} else if s, serr := strconv.Unquote(string(raw)); serr == nil {
		v, perr := strconv.Atoi(strings.TrimSpace(s))
		if perr != nil {
			return 0, a.errf("argument %q must be an integer, got %s", a.key(k), brief(raw))
		}
		n = v
	} else {
		return 0, a.errf("argument %q must be an integer, got %s", a.key(k), brief(raw))
	}
	if n < lo || n > hi {
		return 0, a.errf("argument %q must be between %d and %d, got %d", a.key(k), lo, hi, n)
	}
	return n, nil
}

func (a *args) boolean(k string, def bool) (bool, error) {
	if !a.present(k) {
		return def, nil
	}
	raw := bytes.TrimSpace(a.m[k])
	switch string(raw) {
	case "true", `"true"`:
		return true, nil
	case "false", `"false"`:
		return false, nil
	}
	return false, a.errf("argument %q must be true or false, got %s", a.key(k), brief(raw))
}

// strs decodes a list of strings; a single string is a one-element list.
func (a *args) strs(k string) ([]string, error) {
	if !a.present(k) {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(a.m[k], &list); err == nil {
		return list, nil
	}
	var s string
	if err := json.Unmarshal(a.m[k], &s); err == nil {
		return []string{s}, nil
	}
	return nil, a.errf("argument %q must be a list of strings, got %s", a.key(k), brief(a.m[k]))
}

func (a *args) set(k string, v any) {
	b, _ := json.Marshal(v)
	a.m[k] = b
}

// brief quotes a raw JSON value for an error message, shortened.
func brief(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
