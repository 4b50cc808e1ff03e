package main

// The remote table (issue 28): a `remote` mount of a directory another
// machine serves, here a real OpenSSH server on 127.0.0.1 (a free port,
// host and user keys generated for the run, stopped at the end), at 0 ms
// and at 20 ms round trip, the latency added by a TCP proxy on loopback
// (this kernel has no netem): half the round trip each way.
//
// The remote side is a git repository of ~13 000 small files on /dev/shm.
// Each row is run three ways over the same link:
//
//	vfsmount: `vfsmount mount` (rows 1, 5: a fresh one each run) or one
//	          long-running `vfsmount serve --mountpoint` (its JSON-RPC for
//	          the tool rows, its kernel face for the others)
//	baseline: what one does without it: `ssh HOST CMD` (a new connection
//	          each time, as a user types it), or a native checkout here
//	sshfs:    Debian's sshfs on the same link, the anchor; a run of it is
//	          cut at -remote-cap and reported as more than that
//
// Rows: mount ready + first ls (absolute target 300 ms at 20 ms RTT);
// grep -l through the tool, 3 patterns, against ssh rg -l (1.2); git
// status in the shell tool (run remotely) against ssh git status (1.2);
// git status through the kernel face, warm, against a native checkout
// (2); a cold tar of the tree, piped into tar x here, against ssh tar c |
// tar x (1.5); 1 000 small files untarred into the mount then synced,
// against the same tar piped into ssh tar x (3).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

// remoteRTTs are the round trips the table is measured at.
var remoteRTTs = []time.Duration{0, 20 * time.Millisecond}

// remoteCap bounds one sshfs run (some take minutes at 20 ms), and
// remoteVFSCap one run of vfsmount's rows that read or write file by file
// (the cold tar takes a round trip a file).
const (
	remoteCap    = 10 * time.Second
	remoteVFSCap = 60 * time.Second
)

func runRemote(o *options, bin string, verbose bool) (err error) {
	for _, p := range []string{"ssh", "ssh-keygen", "sshfs", "rg", "git", "tar", "fusermount"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("the remote suite needs %s on PATH (openssh-client, openssh-server, sshfs, ripgrep, git)", p)
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("the remote suite runs sshd and logs in as root: run it as root")
	}
	root, err := os.MkdirTemp("/dev/shm", "vfsmount-bench-remote-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	// Ctrl-C or a timeout's SIGTERM: leave no sshd, mount or file behind.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		sig := <-sigc
		remoteAbort(root)
		fmt.Fprintf(os.Stderr, "bench: %v: stopped\n", sig)
		os.Exit(1)
	}()
	remote := filepath.Join(root, "remote")
	native := filepath.Join(root, "native")
	start := time.Now()
	if err := genRemoteRepo(remote); err != nil {
		return fmt.Errorf("generate the repository: %w", err)
	}
	if out, err := exec.Command("git", "clone", "-q", remote, native).CombinedOutput(); err != nil {
		return fmt.Errorf("git clone: %w: %s", err, out)
	}
	files, treeBytes, err := treeSize(remote)
	if err != nil {
		return err
	}
	staging := filepath.Join(root, "small.tar")
	if err := genSmallTar(filepath.Join(root, "small"), staging); err != nil {
		return err
	}
	fmt.Printf("remote: generated repository on the remote side, %d files with .git, %.1f MB (%v); load: %s\n",
		files, float64(treeBytes)/1e6, time.Since(start).Round(100*time.Millisecond), loadAvg())

	sshd, err := startBenchSSHD(filepath.Join(root, "sshd"))
	if err != nil {
		return err
	}
	remoteKids.add(sshd.cmd, true)
	defer sshd.stop()
	var proxies []*delayProxy
	defer func() {
		for _, p := range proxies {
			p.close()
		}
	}()
	ports := map[time.Duration]int{}
	rtts := remoteRTTs
	if v := os.Getenv("VFSMOUNT_BENCH_REMOTE_RTT"); v != "" {
		// One round trip only (a quicker look while working on a row).
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("VFSMOUNT_BENCH_REMOTE_RTT: %w", err)
		}
		rtts = []time.Duration{d}
	}
	ports[0] = sshd.port
	for _, rtt := range rtts {
		if rtt == 0 {
			ports[rtt] = sshd.port
			continue
		}
		p, err := newDelayProxy(fmt.Sprintf("127.0.0.1:%d", sshd.port), rtt/2)
		if err != nil {
			return err
		}
		proxies = append(proxies, p)
		ports[rtt] = p.port()
	}
	if err := sshd.writeKnownHosts(ports); err != nil {
		return err
	}

	r := &remoteRun{o: o, bin: bin, verbose: verbose, root: root, remote: remote, native: native,
		staging: staging, sshd: sshd}
	if v := os.Getenv("VFSMOUNT_BENCH_REMOTE_ROWS"); v != "" {
		// Some rows only (a quicker look while working on them): their
		// numbers, "4,5"; row 1 comes with row 5, measured on its mounts.
		r.rows = map[int]bool{}
		for _, f := range strings.Split(v, ",") {
			var n int
			if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 || n > 6 {
				return fmt.Errorf("VFSMOUNT_BENCH_REMOTE_ROWS: %q is not a row number (1-6)", f)
			}
			r.rows[n] = true
		}
		r.rows[1] = r.rows[1] || r.rows[5]
	}
	// The first mount installs the peer in the remote user's cache
	// (uploads this binary): timed apart, not a row.
	t, err := r.mountReady(ports[0], filepath.Join(root, "mnt-install"), nil)
	if err != nil {
		return fmt.Errorf("first mount (installs the peer): %w", err)
	}
	fmt.Printf("first mount, installing the peer on the remote side: %.0f ms\n", t)
	for _, rtt := range rtts {
		res, err := r.measureAt(ports[rtt])
		if err != nil {
			return fmt.Errorf("at %v RTT: %w", rtt, err)
		}
		fmt.Printf("\nremote mount over ssh, %v round trip (%s); best of %d; load: %s\n\n", rtt,
			map[bool]string{true: "direct to sshd", false: "through a delay proxy"}[rtt == 0], o.reps, loadAvg())
		if err := printRemote(res, rtt); err != nil {
			return err
		}
	}
	return nil
}

