package main

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/policy"
)

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
