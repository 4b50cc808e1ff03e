package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/policy"
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

// policyFlags are the policy flags of every subcommand that builds a
// workspace. They add to the config file's lists; --audit and --approval
// replace the file's.
type policyFlags struct {
	DryRun          bool
	Audit           string
	DenyRead        []string
	DenyWrite       []string
	ReadOnly        []string
	Approval        string
	ApprovalOn      []string
	ApprovalTimeout time.Duration
	// Limits and the audit log's rotation size, as flags; they replace
	// the config file's values. Sizes take units (16MiB).
	MaxFileBytes    string
	MaxReadBytes    string
	MaxOutputBytes  string
	MaxShellTimeout time.Duration
	AuditMaxBytes   string
}

func (p *policyFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&p.DryRun, "dry-run", false, "change nothing: effectful tools report what they would do (edit shows the diff) and the kernel face is mounted read-only")
	fs.StringVar(&p.Audit, "audit", "", "append a JSON Lines audit log of every change and tool call to `FILE`")
	fs.StringArrayVar(&p.DenyRead, "deny-read", nil, "refuse reading entries matching the gitignore-style `PATTERN` on workspace paths, e.g. '*.env' (repeatable)")
	fs.StringArrayVar(&p.DenyWrite, "deny-write", nil, "refuse changing entries matching `PATTERN`, e.g. '/repo/.git/' (repeatable)")
	fs.StringArrayVar(&p.ReadOnly, "read-only", nil, "make the workspace path `PREFIX` and everything below it read-only (EROFS; repeatable)")
	fs.StringVar(&p.Approval, "approval", "", "ask `CMD` (split at spaces, run without a shell) before effectful tool calls: the call is its stdin, exit 0 allows")
	fs.StringSliceVar(&p.ApprovalOn, "approval-on", nil, "tool verbs that need --approval (`LIST` of write,edit,delete,shell; default all four)")
	fs.DurationVar(&p.ApprovalTimeout, "approval-timeout", 0, "deny a call when --approval takes longer than `D` (default 30s)")
	fs.StringVar(&p.MaxFileBytes, "max-file-bytes", "", "largest file write and edit accept (`SIZE`, e.g. 16MiB; the default)")
	fs.StringVar(&p.MaxReadBytes, "max-read-bytes", "", "most bytes one read returns (`SIZE`; default 1MiB)")
	fs.StringVar(&p.MaxOutputBytes, "max-output-bytes", "", "largest tool output (`SIZE`; default 2MiB)")
	fs.DurationVar(&p.MaxShellTimeout, "max-shell-timeout", 0, "longest shell timeout a call may ask for (`D`; default and most 10m)")
	fs.StringVar(&p.AuditMaxBytes, "audit-max-bytes", "", "rotate the audit log to FILE.1 past `SIZE` (e.g. 64MiB)")
}

// limitFlags applies the limit flags over pc.Limits and the audit log's
// rotation size over pc.Audit.
func (p *policyFlags) limitFlags(pc *policyConfig) error {
	sizes := []struct {
		flag, val string
		set       func(int64)
	}{
		{"--max-file-bytes", p.MaxFileBytes, func(v int64) { pc.Limits.MaxFileBytes = v }},
		{"--max-read-bytes", p.MaxReadBytes, func(v int64) { pc.Limits.MaxReadBytes = int(v) }},
		{"--max-output-bytes", p.MaxOutputBytes, func(v int64) { pc.Limits.MaxOutputBytes = int(v) }},
		{"--audit-max-bytes", p.AuditMaxBytes, func(v int64) {
			if pc.Audit != nil {
				pc.Audit.MaxBytes = v
			}
		}},
	}
	for _, s := range sizes {
		if s.val == "" {
			continue
		}
		v, err := parseByteSize(s.val)
		if err != nil {
			return usageErrorf("%s: %v", s.flag, err)
		}
		if v <= 0 {
			return usageErrorf("%s: must be positive, got %q", s.flag, s.val)
		}
		s.set(v)
	}
	if p.AuditMaxBytes != "" && pc.Audit == nil {
		return usageErrorf("--audit-max-bytes needs an audit log (--audit or audit: in the config)")
	}
	switch {
	case p.MaxShellTimeout < 0:
		return usageErrorf("--max-shell-timeout: must be positive, got %s", p.MaxShellTimeout)
	case p.MaxShellTimeout > agentbridge.DefaultMaxShellTimeout:
		return usageErrorf("--max-shell-timeout: at most %s, got %s", agentbridge.DefaultMaxShellTimeout, p.MaxShellTimeout)
	case p.MaxShellTimeout > 0:
		pc.Limits.MaxShellTimeout = p.MaxShellTimeout
	}
	return nil
}