// remoteRun holds what every measurement of the table shares.
type remoteRun struct {
	o                             *options
	bin                           string
	verbose                       bool
	root, remote, native, staging string
	sshd                          *benchSSHD
	seq                           int
	rows                          map[int]bool // the rows to measure; nil: all
}

// want reports whether row n (from 1) is measured.
func (r *remoteRun) want(n int) bool { return r.rows == nil || r.rows[n] }

// remoteRow is one row: times in ms; sshfsOver is set when an sshfs run
// hit remoteCap (its value is then the cap).
type remoteRow struct {
	name      string
	vfs, base float64 // base 0: no baseline (an absolute target)
	target    float64 // a ratio, or ms when base is 0
	sshfs     float64
	sshfsOver bool
	vfsOver   bool // a vfsmount run hit remoteVFSCap
}

func (r *remoteRun) spec(port int) string {
	return fmt.Sprintf("type=remote,src=ssh://root@127.0.0.1:%d%s,dst=/workspace,identity=%s,known_hosts=%s",
		port, r.remote, r.sshd.userKey, r.sshd.knownHosts)
}

func (r *remoteRun) tmp(prefix string) (string, error) {
	r.seq++
	d := filepath.Join(r.root, fmt.Sprintf("%s-%d", prefix, r.seq))
	return d, os.Mkdir(d, 0o755)
}

// mountReady times `vfsmount mount` of the remote until `ls
// MNT/workspace` lists the tree; then, with then, runs more on the mount
// before it is stopped.
func (r *remoteRun) mountReady(port int, mnt string, then func(mnt string) error) (float64, error) {
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return 0, err
	}
	defer os.Remove(mnt)
	t0 := time.Now()
	d, err := startDaemon(r.bin, mnt, r.verbose, "--mount", r.spec(port))
	if err != nil {
		return 0, err
	}
	remoteKids.add(d.cmd, false)
	defer d.stop()
	if err := waitList(filepath.Join(mnt, "workspace"), func() error {
		select {
		case err := <-d.done:
			d.done <- err
			return fmt.Errorf("vfsmount exited (%v); its log:\n%s", err, d.log.String())
		default:
			return nil
		}
	}); err != nil {
		return 0, err
	}
	t := ms(time.Since(t0))
	if then != nil {
		if err := then(mnt); err != nil {
			return 0, fmt.Errorf("%w; vfsmount log:\n%s", err, d.log.String())
		}
	}
	return t, d.stop()
}

