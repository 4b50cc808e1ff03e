package main

// The store table (issue 29): a workspace's checkpoints in S3-compatible
// object storage, against a real server (versitygw over its POSIX backend,
// on 127.0.0.1), all in one run. The workspace is a writable git mount over
// a generated commit of -overlay-files files (13 000 by default) plus a
// memory mount of 200 notes and 32 MiB in four files.
//
// Rows:
//
//	push after 100 changed files   vfsmount checkpoint push's store.push
//	                               (control socket), after 90 files of the
//	                               git mount and 10 of the memory mount
//	                               were rewritten: its time, and the bytes
//	                               it sent against the bytes that changed
//	resume to the first ls         `vfsmount mount --resume` on an empty
//	                               chunk cache, from the start of the
//	                               process to the first listing of a git
//	                               directory and of the memory mount;
//	                               against a plain mount of the same
//	                               workspace with no store (reference)
//	full read after resume         every file of the resumed memory mount,
//	                               read at once after the first ls (the
//	                               chunks fetched on first open), against a
//	                               GET of one object of the same bytes from
//	                               the same server
//	fork                           store.Fork (a new head, the same chunks)
//	                               of a 1-file workspace and of the large
//	                               one: flat in size
//	sync: 1s, write-heavy          five untars of 700 small files into the
//	                               memory mount with --sync 1s, against
//	                               the same workspace with no store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/store"
	"github.com/vfsmount/vfsmount/workspace"
)

const (
	storeBucket = "bench"
	storeURL    = "s3://" + storeBucket + "/p"
	storeAccess = "vfsmountbench"
	storeSecret = "vfsmountbenchsecret"
	// storeBigFiles of storeBigMiB each are the memory mount's bulk.
	storeBigFiles = 4
	storeBigMiB   = 8
	// storeUntars untars of storeUntarFiles files are the sync row's
	// workload.
	storeUntars     = 5
	storeUntarFiles = 700
)

// s3Server is versitygw serving a directory.
type s3Server struct {
	endpoint string
	cmd      *exec.Cmd
	log      lockedBuffer
}

// startS3 starts versitygw (PATH or ~/go/bin) on a free port over dir, with
// the bucket made, and points this process's AWS_* environment (which the
// daemons inherit) at it.
func startS3(dir string) (*s3Server, error) {
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(home, "go", "bin", "versitygw")
		if _, err := os.Stat(bin); err != nil {
			return nil, errors.New("the store table needs versitygw (go install github.com/versity/versitygw/cmd/versitygw@latest)")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	s := &s3Server{endpoint: "http://" + addr}
	s.cmd = exec.Command(bin, "--access", storeAccess, "--secret", storeSecret, "--port", addr, "posix", dir)
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("versitygw: %w", err)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": storeAccess, "AWS_SECRET_ACCESS_KEY": storeSecret, "AWS_REGION": "us-east-1",
		"AWS_CONFIG_FILE": filepath.Join(dir, "no-aws-config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "no-aws-credentials"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		os.Setenv(k, v)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("versitygw did not listen on %s: %v\n%s", addr, err, s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(storeBucket)}); err != nil {
		s.stop()
		return nil, fmt.Errorf("create bucket: %w\n%s", err, s.log.String())
	}
	return s, nil
}

func (s *s3Server) client() *s3.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(storeAccess, storeSecret, "")}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.endpoint)
		o.UsePathStyle = true
	})
}

