package main

// The requests table: how many FUSE requests each file of a small-file
// workload costs, by opcode, on each writable kind of mount. A request is
// a round trip to the daemon (about 30 µs on a shared machine against a
// few µs for the system call on tmpfs), so the count per file is the
// floor of what such a workload can cost.
//
// The workspace is built in this process with the library (workspace,
// fusefs) rather than by a `vfsmount mount` child, because the counts live
// in the serving process (fusefs.Options.Counts). Its mounts are those of
// a default `vfsmount mount --mount type=host,... --mount
// type=git,writable=true,...`: a memory mount, a writable git mount (an
// overlay with a memory upper over a commit, on a copy-on-write
// connection of its own) and a host directory (passthrough on, as
// vfsmount's default). The shell commands (tar, sed, rm) are programs of
// the host, run as children; the create and stat workloads are this
// process's own system calls. git checkout runs on /repo only (the one
// kind with a repository), against a shared clone on tmpfs.
//
// requests_test.go runs the same workloads with fewer files and fails when
// a count per file exceeds its recorded ceiling; runRequests (requests.go)
// has this package's test binary print the table (TestMain).

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/workspace"
)

// reqKinds are the mounts the table measures, by their prefix.
var reqKinds = []string{"memory", "repo", "host"}

// Workload names, in the order of the table.
const (
	wlCreate      = "create+write+close"
	wlStatKnown   = "stat, existing name"
	wlStatMissing = "stat, missing name, twice"
	wlSed         = "sed -i"
	wlUntar       = "tar -x"
	wlRmRf        = "rm -rf"
	wlCheckout    = "git checkout"
)

var reqWorkloads = []string{wlCreate, wlStatKnown, wlStatMissing, wlSed, wlUntar, wlRmRf, wlCheckout}

// reqResults is how many results measureRequests returns: every workload
// on every kind, but git checkout on /repo only.
var reqResults = len(reqKinds)*len(reqWorkloads) - (len(reqKinds) - 1)

// reqSedDir is the commit's directory of files that sed edits on /repo.
const reqSedDir = "sed"

// reqCheckoutDir is the commit's directory of files that its parent has
// otherwise: git checkout of the parent on /repo rewrites each.
const reqCheckoutDir = "co"

// reqResult is what one workload cost on one mount: the requests of all
// its files.
type reqResult struct {
	Kind, Workload string
	Files          int
	Req            fusefs.Requests
	// Time is what the workload took on the mount, Base on tmpfs
	// (zero when not measured).
	Time, Base time.Duration
	// Served is the time the daemon spent serving its requests (the
	// rest of Time is the kernel's round trips and the program's own).
	Served time.Duration
}

// perFile is r's count of op per file.
func (r reqResult) perFile(op string) float64 { return float64(r.Req[op]) / float64(r.Files) }

// waitedPerFile is the number of requests per file a caller waited for
// (every one but FORGET, a notice the kernel sends without waiting).
func (r reqResult) waitedPerFile() float64 { return float64(r.Req.Waited()) / float64(r.Files) }

// reqWorkspace is a workspace of the three kinds mounted with counting.
type reqWorkspace struct {
	mnt    string
	gitDir string // the repository /repo mounts at its HEAD
	counts *fusefs.RequestCounts
	srv    *fusefs.Server
	ws     *workspace.Workspace
	closes []func() error
}