// waitList polls until dir lists entries (30 s at most); alive says
// whether the mounting process is still there.
func waitList(dir string, alive func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ents, err := os.ReadDir(dir)
		if err == nil && len(ents) > 0 {
			return nil
		}
		if err := alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ls %s: not ready after 30 s: %v", dir, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *remoteRun) measureAt(port int) ([]remoteRow, error) {
	rows := []remoteRow{
		{name: "mount ready + first ls", target: 300},
		{name: "grep -l through the tool, 3 patterns (vs ssh rg -l)", target: 1.2},
		{name: "git status in the shell tool, remote (vs ssh git status)", target: 1.2},
		{name: "git status via kernel face, warm (vs native checkout here)", target: 2},
		{name: "cold tar of the tree | tar x here (vs ssh tar c | tar x)", target: 1.5},
		{name: "1,000 small files: tar x + sync (vs tar | ssh tar x + sync -f)", target: 3},
	}
	best := func(dst *float64, v float64) {
		if *dst == 0 || v < *dst {
			*dst = v
		}
	}
	// sshfs runs, cut at remoteCap: once one is, the cell is done.
	sshfsRun := func(row *remoteRow, f func(ctx context.Context) (float64, error)) error {
		if row.sshfsOver {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), remoteCap)
		defer cancel()
		v, err := f(ctx)
		if ctx.Err() != nil {
			row.sshfs, row.sshfsOver = ms(remoteCap), true
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s on sshfs: %w", row.name, err)
		}
		best(&row.sshfs, v)
		return nil
	}
	// vfsmount runs of the rows that may take minutes, cut at
	// remoteVFSCap likewise.
	vfsRun := func(row *remoteRow, f func(ctx context.Context) (float64, error)) error {
		if row.vfsOver {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), remoteVFSCap)
		defer cancel()
		v, err := f(ctx)
		if ctx.Err() != nil {
			row.vfs, row.vfsOver = ms(remoteVFSCap), true
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", row.name, err)
		}
		best(&row.vfs, v)
		return nil
	}
	ssh := func(stdin io.Reader, stdout io.Writer, cmd string) (float64, string, error) {
		return r.sshd.run(port, stdin, stdout, cmd)
	}

	// Rows 1 and 5: a fresh mount each run.
	for i := 0; i < r.o.reps && r.want(1); i++ {
		mnt, err := r.tmp("mnt")
		if err != nil {
			return nil, err
		}
		t, err := r.mountReady(port, mnt, func(mnt string) error {
			if !r.want(5) {
				return nil
			}
			return vfsRun(&rows[4], func(ctx context.Context) (float64, error) {
				return r.timeTarX(ctx, filepath.Join(mnt, "workspace"))
			})
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rows[0].name, err)
		}
		best(&rows[0].vfs, t)
		if !r.want(5) {
			continue
		}

		dst, err := r.tmp("untar")
		if err != nil {
			return nil, err
		}
		var bt float64
		pr, pw := io.Pipe()
		untar := exec.Command("tar", "xf", "-", "-C", dst)
		untar.Stdin = pr
		var uerr bytes.Buffer
		untar.Stderr = &uerr
		if err := untar.Start(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		_, _, err = ssh(nil, pw, "tar cf - -C "+r.remote+" .")
		pw.Close()
		werr := untar.Wait()
		bt = ms(time.Since(t0))
		if err != nil || werr != nil {
			return nil, fmt.Errorf("ssh tar c | tar x: %v %v %s", err, werr, uerr.String())
		}
		if err := r.checkCopy(dst); err != nil {
			return nil, err
		}
		os.RemoveAll(dst)
		best(&rows[4].base, bt)

		smnt, err := r.tmp("sshfs")
		if err != nil {
			return nil, err
		}
		t0 = time.Now()
		if err := r.sshfsMount(port, smnt); err != nil {
			return nil, err
		}
		err = waitList(smnt, func() error { return nil })
		best(&rows[0].sshfs, ms(time.Since(t0)))
		if err == nil {
			err = sshfsRun(&rows[4], func(ctx context.Context) (float64, error) { return r.timeTarX(ctx, smnt) })
		}
		if uerr := unmount(smnt); err == nil {
			err = uerr
		}
		if err != nil {
			return nil, err
		}
	}

	// Rows 2, 3, 4, 6: one vfsmount serve, one sshfs mount.
	mnt, err := r.tmp("mnt")
	if err != nil {
		return nil, err
	}
	defer os.Remove(mnt)
	srv, err := startMountServer(r.bin, r.root, mnt, r.verbose, r.spec(port))
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	smnt, err := r.tmp("sshfs")
	if err != nil {
		return nil, err
	}
	if err := r.sshfsMount(port, smnt); err != nil {
		return nil, err
	}
	defer unmount(smnt)
	ws := filepath.Join(mnt, "workspace")

	// Row 2: grep.
	want := map[string]string{}
	for _, p := range grepPatterns {
		if !r.want(2) {
			break
		}
		args := "rg -l"
		if p.fold {
			args += " -i"
		}
		_, out, err := ssh(nil, nil, args+" -- '"+p.pat+"' "+r.remote)
		if err != nil {
			return nil, fmt.Errorf("ssh rg: %w", err)
		}
		want[p.pat] = sortedLines(strings.ReplaceAll(out, r.remote+"/", "/workspace/"))
	}
	for i := 0; i <= r.o.reps && r.want(2); i++ { // the first run of each side warms it
		var v, b float64
		for _, p := range grepPatterns {
			t, text, err := srv.tool("grep", map[string]any{"pattern": p.pat, "path": "/workspace", "caseInsensitive": p.fold,
				"headLimit": 0, "outputMode": "files_with_matches"})
			if err != nil {
				return nil, err
			}
			if text == "No matches found" {
				text = ""
			}
			if got := sortedLines(text); got != want[p.pat] {
				return nil, fmt.Errorf("grep %q through the tool: %d files, ssh rg -l: %d files\n%s",
					p.pat, strings.Count(got, "\n"), strings.Count(want[p.pat], "\n"), lineDiff(got, want[p.pat]))
			}
			v += t
			args := "rg -l"
			if p.fold {
				args += " -i"
			}
			t, _, err = ssh(nil, nil, args+" -- '"+p.pat+"' "+r.remote)
			if err != nil {
				return nil, err
			}
			b += t
		}
		if i > 0 {
			best(&rows[1].vfs, v)
			best(&rows[1].base, b)
		}
	}
	for i := 0; i < r.o.reps && r.want(2); i++ {
		if err := sshfsRun(&rows[1], func(ctx context.Context) (float64, error) {
			var sum float64
			for _, p := range grepPatterns {
				args := []string{"-l"}
				if p.fold {
					args = append(args, "-i")
				}
				// rg is given the directory, not started in it: a
				// child's chdir into a stuck sshfs happens before exec,
				// where no timeout can reach it.
				cmd := groupCommand(ctx, "rg", append(args, "--", p.pat, smnt)...)
				t0 := time.Now()
				out, err := cmd.Output()
				if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
					err = nil
				}
				if err != nil {
					return 0, err
				}
				sum += ms(time.Since(t0))
				if got := sortedLines(strings.ReplaceAll(string(out), smnt+"/", "/workspace/")); got != want[p.pat] {
					return 0, fmt.Errorf("rg %q: %s", p.pat, lineDiff(got, want[p.pat]))
				}
			}
			return sum, nil
		}); err != nil {
			return nil, err
		}
	}

	// Row 3: git status run remotely.
	const clean = "nothing to commit, working tree clean"
	for i := 0; i <= r.o.reps && r.want(3); i++ {
		t, text, err := srv.tool("shell", map[string]any{"command": "git status", "cwd": "/workspace"})
		if err != nil {
			return nil, err
		}
		if !strings.Contains(text, clean) {
			return nil, fmt.Errorf("git status in the shell tool: %s", text)
		}
		b, out, err := ssh(nil, nil, "git -C "+r.remote+" status")
		if err != nil {
			return nil, err
		}
		if !strings.Contains(out, clean) {
			return nil, fmt.Errorf("ssh git status: %s", out)
		}
		if i > 0 {
			best(&rows[2].vfs, t)
			best(&rows[2].base, b)
		}
	}
	for i := 0; i < r.o.reps && r.want(3); i++ {
		if err := sshfsRun(&rows[2], func(ctx context.Context) (float64, error) { return timeGitStatus(ctx, smnt) }); err != nil {
			return nil, err
		}
	}

	// Row 4: git status through the kernel face, warm.
	for i := 0; i <= r.o.reps && r.want(4); i++ {
		t, err := timeGitStatus(context.Background(), ws)
		if err != nil {
			return nil, fmt.Errorf("kernel face: %w; vfsmount log:\n%s", err, srv.log.String())
		}
		b, err := timeGitStatus(context.Background(), r.native)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			best(&rows[3].vfs, t)
			best(&rows[3].base, b)
		}
	}
	for i := 0; i <= r.o.reps && r.want(4); i++ {
		if err := sshfsRun(&rows[3], func(ctx context.Context) (float64, error) { return timeGitStatus(ctx, smnt) }); err != nil {
			return nil, err
		}
		if i == 0 && !rows[3].sshfsOver {
			rows[3].sshfs = 0 // the first run warms it
		}
	}

	// Row 6: 1 000 small files.
	for i := 0; i < r.o.reps && r.want(6); i++ {
		name := fmt.Sprintf("w-%d", i)
		over := rows[5].vfsOver
		if err := vfsRun(&rows[5], func(ctx context.Context) (float64, error) {
			return r.untarSync(ctx, filepath.Join(ws, name))
		}); err != nil {
			return nil, fmt.Errorf("kernel face: %w; vfsmount log:\n%s", err, srv.log.String())
		}
		if !rows[5].vfsOver {
			if err := r.checkSmall(filepath.Join(r.remote, name)); err != nil {
				return nil, err
			}
		} else if !over {
			time.Sleep(time.Second) // what was cut may still be settling
		}
		f, err := os.Open(r.staging)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(r.remote, name+"-ssh")
		b, _, err := ssh(f, nil, "mkdir "+dir+" && tar xf - -C "+dir+" && sync -f "+dir)
		f.Close()
		if err != nil {
			return nil, err
		}
		if err := r.checkSmall(dir); err != nil {
			return nil, err
		}
		best(&rows[5].base, b)
		sdir := name + "-sshfs"
		if err := sshfsRun(&rows[5], func(ctx context.Context) (float64, error) {
			return r.untarSync(ctx, filepath.Join(smnt, sdir))
		}); err != nil {
			return nil, err
		}
		for _, n := range []string{name, name + "-ssh", sdir} {
			if err := os.RemoveAll(filepath.Join(r.remote, n)); err != nil {
				return nil, err
			}
		}
	}
	if err := unmount(smnt); err != nil {
		return nil, err
	}
	var measured []remoteRow
	for i, row := range rows {
		if r.want(i + 1) {
			measured = append(measured, row)
		}
	}
	return measured, srv.stop()
}