func (s *s3Server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// storeRow is one row of the table: vfs against base (0: none), in ms
// unless unit says otherwise; target is a bound on vfs in ms (abs) or on
// the ratio.
type storeRow struct {
	name      string
	vfs, base float64
	baseName  string
	abs       float64 // vfs <= abs ms (0: none)
	ratio     float64 // vfs/base <= ratio (0: none)
	note      string
}

// runStore measures the store table.
func runStore(o *options, bin string, verbose bool) error {
	root, err := os.MkdirTemp("/var/tmp", "vfsmount-bench-store-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	for _, d := range []string{"s3", "mnt", "untar"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	srv, err := startS3(filepath.Join(root, "s3"))
	if err != nil {
		return err
	}
	defer srv.stop()
	src := filepath.Join(root, "repo")
	top := max(1, (o.overlayFiles+250)/500)
	start := time.Now()
	if _, err := genGitRepo(src, top, 50, 10, 1); err != nil {
		return fmt.Errorf("generate the repository: %w", err)
	}
	files := top * 500
	fmt.Fprintf(os.Stderr, "store: repository of %d files in %v\n", files, time.Since(start).Round(time.Millisecond))
	mounts := []string{"--mount", "type=git,src=" + src + ",dst=/repo,writable", "--mount", "type=memory,dst=/memory"}
	mnt := filepath.Join(root, "mnt")
	cfg := func(name string) (string, error) {
		p := filepath.Join(root, name+".yaml")
		body := "store:\n  endpoint: " + srv.endpoint + "\n  cache: " + filepath.Join(root, "cache-"+name) + "\n"
		return p, os.WriteFile(p, []byte(body), 0o644)
	}
	var rows []storeRow

	// The workspace: the memory mount's notes and bulk, a first push.
	cfgA, err := cfg("a")
	if err != nil {
		return err
	}
	a, err := startDaemon(bin, mnt, verbose, append([]string{"--config", cfgA, "--store", storeURL + "/ws"}, mounts...)...)
	if err != nil {
		return err
	}
	defer a.stop()
	if err := a.waitReady("memory", 60*time.Second); err != nil {
		return err
	}
	var memBytes int64
	if err := os.Mkdir(filepath.Join(mnt, "memory/notes"), 0o755); err != nil {
		return err
	}
	for i := range 200 {
		b := bytes.Repeat([]byte("memory note\n"), 100)
		memBytes += int64(len(b))
		if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("memory/notes/n%03d.md", i)), b, 0o644); err != nil {
			return err
		}
	}
	for i := range storeBigFiles {
		b := make([]byte, storeBigMiB<<20)
		_, _ = rand.Read(b)
		memBytes += int64(len(b))
		if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("memory/big%d.bin", i)), b, 0o644); err != nil {
			return err
		}
	}
	t0 := time.Now()
	first, err := storePush(mnt)
	if err != nil {
		return fmt.Errorf("first push: %w; log:\n%s", err, a.log.String())
	}
	firstTook := time.Since(t0)

	// Push after 100 changed files.
	var changed int64
	for i := range 100 {
		b := []byte(fmt.Sprintf("// edited %d\n%s", i, strings.Repeat("x", 500)))
		changed += int64(len(b))
		p := fmt.Sprintf("repo/pkg%02d/mod%02d/file%02d.go", i%top, (i*7)%50, i%10)
		if i >= 90 {
			p = fmt.Sprintf("memory/notes/n%03d.md", i)
		}
		if err := os.WriteFile(filepath.Join(mnt, p), b, 0o644); err != nil {
			return err
		}
	}
	t0 = time.Now()
	pushed, err := storePush(mnt)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	pushTook := ms(time.Since(t0))
	if pushed.Changed != changed {
		return fmt.Errorf("push: %d bytes changed by its count, %d written", pushed.Changed, changed)
	}
	rows = append(rows,
		storeRow{name: "push after 100 changed files", vfs: pushTook,
			note: fmt.Sprintf("%s changed, %s sent: %.2fx the changed bytes; %d of %d chunks uploaded (first push: %s in %v)",
				workspace.HumanBytes(changed), workspace.HumanBytes(pushed.Sent), float64(pushed.Sent)/float64(changed),
				pushed.Uploaded, pushed.Chunks, workspace.HumanBytes(first.Sent), firstTook.Round(time.Millisecond))})
	// What the memory mount holds now: what a full read after the
	// resume must read.
	if memBytes, err = readTree(filepath.Join(mnt, "memory")); err != nil {
		return err
	}
	if err := a.stop(); err != nil {
		return err
	}

	// A mount to its first ls (of a git directory and of the memory
	// mount).
	firstLs := func(resumed bool, args ...string) (float64, *daemon, error) {
		t0 := time.Now()
		d, err := startDaemon(bin, mnt, verbose, args...)
		if err != nil {
			return 0, nil, err
		}
		deadline := t0.Add(60 * time.Second)
		for {
			_, e1 := os.ReadDir(filepath.Join(mnt, "repo/pkg07/mod03"))
			mem, e2 := os.ReadDir(filepath.Join(mnt, "memory"))
			if e1 == nil && e2 == nil {
				took := ms(time.Since(t0))
				if resumed && len(mem) != 1+storeBigFiles {
					_ = d.stop()
					return 0, nil, fmt.Errorf("the resumed memory mount lists %d entries, want %d", len(mem), 1+storeBigFiles)
				}
				return took, d, nil
			}
			select {
			case err := <-d.done:
				d.done <- err
				return 0, nil, fmt.Errorf("vfsmount exited (%v); its log:\n%s", err, d.log.String())
			default:
			}
			if time.Now().After(deadline) {
				_ = d.stop()
				return 0, nil, fmt.Errorf("no listing after 60s; log:\n%s", d.log.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Resume on an empty cache, then read everything of the memory
	// mount. Each rep resumes with a cache of its own, after a plain
	// mount of the same workspace with no store (the reference),
	// alternately.
	var plain, resume, readAll float64
	var readBytes int64
	for i := range o.reps {
		v, d, err := firstLs(false, mounts...)
		if err != nil {
			return err
		}
		if err := d.stop(); err != nil {
			return err
		}
		if i == 0 || v < plain {
			plain = v
		}
		c, err := cfg(fmt.Sprintf("resume%d", i))
		if err != nil {
			return err
		}
		v, d, err = firstLs(true, append([]string{"--config", c, "--resume", storeURL + "/ws"}, mounts...)...)
		if err != nil {
			return err
		}
		t0 := time.Now()
		n, err := readTree(filepath.Join(mnt, "memory"))
		r := ms(time.Since(t0))
		if serr := d.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		if n != memBytes {
			return fmt.Errorf("read %d bytes of the resumed memory mount, want %d", n, memBytes)
		}
		readBytes = n
		if i == 0 || v < resume {
			resume = v
		}
		if i == 0 || r < readAll {
			readAll = r
		}
	}
	rows = append(rows, storeRow{name: "resume, empty cache, to the first ls", vfs: resume, base: plain,
		baseName: "mount, no store", abs: 300, note: "process start to a listing of a git directory and of the memory mount"})
	oneObj, err := getOneObject(srv, readBytes, o.reps)
	if err != nil {
		return err
	}
	rows = append(rows, storeRow{name: "full read after resume", vfs: readAll, base: oneObj, baseName: "one GET",
		note: fmt.Sprintf("%s in %d files, right after the first ls, against one object of the same size", workspace.HumanBytes(readBytes), 200+storeBigFiles)})

	// Fork, flat in size: a 1-file workspace against the large one.
	tinyCfg, err := cfg("tiny")
	if err != nil {
		return err
	}
	tiny, err := startDaemon(bin, mnt, verbose, "--config", tinyCfg, "--store", storeURL+"/tiny", "--mount", "type=memory,dst=/memory")
	if err != nil {
		return err
	}
	if err := tiny.waitReady("memory", 30*time.Second); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mnt, "memory/one"), []byte("one\n"), 0o644); err != nil {
		return err
	}
	if _, err := storePush(mnt); err != nil {
		return err
	}
	if err := tiny.stop(); err != nil {
		return err
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{URL: storeURL, Endpoint: srv.endpoint})
	if err != nil {
		return err
	}
	forkTime := func(from string) (float64, error) {
		var best float64
		for i := range max(o.reps, 5) {
			t0 := time.Now()
			if _, err := st.Fork(ctx, from, fmt.Sprintf("%s-fork-%d", from, i)); err != nil {
				return 0, err
			}
			if v := ms(time.Since(t0)); i == 0 || v < best {
				best = v
			}
		}
		return best, nil
	}
	forkTiny, err := forkTime("tiny")
	if err != nil {
		return err
	}
	forkBig, err := forkTime("ws")
	if err != nil {
		return err
	}
	rows = append(rows,
		storeRow{name: "fork, 1-file workspace", vfs: forkTiny, abs: 50, note: "store.Fork: reads the head, writes a new one"},
		storeRow{name: fmt.Sprintf("fork, %d-file + %d MiB workspace", files+200+storeBigFiles, storeBigFiles*storeBigMiB), vfs: forkBig, base: forkTiny,
			baseName: "1-file fork", abs: 50, ratio: 1.5, note: "flat in size: against the 1-file fork"})

	// sync: 1s against no store, on a write-heavy workload.
	tarball := filepath.Join(root, "small.tar")
	if err := makeUntarTarball(src, filepath.Join(root, "untar"), tarball); err != nil {
		return err
	}
	untars := func(args ...string) (float64, error) {
		d, err := startDaemon(bin, mnt, verbose, args...)
		if err != nil {
			return 0, err
		}
		defer d.stop()
		if err := d.waitReady("memory", 60*time.Second); err != nil {
			return 0, err
		}
		t0 := time.Now()
		for j := range storeUntars {
			dir := filepath.Join(mnt, "memory", fmt.Sprintf("x%d", j))
			if err := os.Mkdir(dir, 0o755); err != nil {
				return 0, err
			}
			if out, err := exec.Command("tar", "-xf", tarball, "-C", dir).CombinedOutput(); err != nil {
				return 0, fmt.Errorf("tar: %v: %s", err, out)
			}
		}
		v := ms(time.Since(t0))
		return v, d.stop()
	}
	var syncOn, syncOff float64
	for i := range o.reps {
		c, err := cfg(fmt.Sprintf("sync%d", i))
		if err != nil {
			return err
		}
		on, err := untars(append([]string{"--config", c, "--store", fmt.Sprintf("%s/sync%d", storeURL, i), "--sync", "1s"}, mounts...)...)
		if err != nil {
			return err
		}
		off, err := untars(mounts...)
		if err != nil {
			return err
		}
		if i == 0 || on < syncOn {
			syncOn = on
		}
		if i == 0 || off < syncOff {
			syncOff = off
		}
	}
	rows = append(rows, storeRow{name: fmt.Sprintf("sync: 1s, %d untars of %d files", storeUntars, storeUntarFiles), vfs: syncOn, base: syncOff,
		baseName: "no store", ratio: 1.1, note: "into the memory mount; the sync loop pushes every second meanwhile"})

	fmt.Printf("store: versitygw (POSIX backend) at %s; a writable git mount over %d files plus a memory mount (200 notes, %d MiB); best of %d\n\n",
		srv.endpoint, files, storeBigFiles*storeBigMiB, o.reps)
	return printStore(rows)
}

// storePush asks the daemon serving mnt for a new checkpoint pushed.
func storePush(mnt string) (jsonrpc.StorePushResult, error) {
	var res jsonrpc.StorePushResult
	sock, err := workspace.ControlPath(mnt)
	if err != nil {
		return res, err
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return res, err
	}
	c := jsonrpc.NewClient(conn)
	defer c.Close()
	err = c.Call(context.Background(), "store.push", jsonrpc.StorePushParams{}, &res)
	return res, err
}

// readTree reads every regular file under dir and returns the bytes read.
func readTree(dir string) (int64, error) {
	var n int64
	buf := make([]byte, 1<<20)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		m, err := io.CopyBuffer(io.Discard, f, buf)
		n += m
		return err
	})
	return n, err
}