// openReqWorkspace mounts at mnt a workspace of a memory mount, a writable
// git mount of the commit at gitDir's HEAD (gitfs caching under cacheDir)
// and the host directory hostDir.
func openReqWorkspace(ctx context.Context, mnt, gitDir, cacheDir, hostDir string) (_ *reqWorkspace, err error) {
	r := &reqWorkspace{mnt: mnt, gitDir: gitDir, counts: &fusefs.RequestCounts{}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	g, err := gitfs.Open(ctx, gitfs.Options{Src: gitDir, CacheDir: cacheDir, Offline: true})
	if err != nil {
		return nil, err
	}
	r.closes = append(r.closes, g.Close)
	wg, err := workspace.NewWritableGit(ctx, g, memfs.New(memfs.Options{}), workspace.WritableGitOptions{Overlay: overlayfs.Options{}})
	if err != nil {
		return nil, err
	}
	r.closes = append(r.closes, wg.Close)
	h, err := hostfs.Open(hostDir, hostfs.Options{})
	if err != nil {
		return nil, err
	}
	if c, ok := h.(interface{ Close() error }); ok {
		r.closes = append(r.closes, c.Close)
	}
	r.ws, err = workspace.Open(ctx, workspace.Options{Mounts: []workspace.Mount{
		{Prefix: "/memory", FS: memfs.New(memfs.Options{})},
		{Prefix: "/repo", FS: wg},
		{Prefix: "/host", FS: h},
	}})
	if err != nil {
		return nil, err
	}
	r.srv, err = r.ws.MountKernel(mnt, fusefs.Options{StackConnections: true, Passthrough: true, Counts: r.counts})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// close unmounts and closes what openReqWorkspace opened.
func (r *reqWorkspace) close() error {
	var errs []error
	if r.srv != nil {
		if err := r.srv.Unmount(); err != nil {
			errs = append(errs, err, fusefs.ForceUnmount(r.mnt))
		}
		r.srv = nil
	}
	if r.ws != nil {
		errs = append(errs, r.ws.Close())
		r.ws = nil
	}
	for i := len(r.closes) - 1; i >= 0; i-- {
		errs = append(errs, r.closes[i]())
	}
	r.closes = nil
	return errors.Join(errs...)
}

// makeReqRepo makes a git repository at dir whose HEAD has n small files
// under sed/, for the sed workload on /repo, and n under co/ that HEAD
// changed from its parent, for the git checkout workload.
func makeReqRepo(dir string, n int) error {
	for _, sub := range []string{reqSedDir, reqCheckoutDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	if _, err := gitOut(dir, "init", "-q", "-b", "main"); err != nil {
		return err
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, reqSedDir, fmt.Sprintf("f%04d.txt", i)), reqContent(i), 0o644); err != nil {
			return err
		}
	}
	for rev := range 2 {
		for i := range n {
			body := fmt.Appendf(reqContent(i), "revision %d\n", rev)
			if err := os.WriteFile(filepath.Join(dir, reqCheckoutDir, fmt.Sprintf("f%04d.txt", i)), body, 0o644); err != nil {
				return err
			}
		}
		if _, err := gitOut(dir, "add", "-A"); err != nil {
			return err
		}
		if _, err := gitOut(dir, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", fmt.Sprintf("revision %d", rev)); err != nil {
			return err
		}
	}
	return nil
}

// reqContent is the content of the i-th small file: about 100 bytes, with
// an "alpha" for sed to replace.
func reqContent(i int) []byte {
	return fmt.Appendf(nil, "file %d: alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike\n", i)
}

// makeReqTar returns a tar archive of n small files in directories of 20
// (d000/f000.txt, ...), as an unpacked package or generated code is.
func makeReqTar(n int) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now().Truncate(time.Second)
	for i := range n {
		if i%20 == 0 {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("d%03d/", i/20), Mode: 0o755, ModTime: now}); err != nil {
				return nil, err
			}
		}
		body := reqContent(i)
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("d%03d/f%03d.txt", i/20, i%20), Mode: 0o644, Size: int64(len(body)), ModTime: now}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// measureRequests runs every workload with n files on each kind and
// returns what each cost. archive is a tar file of n files (makeReqTar);
// /repo's commit must have n files under sed/ (makeReqRepo). With base, a
// directory on tmpfs, each kind's sequence also runs in base/KIND (where
// /repo's sed files are made first), alternating with the mount, reps
// times; each result then has the best time of either side.
func (r *reqWorkspace) measureRequests(n int, archive, base string, reps int) ([]reqResult, error) {
	var out []reqResult
	for _, kind := range reqKinds {
		root := filepath.Join(r.mnt, kind)
		var baseRoot string
		if base != "" {
			baseRoot = filepath.Join(base, kind)
			if err := os.MkdirAll(filepath.Join(baseRoot, reqSedDir), 0o755); err != nil {
				return nil, err
			}
			for i := range n {
				if err := os.WriteFile(filepath.Join(baseRoot, reqSedDir, fmt.Sprintf("f%04d.txt", i)), reqContent(i), 0o644); err != nil {
					return nil, err
				}
			}
			if kind == "repo" {
				// A checkout of the same commit, sharing the objects as
				// the mount's .git does (alternates).
				if _, err := gitOut(baseRoot, "clone", "-q", "--shared", r.gitDir, reqBaseClone); err != nil {
					return nil, err
				}
			}
		}
		var res []reqResult
		for rep := range max(reps, 1) {
			got, err := r.sequence(root, kind, n, archive, true, rep)
			if err != nil {
				return nil, err
			}
			if rep == 0 {
				res = got
			}
			for i := range res {
				res[i].Time = minTime(res[i].Time, got[i].Time)
			}
			if baseRoot == "" {
				continue
			}
			got, err = r.sequence(baseRoot, kind, n, archive, false, rep)
			if err != nil {
				return nil, err
			}
			for i := range res {
				res[i].Base = minTime(res[i].Base, got[i].Time)
			}
		}
		out = append(out, res...)
	}
	return out, nil
}