// timeTarX times `tar c DIR | tar x` into a fresh directory here, with
// the page cache dropped first, and checks the copy.
func (r *remoteRun) timeTarX(ctx context.Context, dir string) (float64, error) {
	dst, err := r.tmp("untar")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dst)
	dropCaches(r.o)
	cmd := groupCommand(ctx, "sh", "-c", `tar cf - -C "$1" . | tar xf - -C "$2"`, "sh", dir, dst)
	t0 := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("tar c %s | tar x: %w: %s", dir, err, out)
	}
	t := ms(time.Since(t0))
	return t, r.checkCopy(dst)
}

// checkCopy compares a copy of the remote tree with it: the same files,
// the same sizes.
func (r *remoteRun) checkCopy(dst string) error {
	n1, b1, err := treeSize(r.remote)
	if err != nil {
		return err
	}
	n2, b2, err := treeSize(dst)
	if err != nil {
		return err
	}
	if n1 != n2 || b1 != b2 {
		return fmt.Errorf("the copy has %d files, %d bytes; the remote tree %d files, %d bytes", n2, b2, n1, b1)
	}
	return nil
}

// untarSync times the small files' tar extracted into dir (made here)
// and `sync` of it: fsync of the directory, which on a remote mount waits
// for every change made before it and syncs the remote file system (as
// the baseline's `sync -f` there does; syncfs(2) reaches no FUSE server).
func (r *remoteRun) untarSync(ctx context.Context, dir string) (float64, error) {
	t0 := time.Now()
	cmd := groupCommand(ctx, "sh", "-c", `mkdir "$1" && tar xf "$2" -C "$1" && sync "$1"`, "sh", dir, r.staging)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("tar x into %s: %w: %s", dir, err, out)
	}
	return ms(time.Since(t0)), nil
}