// getOneObject puts one object of size bytes and returns the best time of
// reps GETs of it, read whole.
func getOneObject(srv *s3Server, size int64, reps int) (float64, error) {
	ctx := context.Background()
	c := srv.client()
	b := make([]byte, size)
	_, _ = rand.Read(b)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(storeBucket), Key: aws.String("one-object"),
		Body: bytes.NewReader(b), ContentLength: aws.Int64(size)}); err != nil {
		return 0, err
	}
	var best float64
	for i := range max(reps, 1) {
		t0 := time.Now()
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(storeBucket), Key: aws.String("one-object")})
		if err != nil {
			return 0, err
		}
		n, err := io.Copy(io.Discard, out.Body)
		out.Body.Close()
		if err != nil {
			return 0, err
		}
		if n != size {
			return 0, fmt.Errorf("one object: got %d bytes, want %d", n, size)
		}
		if v := ms(time.Since(t0)); i == 0 || v < best {
			best = v
		}
	}
	return best, nil
}

// makeUntarTarball writes a tar of storeUntarFiles small files of the
// repository (its first directories) to tarball, staged in dir.
func makeUntarTarball(src, dir, tarball string) error {
	stage := filepath.Join(dir, "..", "untar-all")
	if err := os.Mkdir(stage, 0o755); err != nil {
		return err
	}
	arch := exec.Command("sh", "-c", `git -C "$1" archive --format=tar HEAD pkg00 pkg01 | tar -x -C "$2"`, "sh", src, stage)
	if out, err := arch.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive: %v: %s", err, out)
	}
	src = stage
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || n >= storeUntarFiles {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		n++
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return err
	}
	if n < storeUntarFiles {
		return fmt.Errorf("the repository has %d files, want %d for the untar", n, storeUntarFiles)
	}
	if out, err := exec.Command("tar", "-cf", tarball, "-C", dir, ".").CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, out)
	}
	return nil
}

