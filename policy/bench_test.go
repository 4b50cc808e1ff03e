package policy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/union"
)

// BenchmarkKernelSmallFiles measures create+write+close of a small file
// through the kernel: the bare union, path rules alone, audit alone, and
// both (the target: both within 1.2x of bare).
func BenchmarkKernelSmallFiles(b *testing.B) {
	fusetest.Need(b)
	rules := policy.Rules{
		DenyRead:  []string{"*.env", "/memory/secrets/", "/memory/**/id_rsa"},
		DenyWrite: []string{"/memory/.git/", "*.lock"},
		ReadOnly:  []string{"/memory/ro"},
	}
	for _, tc := range []struct {
		name         string
		rules, audit bool
	}{{"bare", false, false}, {"rules", true, false}, {"audit", false, true}, {"rules+audit", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			u, err := union.New(map[string]mounts.FS{"/memory": memfs.New(memfs.Options{})})
			if err != nil {
				b.Fatal(err)
			}
			var fsys mounts.FS = u
			if tc.rules {
				rs, err := policy.Compile(rules)
				if err != nil {
					b.Fatal(err)
				}
				fsys = policy.Guard(fsys, rs)
			}
			if tc.audit {
				l, err := policy.OpenAudit(policy.AuditOptions{Path: filepath.Join(b.TempDir(), "audit.jsonl")})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				fsys = policy.Audit(fsys, l)
			}
			mnt := b.TempDir()
			srv, err := fusefs.Mount(mnt, fsys, fusefs.Options{})
			if err != nil {
				fusetest.MountFailed(b, err)
			}
			defer func() {
				if err := srv.Unmount(); err != nil {
					_ = fusefs.ForceUnmount(mnt)
				}
			}()
			data := []byte("a small file of about a hundred bytes, as source trees are full of; written whole\n")
			b.ResetTimer()
			for i := range b.N {
				p := filepath.Join(mnt, "memory", fmt.Sprintf("f%07d.txt", i))
				if err := os.WriteFile(p, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSmallFilesInProcess is the same workload without the kernel:
// the decorators' own cost per create+write+close, free of FUSE noise.
func BenchmarkSmallFilesInProcess(b *testing.B) {
	rs, err := policy.Compile(policy.Rules{
		DenyRead:  []string{"*.env", "/memory/secrets/", "/memory/**/id_rsa"},
		DenyWrite: []string{"/memory/.git/", "*.lock"},
		ReadOnly:  []string{"/memory/ro"},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := mounts.WithCaller(context.Background(), mounts.Caller{Face: "kernel", Pid: 1234})
	data := []byte("a small file of about a hundred bytes, as source trees are full of; written whole\n")
	for _, tc := range []struct {
		name         string
		rules, audit bool
	}{{"bare", false, false}, {"rules", true, false}, {"audit", false, true}, {"rules+audit", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var fsys mounts.FS = memfs.New(memfs.Options{})
			if tc.rules {
				fsys = policy.Guard(fsys, rs)
			}
			if tc.audit {
				l, err := policy.OpenAudit(policy.AuditOptions{Path: filepath.Join(b.TempDir(), "audit.jsonl")})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				fsys = policy.Audit(fsys, l)
			}
			b.ResetTimer()
			for i := range b.N {
				if err := mounts.WriteFile(ctx, fsys, fmt.Sprintf("memory-f%07d.txt", i), data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