// checkSmall checks that dir, on the remote side, holds the small files.
func (r *remoteRun) checkSmall(dir string) error {
	n, b, err := treeSize(dir)
	if err != nil {
		return err
	}
	if n != smallFiles || b != smallBytes {
		return fmt.Errorf("%s: %d files, %d bytes; want %d, %d", dir, n, b, smallFiles, smallBytes)
	}
	return nil
}

func timeGitStatus(ctx context.Context, dir string) (float64, error) {
	// -C, not cmd.Dir: a child's chdir into a stuck sshfs happens before
	// exec, where the timeout cannot kill it.
	cmd := groupCommand(ctx, "git", "-C", dir, "-c", "safe.directory=*", "status")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	t := ms(time.Since(t0))
	if err != nil {
		return 0, fmt.Errorf("git status in %s: %w: %s", dir, err, out)
	}
	if !bytes.Contains(out, []byte("nothing to commit, working tree clean")) {
		return 0, fmt.Errorf("git status in %s: not clean:\n%s", dir, out)
	}
	return t, nil
}

// remoteKids are the processes the suite started, for remoteAbort.
var remoteKids kids

type kids struct {
	mu    sync.Mutex
	cmds  []*exec.Cmd
	group []bool
}

func (k *kids) add(c *exec.Cmd, group bool) {
	k.mu.Lock()
	k.cmds, k.group = append(k.cmds, c), append(k.group, group)
	k.mu.Unlock()
}