// printStore prints the table, each target met or missed.
func printStore(rows []storeRow) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprintf(tw, "workload\t vfsmount\t baseline\t ratio\t target\t notes\n")
	fmt.Fprintf(tw, "--------\t --------\t --------\t -----\t ------\t -----\n")
	var missed []string
	for _, r := range rows {
		base, ratio := "—", "—"
		if r.base > 0 {
			base = fmt.Sprintf("%s (%s)", value(r.base, "ms"), r.baseName)
			ratio = fmt.Sprintf("%.2fx", r.vfs/r.base)
		}
		var targets []string
		ok := true
		if r.abs > 0 {
			targets = append(targets, fmt.Sprintf("<= %.0f ms", r.abs))
			ok = ok && r.vfs <= r.abs
		}
		if r.ratio > 0 {
			targets = append(targets, fmt.Sprintf("<= %.1fx", r.ratio))
			ok = ok && r.base > 0 && r.vfs/r.base <= r.ratio
		}
		target := "report"
		if len(targets) > 0 {
			verdict := "ok"
			if !ok {
				verdict = "MISSED"
				missed = append(missed, r.name)
			}
			target = strings.Join(targets, ", ") + ": " + verdict
		}
		fmt.Fprintf(tw, "%s\t %s\t %s\t %s\t %s\t %s\n", r.name, value(r.vfs, "ms"), base, ratio, target, r.note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(missed) > 0 {
		fmt.Printf("targets missed: %s\n", strings.Join(missed, "; "))
	}
	return nil
}