// policyConfig is the merged, validated policy of a workspace.
type policyConfig struct {
	Rules    *policy.RuleSet
	Limits   agentbridge.Limits
	Audit    *policy.AuditOptions // nil: no audit log
	Approver *policy.Approver     // nil: no approvals
	DryRun   bool
}

// loadPolicy merges the config file's sections with the flags and
// validates them. Every error is a usage error naming the key or flag.
func loadPolicy(file *configFile, f *policyFlags) (*policyConfig, error) {
	pc := &policyConfig{DryRun: f.DryRun}
	var rules policy.Rules
	var approval *policy.ApprovalOptions
	base := ""
	if file != nil {
		base = file.baseDir
		pc.DryRun = pc.DryRun || file.DryRun
		if p := file.Policy; p != nil {
			rules = policy.Rules{DenyRead: p.DenyRead, DenyWrite: p.DenyWrite, ReadOnly: p.ReadOnly}
			if l := p.Limits; l != nil {
				pc.Limits = agentbridge.Limits{
					MaxFileBytes:    int64(l.MaxFileBytes),
					MaxReadBytes:    int(l.MaxReadBytes),
					MaxShellTimeout: time.Duration(l.MaxShellTimeout),
					MaxOutputBytes:  int(l.MaxOutputBytes),
				}
				if pc.Limits.MaxShellTimeout > agentbridge.DefaultMaxShellTimeout {
					return nil, usageErrorf("policy: limits: max_shell_timeout: at most %s", agentbridge.DefaultMaxShellTimeout)
				}
			}
		}
		if a := file.Audit; a != nil {
			if a.Path == "" {
				return nil, usageErrorf("audit: path: missing (audit: {path: FILE})")
			}
			pc.Audit = &policy.AuditOptions{Path: hostPath(base, a.Path), MaxBytes: int64(a.MaxBytes)}
		}
		if a := file.Approval; a != nil {
			approval = &policy.ApprovalOptions{Command: a.Command, On: a.On, Timeout: time.Duration(a.Timeout)}
		}
	}
	rules.DenyRead = append(rules.DenyRead, f.DenyRead...)
	rules.DenyWrite = append(rules.DenyWrite, f.DenyWrite...)
	rules.ReadOnly = append(rules.ReadOnly, f.ReadOnly...)
	rs, err := policy.Compile(rules)
	if err != nil {
		return nil, usageErrorf("policy: %v", err)
	}
	pc.Rules = rs
	if f.Audit != "" {
		max := int64(0)
		if pc.Audit != nil {
			max = pc.Audit.MaxBytes
		}
		pc.Audit = &policy.AuditOptions{Path: f.Audit, MaxBytes: max}
	}
	if f.Approval != "" {
		approval = &policy.ApprovalOptions{Command: strings.Fields(f.Approval)}
		base = "" // a flag's relative command is relative to the working directory
	}
	if err := f.limitFlags(pc); err != nil {
		return nil, err
	}
	if approval != nil && len(f.ApprovalOn) > 0 {
		approval.On = f.ApprovalOn
	}
	if approval != nil && f.ApprovalTimeout != 0 {
		approval.Timeout = f.ApprovalTimeout
	}
	if approval == nil && (len(f.ApprovalOn) > 0 || f.ApprovalTimeout != 0) {
		return nil, usageErrorf("--approval-on and --approval-timeout need an approval command (--approval or approval: in the config)")
	}
	if approval != nil {
		if len(approval.Command) > 0 && strings.Contains(approval.Command[0], "/") {
			approval.Command[0] = hostPath(base, approval.Command[0])
		}
		if pc.Approver, err = policy.NewApprover(*approval); err != nil {
			return nil, usageError(err)
		}
	}
	return pc, nil
}