// remoteAbort kills what the suite started (by pid), takes down the FUSE
// mounts under root (sshfs's, vfsmount's) and removes root.
func remoteAbort(root string) {
	remoteKids.mu.Lock()
	for i, c := range remoteKids.cmds {
		if c.Process == nil {
			continue
		}
		if remoteKids.group[i] {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		} else {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
	}
	remoteKids.mu.Unlock()
	time.Sleep(500 * time.Millisecond)
	if b, err := os.ReadFile("/proc/mounts"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(f[1], root+"/") {
				_ = exec.Command("fusermount", "-u", "-z", f[1]).Run()
			}
		}
	}
	_ = os.RemoveAll(root)
}

// groupCommand is exec.CommandContext for a command that may start
// others (sh, git): in a process group of its own, all killed when ctx
// ends, and its output not waited for long after.
func groupCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

func (r *remoteRun) sshfsMount(port int, mnt string) error {
	cmd := exec.Command("sshfs", "-p", fmt.Sprint(port), "-o", "IdentityFile="+r.sshd.userKey+
		",UserKnownHostsFile="+r.sshd.knownHosts+",StrictHostKeyChecking=yes,BatchMode=yes",
		"-F", "/dev/null", "root@127.0.0.1:"+r.remote, mnt)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sshfs: %w: %s", err, out)
	}
	return nil
}

// unmount takes a FUSE mount (sshfs's) down, lazily when it is busy, and
// removes its directory.
func unmount(mnt string) error {
	if out, err := exec.Command("fusermount", "-u", mnt).CombinedOutput(); err != nil {
		if out2, err2 := exec.Command("fusermount", "-u", "-z", mnt).CombinedOutput(); err2 != nil {
			return fmt.Errorf("fusermount -u %s: %v: %s %s", mnt, err, out, out2)
		}
	}
	return os.Remove(mnt)
}

func sortedLines(s string) string {
	l := strings.Fields(s)
	sort.Strings(l)
	return strings.Join(l, "\n")
}

// lineDiff names a few lines in one list and not the other.
func lineDiff(got, want string) string {
	g, w := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Fields(got) {
		g[l] = true
	}
	for _, l := range strings.Fields(want) {
		w[l] = true
	}
	var b strings.Builder
	n := 0
	for l := range g {
		if !w[l] && n < 5 {
			fmt.Fprintf(&b, "  only in the first: %s\n", l)
			n++
		}
	}
	for l := range w {
		if !g[l] && n < 10 {
			fmt.Fprintf(&b, "  only in the second: %s\n", l)
			n++
		}
	}
	return b.String()
}

