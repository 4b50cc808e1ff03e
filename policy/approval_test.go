package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

func TestApprove(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "stdin")
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		allowed bool
		reason  string
	}{
		{"allow", "cat > " + seen + "; exit 0", 0, true, ""},
		{"deny with reason", "cat >/dev/null; echo 'no writes to /repo on Fridays'; exit 3", 0, false, "no writes to /repo on Fridays"},
		{"deny without reason", "exit 1", 0, false, "the approval command exited with status 1"},
		{"timeout", "sleep 10", 200 * time.Millisecond, false, "the approval command timed out after 200ms"},
		{"crash", "kill -SEGV $$", 0, false, "the approval command crashed (segmentation fault)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewApprover(ApprovalOptions{Command: []string{"sh", "-c", tt.script}, Timeout: tt.timeout})
			require.NoError(t, err)
			start := time.Now()
			err = a.Approve(context.Background(), []byte(`{"tool":"write","args":{"path":"/memory/a"}}`))
			assert.Less(t, time.Since(start), 5*time.Second, "a timeout kills the command")
			if tt.allowed {
				require.NoError(t, err)
				got, rerr := os.ReadFile(seen)
				require.NoError(t, rerr)
				assert.JSONEq(t, `{"tool":"write","args":{"path":"/memory/a"}}`, string(got), "the call is the command's stdin")
				return
			}
			var na *NotApproved
			require.ErrorAs(t, err, &na)
			assert.Equal(t, tt.reason, na.Reason)
			assert.True(t, errors.Is(err, mounts.ErrDenied))
		})
	}
}

func TestApproverStartFailsClosed(t *testing.T) {
	// The command existed at start and vanished later: the call is denied.
	dir := t.TempDir()
	cmd := filepath.Join(dir, "approve")
	require.NoError(t, os.WriteFile(cmd, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	a, err := NewApprover(ApprovalOptions{Command: []string{cmd}})
	require.NoError(t, err)
	require.NoError(t, a.Approve(context.Background(), nil))
	require.NoError(t, os.Remove(cmd))
	err = a.Approve(context.Background(), nil)
	var na *NotApproved
	require.ErrorAs(t, err, &na)
	assert.Contains(t, na.Reason, "could not be started")
}

func TestNewApproverRejects(t *testing.T) {
	tests := []struct {
		name string
		opts ApprovalOptions
		want string
	}{
		{"missing command", ApprovalOptions{Command: []string{"/nonexistent/approve"}}, `approval: command "/nonexistent/approve": not found`},
		{"missing in PATH", ApprovalOptions{Command: []string{"no-such-approver-xyz"}}, `command "no-such-approver-xyz": not found`},
		{"empty", ApprovalOptions{}, "no command given"},
		{"unknown verb", ApprovalOptions{Command: []string{"true"}, On: []string{"read"}}, `on: unknown verb "read"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewApprover(tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	a, err := NewApprover(ApprovalOptions{Command: []string{"true"}, On: []string{"shell"}})
	require.NoError(t, err)
	assert.True(t, a.Applies("shell"))
	assert.False(t, a.Applies("write"))
	var none *Approver
	assert.False(t, none.Applies("write"))
}
