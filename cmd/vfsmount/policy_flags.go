package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/vfsmount/vfsmount/agentbridge"
)

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