func printRemote(rows []remoteRow, rtt time.Duration) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprintf(tw, "workload\t vfsmount\t baseline\t ratio\t target\t sshfs\t sshfs/vfsmount\n")
	fmt.Fprintf(tw, "--------\t --------\t --------\t -----\t ------\t -----\t --------------\n")
	var missed []string
	for _, r := range rows {
		sshfs := value(r.sshfs, "ms")
		vfs := value(r.vfs, "ms")
		speed := fmt.Sprintf("%.1fx", r.sshfs/r.vfs)
		switch {
		case r.vfsOver && r.sshfsOver:
			vfs, sshfs, speed = ">"+vfs, ">"+sshfs, "?"
		case r.vfsOver:
			vfs, speed = ">"+vfs, "<"+speed
		case r.sshfsOver:
			sshfs, speed = ">"+sshfs, ">"+speed
		}
		if r.base == 0 {
			ok := r.vfs <= r.target
			verdict := "ok"
			if rtt != 20*time.Millisecond {
				verdict = "at 20 ms"
			} else if !ok {
				verdict = "MISSED"
				missed = append(missed, r.name)
			}
			fmt.Fprintf(tw, "%s\t %s\t —\t —\t <= %.0f ms: %s\t %s\t %s\n", r.name, vfs, r.target, verdict, sshfs, speed)
			continue
		}
		ratio := r.vfs / r.base
		verdict := "ok"
		if r.vfsOver || ratio > r.target {
			verdict = "MISSED"
			missed = append(missed, r.name)
		}
		rc := fmt.Sprintf("%.2fx", ratio)
		if r.vfsOver {
			rc = ">" + rc
		}
		fmt.Fprintf(tw, "%s\t %s\t %s\t %s\t <= %.1fx: %s\t %s\t %s\n", r.name, vfs, value(r.base, "ms"),
			rc, r.target, verdict, sshfs, speed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Printf("sshfs runs are cut at %v, vfsmount's tar rows at %v (shown as >); baselines over ssh open a connection each, as typed\n", remoteCap, remoteVFSCap)
	if len(missed) > 0 {
		fmt.Printf("targets missed: %s\n", strings.Join(missed, "; "))
	}
	return nil
}

// genRemoteRepo writes the remote side's repository: 26×50 directories
// of 10 files, 0.3-2.3 KB of source-like text with grepPatterns' matches
// in some, one commit, packed, checked out (its index written).
func genRemoteRepo(dir string) error {
	rng := rand.New(rand.NewPCG(28, 13))
	var paths []string
	content := map[string][]byte{}
	for t := range grepTop {
		for s := range grepSub {
			for f := range grepPer {
				p := fmt.Sprintf("src%02d/pkg%02d/file%02d.go", t, s, f)
				paths = append(paths, p)
				content[p] = grepText(rng, 300+rng.IntN(2000))
			}
		}
	}
	if err := importCommits(dir, paths, content, 0, nil); err != nil {
		return err
	}
	_, err := gitOut(dir, "reset", "-q", "--hard", "main")
	return err
}

const (
	smallFiles = 1000
	smallBytes = smallFiles * 2048
)

// genSmallTar writes the 1 000 small files (2 KiB each, 10 directories)
// under dir and their tar at name.
func genSmallTar(dir, name string) error {
	data := bytes.Repeat([]byte("small file line\n"), 2048/16)
	for i := range smallFiles {
		sub := filepath.Join(dir, fmt.Sprintf("d%d", i/100))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.txt", i)), data, 0o644); err != nil {
			return err
		}
	}
	if out, err := exec.Command("tar", "cf", name, "-C", dir, ".").CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %w: %s", err, out)
	}
	return nil
}