// hostPath resolves a relative host path of the config file against its
// directory.
func hostPath(base, p string) string {
	if base == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

// effectful reports whether a canonical verb changes anything.
func effectful(verb string) bool {
	switch verb {
	case agentbridge.VerbWrite, agentbridge.VerbEdit, agentbridge.VerbDelete, agentbridge.VerbShell:
		return true
	}
	return false
}

// toolHooks returns the agentbridge hooks of the workspace's policy:
// approvals before effectful calls, and one audit line after every call.
func (ws *workspace) toolHooks() (before func(context.Context, *agentbridge.CallInfo) error,
	after func(context.Context, *agentbridge.CallInfo, agentbridge.Result, time.Duration)) {
	pc := ws.Policy
	if pc != nil && pc.Approver != nil {
		ap := pc.Approver
		before = func(ctx context.Context, c *agentbridge.CallInfo) error {
			// A dry run changes nothing, so there is nothing to approve.
			if c.DryRun || !ap.Applies(c.Verb) {
				return nil
			}
			call, err := json.Marshal(c)
			if err != nil {
				return fmt.Errorf("not approved: the call cannot be encoded: %v", err)
			}
			return ap.Approve(ctx, call)
		}
	}
	if ws.Audit != nil {
		log := ws.Audit
		after = func(_ context.Context, c *agentbridge.CallInfo, res agentbridge.Result, d time.Duration) {
			out, why := "ok", ""
			switch {
			case c.Refused != "":
				out, why = "denied", c.Refused
			case res.IsError:
				// The text of a tool error may quote the file (an edit's
				// "most similar line"): the line says only that it failed.
				out = "error"
			case c.DryRun && effectful(c.Verb):
				out = "dry-run"
			}
			log.ToolCall(policy.ToolCall{CallID: c.ID, Tool: c.Tool, Verb: c.Verb, Args: c.Summary(),
				Paths: c.Paths, Outcome: out, Error: why, Duration: d})
		}
	}
	return before, after
}

// applyPolicy stacks the policy decorators on the union. The path rules
// also show a mount covered by a read_only prefix as read-only in the
// mount table they forward.
func (ws *workspace) applyPolicy(pc *policyConfig) {
	ws.Policy = pc
	if pc == nil {
		return
	}
	if !pc.Rules.Empty() {
		ws.FS = policy.Guard(ws.FS, pc.Rules)
	}
	if ws.Audit != nil {
		ws.FS = policy.Audit(ws.FS, ws.Audit)
	}
}

// kernelReadOnly reports whether the kernel face is mounted read-only: in
// a dry run, and when nothing in the tree can change.
func (ws *workspace) kernelReadOnly() bool {
	return (ws.Policy != nil && ws.Policy.DryRun) || !mounts.Writable(ws.FS)
}

// immutableRoots are the directories the kernel face serves on connections
// of their own (fusefs.Options.ImmutableRoots): the mount points of
// immutable mounts with no other mount below them, or "." when every
// mount is immutable.
func (ws *workspace) immutableRoots() []string {
	var roots []string
	all := true
	for _, m := range ws.Mounts() {
		name := strings.TrimPrefix(m.Prefix, "/")
		if name == "" {
			name = "."
		}
		if !mounts.DescribeAt(ws.FS, name).Immutable {
			all = false
			continue
		}
		nested := false
		for _, o := range ws.Mounts() {
			if o.Prefix != m.Prefix && (m.Prefix == "/" || strings.HasPrefix(o.Prefix, m.Prefix+"/")) {
				nested = true
			}
		}
		if !nested && name != "." {
			roots = append(roots, name)
		}
	}
	if all && len(ws.Mounts()) > 0 {
		return []string{"."}
	}
	return roots
}

// toolFS is the tree the tool face gets before cache invalidation is
// stacked on: in a dry run, one that refuses every change.
func (ws *workspace) toolFS() mounts.FS {
	if ws.Policy != nil && ws.Policy.DryRun {
		return policy.Freeze(ws.FS)
	}
	return ws.FS
}