func minTime(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// reqBaseClone is the baseline's checkout of /repo's commit, in its
// directory on tmpfs.
const reqBaseClone = "clone"

// sequence runs the workloads in order in a new directory of root (the
// mount of kind, or its baseline), counting requests when counting, and
// returns what each cost. On /repo sed edits files of the commit (a
// copy-up each), elsewhere the files just created. The sed files are
// restored afterwards, so that the next rep edits them again. On /repo
// git checkout goes to the parent commit, which rewrites the n files
// under co/, after a git status that brings git's index up to date; it
// goes back to HEAD afterwards, not counted.
func (r *reqWorkspace) sequence(root, kind string, n int, archive string, counting bool, rep int) ([]reqResult, error) {
	work := filepath.Join(root, fmt.Sprintf("bench-requests-%d", rep))
	if err := os.Mkdir(work, 0o755); err != nil {
		return nil, err
	}
	barrier := func() {
		var st syscall.Statfs_t
		_ = syscall.Statfs(work, &st)
	}
	var out []reqResult
	measure := func(workload string, files int, run func() error) error {
		var before fusefs.Requests
		var servedBefore time.Duration
		if counting {
			before, _ = r.settle(barrier)
			servedBefore = r.served()
		}
		start := time.Now()
		if err := run(); err != nil {
			return fmt.Errorf("%s in %s: %w", workload, root, err)
		}
		took := time.Since(start)
		res := reqResult{Kind: kind, Workload: workload, Files: files, Time: took}
		if counting {
			res.Served = r.served() - servedBefore
			after, k := r.settle(barrier)
			res.Req = after.Sub(before)
			if res.Req[fusefs.OpStatfs] -= k; res.Req[fusefs.OpStatfs] == 0 {
				delete(res.Req, fusefs.OpStatfs)
			}
		}
		out = append(out, res)
		return nil
	}
	names := make([]string, n)
	for i := range names {
		names[i] = filepath.Join(work, fmt.Sprintf("c%04d.txt", i))
	}
	err := measure(wlCreate, n, func() error {
		for i, name := range names {
			f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := f.Write(reqContent(i)); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := measure(wlStatKnown, n, func() error {
		for _, name := range names {
			if err := syscall.Stat(name, &st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := measure(wlStatMissing, n, func() error {
		// Twice each, as a build looks for the same missing
		// header or a shell for a command along PATH.
		for i := range 2 * n {
			if err := syscall.Stat(filepath.Join(work, fmt.Sprintf("missing%04d", i%n)), &st); err != syscall.ENOENT {
				return fmt.Errorf("stat of a missing name: %v", err)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	sedFiles := names
	if kind == "repo" {
		sedFiles = make([]string, n)
		for i := range sedFiles {
			sedFiles[i] = filepath.Join(root, reqSedDir, fmt.Sprintf("f%04d.txt", i))
		}
	}
	if err := measure(wlSed, n, func() error {
		return runCmd("sed", append([]string{"-i", "s/alpha/ALPHA/"}, sedFiles...)...)
	}); err != nil {
		return nil, err
	}
	if kind == "repo" {
		for i, name := range sedFiles {
			if err := os.WriteFile(name, reqContent(i), 0o644); err != nil {
				return nil, err
			}
		}
	}
	tree := filepath.Join(work, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return nil, err
	}
	if err := measure(wlUntar, n, func() error {
		return runCmd("tar", "-xf", archive, "-C", tree)
	}); err != nil {
		return nil, err
	}
	if err := measure(wlRmRf, n, func() error {
		return runCmd("rm", "-rf", tree)
	}); err != nil {
		return nil, err
	}
	if kind == "repo" {
		checkout := root
		if !counting {
			checkout = filepath.Join(root, reqBaseClone)
		}
		head, err := gitOut(checkout, "rev-parse", "HEAD")
		if err != nil {
			return nil, err
		}
		if _, err := gitOut(checkout, "status", "--porcelain"); err != nil {
			return nil, err
		}
		if err := measure(wlCheckout, n, func() error {
			_, err := gitOut(checkout, "checkout", "-q", "--detach", "HEAD~1")
			return err
		}); err != nil {
			return nil, err
		}
		if _, err := gitOut(checkout, "checkout", "-q", "--detach", head); err != nil {
			return nil, err
		}
	}
	return out, os.RemoveAll(work)
}

// served is the time spent serving requests so far, all opcodes.
func (r *reqWorkspace) served() time.Duration {
	var t time.Duration
	for _, d := range r.counts.Served() {
		t += d
	}
	return t
}

// settle returns the counts once every request sent so far is counted,
// and how many barrier requests it sent. A RELEASE is sent after close(2)
// returns, so the counts are taken after barrier, a request the daemon
// must answer (STATFS, which the kernel never caches), and again until
// two in a row differ only by the barrier's own.
func (r *reqWorkspace) settle(barrier func()) (fusefs.Requests, uint64) {
	prev := r.counts.Snapshot()
	k := uint64(0)
	for {
		barrier()
		k++
		cur := r.counts.Snapshot()
		d := cur.Sub(prev)
		delete(d, fusefs.OpForget)
		if (d[fusefs.OpStatfs] == 1 && len(d) == 1) || k == 100 {
			return cur, k
		}
		prev = cur
	}
}

func runCmd(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, bytes.TrimSpace(out))
	}
	return nil
}

// reqProfileEnv names a file for a CPU profile of the serving process
// (this one) while the requests table is measured.
const reqProfileEnv = "VFSMOUNT_BENCH_REQUEST_CPUPROFILE"

// TestMain prints the requests table instead of running the tests when
// reqFilesEnv asks for it (runRequests).
func TestMain(m *testing.M) {
	if v := os.Getenv(reqFilesEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil && n <= 0 {
			err = errors.New("not a positive number")
		}
		reps, rerr := strconv.Atoi(os.Getenv(reqRepsEnv))
		if rerr != nil || reps <= 0 {
			reps = 1
		}
		if path := os.Getenv(reqProfileEnv); err == nil && path != "" {
			var f *os.File
			if f, err = os.Create(path); err == nil {
				defer f.Close()
				err = pprof.StartCPUProfile(f)
			}
		}
		if err == nil {
			err = printRequestTable(n, reps)
			pprof.StopCPUProfile()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "requests (%s=%s): %v\n", reqFilesEnv, v, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// printRequestTable measures the workloads with n files, against tmpfs
// (/dev/shm) reps times, and prints the table.
func printRequestTable(n, reps int) error {
	// On tmpfs too, so that /host is a host directory on the baseline's
	// file system.
	tmp, err := os.MkdirTemp("/dev/shm", "vfsmount-bench-req-work-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r, archive, err := setUpRequests(tmp, n)
	if err != nil {
		return err
	}
	base, err := os.MkdirTemp("/dev/shm", "vfsmount-bench-req-")
	if err != nil {
		r.close()
		return fmt.Errorf("baseline on /dev/shm: %w", err)
	}
	defer os.RemoveAll(base)
	res, err := r.measureRequests(n, archive, base, reps)
	if cerr := r.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Printf("FUSE requests per file (%d files; a stat row is per name; FORGET is sent without waiting and not in the total),\n", n)
	fmt.Printf("the time of each workload against the same on tmpfs (/dev/shm), best of %d, and the daemon's own time per request\n", reps)
	printRequests(os.Stdout, res)
	return nil
}

// setUpRequests makes under tmp the git repository, host directory, tar
// archive and mount point the workloads need for n files, and mounts the
// workspace.
func setUpRequests(tmp string, n int) (*reqWorkspace, string, error) {
	gitDir, cacheDir, hostDir, mnt := filepath.Join(tmp, "git"), filepath.Join(tmp, "cache"), filepath.Join(tmp, "host"), filepath.Join(tmp, "mnt")
	for _, d := range []string{cacheDir, hostDir, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, "", err
		}
	}
	if err := makeReqRepo(gitDir, n); err != nil {
		return nil, "", err
	}
	data, err := makeReqTar(n)
	if err != nil {
		return nil, "", err
	}
	archive := filepath.Join(tmp, "tree.tar")
	if err := os.WriteFile(archive, data, 0o644); err != nil {
		return nil, "", err
	}
	r, err := openReqWorkspace(context.Background(), mnt, gitDir, cacheDir, hostDir)
	if err != nil {
		return nil, "", err
	}
	return r, archive, nil
}

// printRequests writes the table: one row per workload and mount, the
// total per file, the times and their ratio, and each opcode's share.
func printRequests(w *os.File, res []reqResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tmount\trequests/file\tvfsmount\ttmpfs\tratio\tserving/request\tby opcode, per file")
	for _, wl := range reqWorkloads {
		for _, r := range res {
			if r.Workload != wl {
				continue
			}
			var ops []string
			for op := range r.Req {
				ops = append(ops, op)
			}
			sort.Strings(ops)
			var parts []string
			for _, op := range ops {
				parts = append(parts, fmt.Sprintf("%s %.2f", op, r.perFile(op)))
			}
			ratio := "-"
			if r.Base > 0 {
				ratio = fmt.Sprintf("%.1fx", float64(r.Time)/float64(r.Base))
			}
			serving := "-"
			if n := r.Req.Waited() + r.Req[fusefs.OpForget]; n > 0 {
				serving = fmt.Sprintf("%.1f µs", float64(r.Served)/float64(n)/1e3)
			}
			fmt.Fprintf(tw, "%s\t/%s\t%.2f\t%s\t%s\t%s\t%s\t%s\n", r.Workload, r.Kind, r.waitedPerFile(),
				fmt.Sprintf("%.1f ms", ms(r.Time)), fmt.Sprintf("%.1f ms", ms(r.Base)), ratio, serving, strings.Join(parts, ", "))
		}
	}
	tw.Flush()
}