// startMountServer is startServer with the kernel face at mnt, where
// the host sees it.
func startMountServer(bin, root, mnt string, verbose bool, spec string) (*server, error) {
	sock := filepath.Join(root, fmt.Sprintf("s%d.sock", time.Now().UnixNano()))
	s := &server{done: make(chan error, 1)}
	s.cmd = exec.Command(bin, "serve", "--mount", spec, "--listen", "unix:"+sock, "--mountpoint", mnt)
	s.cmd.Stderr = &s.log
	if verbose {
		s.cmd.Stderr = io.MultiWriter(&s.log, os.Stderr)
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	remoteKids.add(s.cmd, false)
	go func() { s.done <- s.cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			s.conn, s.rd = c, bufio.NewReaderSize(c, 1<<20)
			return s, nil
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("vfsmount serve exited (%v); its log:\n%s", err, s.log.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.cmd.Process.Kill()
			<-s.done
			return nil, fmt.Errorf("vfsmount serve not listening after a minute; its log:\n%s", s.log.String())
		}
	}
}

// tool calls a tool over the server's JSON-RPC and returns its time and
// text; a tool error is an error.
func (s *server) tool(name string, args map[string]any) (float64, string, error) {
	s.id++
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": "tools.call",
		"params": map[string]any{"name": name, "arguments": args}})
	if err != nil {
		return 0, "", err
	}
	t0 := time.Now()
	if _, err := s.conn.Write(append(req, '\n')); err != nil {
		return 0, "", err
	}
	line, err := s.rd.ReadBytes('\n')
	d := ms(time.Since(t0))
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w; the log:\n%s", name, err, s.log.String())
	}
	var resp struct {
		Result struct {
			Text    string `json:"text"`
			IsError bool   `json:"isError"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return 0, "", err
	}
	if resp.Error != nil || resp.Result.IsError {
		return 0, "", fmt.Errorf("tool %s %v failed: %s%v; the log:\n%s", name, args, resp.Result.Text, resp.Error, s.log.String())
	}
	return d, resp.Result.Text, nil
}

// benchSSHD is a real OpenSSH server on 127.0.0.1, a free port, keys
// made for the run (internal/testutil's StartSSHD, for a program).
type benchSSHD struct {
	dir, userKey, knownHosts, hostPub string
	port                              int
	cmd                               *exec.Cmd
}

func startBenchSSHD(dir string) (*benchSSHD, error) {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	if _, err := os.Stat(sshd); err != nil {
		return nil, fmt.Errorf("the remote suite needs openssh-server (sshd): %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &benchSSHD{dir: dir, userKey: filepath.Join(dir, "id_user"), knownHosts: filepath.Join(dir, "known_hosts")}
	for _, k := range []string{filepath.Join(dir, "host_key"), s.userKey} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "vfsmount-bench", "-f", k).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %w: %s", err, out)
		}
	}
	pub, err := os.ReadFile(s.userKey + ".pub")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	hostPub, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	if err != nil {
		return nil, err
	}
	f := strings.Fields(string(hostPub))
	s.hostPub = f[0] + " " + f[1]
	_ = os.MkdirAll("/run/sshd", 0o755) // the privilege separation directory sshd insists on
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	// The remote user's HOME is a fresh directory: bash sources
	// ~/.bashrc for every ssh command, and a developer's (pyenv, nvm…)
	// can cost a second a session, which would be what is measured.
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
StrictModes no
SetEnv HOME=%s XDG_CACHE_HOME=%s
Subsystem sftp internal-sftp
LogLevel ERROR
MaxSessions 64
MaxStartups 64
`, s.port, filepath.Join(dir, "host_key"), filepath.Join(dir, "sshd.pid"), filepath.Join(dir, "authorized_keys"), home, filepath.Join(dir, "cache"))
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "sshd.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s.cmd = exec.Command(sshd, "-D", "-e", "-f", cfgPath)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	// Its own process group: stopping it takes its sessions too.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			b, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			return nil, fmt.Errorf("sshd did not listen on %d: %v; its log: %s", s.port, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeKnownHosts records the server's key for each port it is reached on.
func (s *benchSSHD) writeKnownHosts(ports map[time.Duration]int) error {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "[127.0.0.1]:%d %s\n", p, s.hostPub)
	}
	return os.WriteFile(s.knownHosts, []byte(b.String()), 0o600)
}

// run times `ssh -p PORT root@127.0.0.1 CMD`, a connection of its own;
// its output is returned unless stdout takes it.
func (s *benchSSHD) run(port int, stdin io.Reader, stdout io.Writer, command string) (float64, string, error) {
	cmd := exec.Command("ssh", "-F", "/dev/null", "-p", fmt.Sprint(port), "-i", s.userKey,
		"-o", "UserKnownHostsFile="+s.knownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		"-o", "LogLevel=ERROR", "root@127.0.0.1", command)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	if stdout != nil {
		cmd.Stdout = stdout
	}
	t0 := time.Now()
	err := cmd.Run()
	t := ms(time.Since(t0))
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && strings.HasPrefix(command, "rg ") {
		err = nil // no match
	}
	if err != nil {
		return 0, "", fmt.Errorf("ssh %s: %w: %s", command, err, errb.String())
	}
	return t, out.String(), nil
}

func (s *benchSSHD) stop() {
	if s.cmd == nil || s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
}

// delayProxy forwards TCP connections on 127.0.0.1 to target, holding
// every chunk delay before passing it on, each way: a link of 2×delay
// round trip and no bandwidth limit to speak of.
type delayProxy struct {
	l      net.Listener
	target string
	delay  time.Duration
	mu     sync.Mutex
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newDelayProxy(target string, delay time.Duration) (*delayProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &delayProxy{l: l, target: target, delay: delay, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *delayProxy) port() int { return p.l.Addr().(*net.TCPAddr).Port }

func (p *delayProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		var both sync.WaitGroup
		both.Add(2)
		go func() { defer both.Done(); p.pipe(s, c) }()
		go func() { defer both.Done(); p.pipe(c, s) }()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			both.Wait()
			c.Close()
			s.Close()
			p.mu.Lock()
			delete(p.conns, c)
			delete(p.conns, s)
			p.mu.Unlock()
		}()
	}
}

type delayedChunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk delay after it was read.
func (p *delayProxy) pipe(dst, src net.Conn) {
	ch := make(chan delayedChunk, 4096)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- delayedChunk{buf[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	broken := false
	for c := range ch {
		if broken {
			continue // drain, so that the reader ends
		}
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.data); err != nil {
			broken = true
			src.Close()
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

func (p *delayProxy) close() {
	p.l.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
