package main

import (
	"math"
	"sort"
	"testing"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
)

// reqCeilings are the recorded FUSE requests per file of each workload on
// each mount, by opcode (FORGET, sent without waiting, is not held to
// one). An opcode not listed must not be sent at all. Lower a number when
// a change lowers the count; raising one needs a reason.
var reqCeilings = map[string]map[string]map[string]float64{
	wlCreate: {
		"memory": {"LOOKUP": 1, "CREATE": 1, "GETXATTR": 1, "WRITE": 1, "RELEASE": 1, "GETATTR": 1},
		"repo":   {"LOOKUP": 1, "CREATE": 1, "GETXATTR": 1, "WRITE": 1, "RELEASE": 1, "GETATTR": 1},
		"host":   {"LOOKUP": 1, "CREATE": 1, "GETXATTR": 1, "WRITE": 1, "RELEASE": 1, "GETATTR": 1},
	},
	wlStatKnown: {
		"memory": {"GETATTR": 1},
		"repo":   {"GETATTR": 1},
		"host":   {"GETATTR": 1},
	},
	wlStatMissing: {
		// Misses are cached where only this process changes names
		// (negative entries); a host directory's are not.
		"memory": {"LOOKUP": 1},
		"repo":   {"LOOKUP": 1},
		"host":   {"LOOKUP": 2},
	},
	wlSed: {
		// sed -i as root restores the owner of the file it writes
		// anew (fchown), and tar -x the owner of each file: the kernel
		// asked for the file's attributes before each chown, to work
		// out the setuid bits it drops, until the connection took the
		// dropping over (HANDLE_KILLPRIV_V2, killPriv).
		"memory": {"CREATE": 1, "GETATTR": 2, "GETXATTR": 3, "IOCTL": 1, "LOOKUP": 2, "OPEN": 1, "READ": 1, "RELEASE": 2, "RENAME": 1, "SETATTR": 2, "SETXATTR": 1, "WRITE": 1},
		"repo":   {"CREATE": 1, "GETATTR": 2, "GETXATTR": 3, "IOCTL": 1, "LOOKUP": 3, "OPEN": 1, "READ": 1, "RELEASE": 2, "RENAME": 1, "SETATTR": 2, "SETXATTR": 1, "WRITE": 1},
		"host":   {"CREATE": 1, "GETATTR": 2, "GETXATTR": 3, "IOCTL": 1, "LOOKUP": 2, "OPEN": 1, "READ": 1, "RELEASE": 2, "RENAME": 1, "SETATTR": 2, "SETXATTR": 1, "WRITE": 1},
	},
	wlUntar: {
		"memory": {"CREATE": 1, "GETATTR": 1, "GETXATTR": 2, "LOOKUP": 1.05, "MKDIR": 0.05, "OPENDIR": 0.05, "RELEASE": 1, "RELEASEDIR": 0.05, "SETATTR": 3.15, "WRITE": 1},
		"repo":   {"CREATE": 1, "GETATTR": 1, "GETXATTR": 2, "LOOKUP": 1.05, "MKDIR": 0.05, "OPENDIR": 0.05, "RELEASE": 1, "RELEASEDIR": 0.05, "SETATTR": 3.15, "WRITE": 1},
		"host":   {"CREATE": 1, "GETATTR": 1, "GETXATTR": 2, "LOOKUP": 1.05, "MKDIR": 0.05, "OPENDIR": 0.05, "RELEASE": 1, "RELEASEDIR": 0.05, "SETATTR": 3.15, "WRITE": 1},
	},
	wlRmRf: {
		"memory": {"GETATTR": 1.05, "OPENDIR": 0.15, "READDIRPLUS": 0.25, "READDIR": 0.2, "RELEASEDIR": 0.15, "RMDIR": 0.05, "STATFS": 0.05, "UNLINK": 1},
		"repo":   {"GETATTR": 1.05, "OPENDIR": 0.15, "READDIRPLUS": 0.25, "READDIR": 0.2, "RELEASEDIR": 0.15, "RMDIR": 0.05, "STATFS": 0.05, "UNLINK": 1},
		// A host mount's entries live 1 s (others change the directory
		// too): a run slowed past that (under -race) looks up again the
		// names whose entries expired between the listing and the unlink.
		"host": {"GETATTR": 1.05, "LOOKUP": 0.1, "OPENDIR": 0.15, "READDIRPLUS": 0.25, "READDIR": 0.2, "RELEASEDIR": 0.15, "RMDIR": 0.05, "STATFS": 0.05, "UNLINK": 1},
	},
	wlCheckout: {
		// Per file rewritten: UNLINK, LOOKUP and CREATE of the name,
		// GETXATTR (security.capability, before the first WRITE), WRITE,
		// and three GETATTRs: the directory's before each of the two
		// entry changes (default_permissions checks the directory, and
		// the previous change made its attributes stale) and the file's
		// after the write (git records its stat data in the index). The
		// rest, at 40 files: git's index (lock, write, rename) and its
		// lookups of the other files of the commit.
		"repo": {"CREATE": 1.075, "GETATTR": 3.3, "GETXATTR": 1.125, "LOOKUP": 2.4, "MKDIR": 0.025, "READ": 0.05, "RENAME": 0.05, "UNLINK": 1, "WRITE": 1.125},
	},
}

// reqSlack is what a count may exceed its ceiling by in all, whatever the
// number of files: the requests the kernel sends once per connection to
// learn that the daemon does not need them (an OPEN or FLUSH answered
// ENOSYS), which land in whichever workload comes first.
const reqSlack = 1

// TestRequestCeilings runs the requests table's workloads on the three
// kinds of writable mount and fails when any opcode costs more per file
// than reqCeilings records.
func TestRequestCeilings(t *testing.T) {
	fusetest.Need(t)
	const n = 40
	r, archive, err := setUpRequests(t.TempDir(), n)
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		if err := r.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	res, err := r.measureRequests(n, archive, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != reqResults {
		t.Fatalf("%d results, want %d", len(res), reqResults)
	}
	for _, r := range res {
		t.Logf("%s on /%s: %.2f per file: %v", r.Workload, r.Kind, r.waitedPerFile(), r.Req)
		ceil, ok := reqCeilings[r.Workload][r.Kind]
		if !ok {
			t.Errorf("%s on /%s: no ceiling recorded", r.Workload, r.Kind)
			continue
		}
		ops := make([]string, 0, len(r.Req))
		for op := range r.Req {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		for _, op := range ops {
			if op == fusefs.OpForget {
				continue
			}
			limit := uint64(math.Ceil(ceil[op]*float64(r.Files)-1e-9)) + reqSlack
			got := r.Req[op]
			if op == fusefs.OpRelease {
				// The kernel sends RELEASE after close(2) returned, and
				// may still send one of the workload before this when
				// this one starts: a workload's own releases are at most
				// the files it opened or created.
				got = min(got, r.Req[fusefs.OpOpen]+r.Req[fusefs.OpCreate])
			}
			if got > limit {
				t.Errorf("%s on /%s: %d %s requests for %d files (%.2f a file), ceiling %.2f a file",
					r.Workload, r.Kind, got, op, r.Files, r.perFile(op), ceil[op])
			}
		}
	}
}
