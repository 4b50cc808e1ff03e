// Command bench measures vfsmount through the kernel against the same
// workloads on tmpfs (/dev/shm), in the same run, and prints one table:
//
//	workload | vfsmount | baseline | ratio
//
// It builds bin/vfsmount, mounts a memory workspace in a child process at a
// temporary directory, and runs each workload on DIR/memory and on a
// directory under /dev/shm, alternating, keeping the best of -reps runs of
// each (the machine is shared; the best run is the least disturbed one).
//
// # Adding a workload
//
// Append a [workload] to [workloads]. Its Run gets an empty directory and
// returns one number in its Unit; Target states the ratio it must meet.
//
// # Page cache
//
// Before a read phase, bench drops the page cache (echo 3 >
// /proc/sys/vm/drop_caches) when it may (root, writable /proc/sys); the note
// under the table says whether it did. It matters little here: tmpfs pages
// are its storage and cannot be dropped, and the memory mount is opened
// without FOPEN_KEEP_CACHE, so every fresh open of it already reads through
// the FUSE server.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// workload is one row of the table.
type workload struct {
	Name string
	// Unit of the number Run returns: "MB/s" (higher is better) or
	// "ms" (lower is better).
	Unit           string
	HigherIsBetter bool
	// Target is the ratio (vfsmount / baseline) to meet: at least Target
	// when HigherIsBetter, at most Target otherwise. 0: report only.
	Target float64
	// Run measures the workload in dir, an empty directory, and returns
	// one number in Unit. Setup it needs is done inside, untimed.
	Run func(dir string, o *options) (float64, error)
}

type options struct {
	sizeMiB int
	files   int
	// overlayFiles is the size of the overlay table's generated
	// repository.
	overlayFiles int
	reps         int
	// reqFiles is the number of files of the requests table's
	// workloads.
	reqFiles int
	suites   string // which tables to run
	dropped  bool   // the page cache was dropped before a read phase
	dropErr  error
}

// workloads lists the table's rows, in order. Later issues append here.
func workloads() []workload {
	return []workload{
		{Name: "sequential write, 1 MiB blocks", Unit: "MB/s", HigherIsBetter: true, Target: 0.5, Run: seqWrite},
		{Name: "sequential read, 1 MiB blocks", Unit: "MB/s", HigherIsBetter: true, Target: 0.5, Run: seqRead},
		{Name: "warm stat walk", Unit: "ms", Target: 3, Run: statWalk},
		{Name: "create+write+close 4 KiB files", Unit: "ms", Run: createFiles},
	}
}

func main() {
	o := &options{}
	flag.IntVar(&o.sizeMiB, "size", 256, "size of the sequential file, MiB")
	flag.IntVar(&o.files, "files", 10000, "number of files for the stat walk and create workloads")
	flag.IntVar(&o.overlayFiles, "overlay-files", 13000, "number of files of the overlay table's generated repository")
	flag.IntVar(&o.reqFiles, "request-files", 500, "number of files of the requests table's workloads")
	flag.IntVar(&o.reps, "reps", 3, "runs of each workload on each side; the best counts")
	keep := flag.Bool("v", false, "show vfsmount's log")
	flag.StringVar(&o.suites, "suites", "memory,host,git,overlay,grep,requests,store", "comma-separated `LIST` of tables to run: memory, host, git, overlay, grep, requests, store (versitygw), remote (opt-in: sshd, sshfs, as root)")
	flag.Parse()
	if err := run(o, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o *options, verbose bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	bin := filepath.Join(root, "bin", "vfsmount")
	// As make build: the binary, and beside it the git hook it names.
	for _, b := range [][2]string{{bin, "./cmd/vfsmount"}, {filepath.Join(root, "bin", "vfsmount-fsmonitor"), "./cmd/vfsmount-fsmonitor"}} {
		build := exec.Command("go", "build", "-o", b[0], b[1])
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", b[1], err)
		}
	}
	suites := map[string]func(*options, string, bool) error{
		"memory": runMemory, "host": runHost, "git": runGit, "overlay": runOverlay, "grep": runGrep,
		"requests": runRequests, "remote": runRemote, "store": runStore,
	}
	for i, name := range strings.Split(o.suites, ",") {
		suite, ok := suites[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("-suites: unknown table %q (memory, host, git, overlay, grep, requests, store, remote)", name)
		}
		if i > 0 {
			fmt.Println()
		}
		if err := suite(o, bin, verbose); err != nil {
			return err
		}
	}
	return nil
}

// runMemory mounts a memory workspace with bin and measures workloads
// against tmpfs.
func runMemory(o *options, bin string, verbose bool) error {
	mnt, err := os.MkdirTemp("", "vfsmount-bench-mnt-")
	if err != nil {
		return err
	}
	defer os.Remove(mnt)
	base, err := os.MkdirTemp("/dev/shm", "vfsmount-bench-")
	if err != nil {
		return fmt.Errorf("baseline on /dev/shm: %w", err)
	}
	defer os.RemoveAll(base)

	d, err := startDaemon(bin, mnt, verbose, "--mount", "type=memory,dst=/memory")
	if err != nil {
		return err
	}
	defer d.stop()
	// Ctrl-C of the bench must not leave the mount behind.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		_ = d.stop()
	}()
	if err := d.waitReady("memory", 15*time.Second); err != nil {
		return err
	}

	fmt.Printf("vfsmount on %s (memory mount) vs tmpfs %s; best of %d; %d MiB file, %d files\n\n",
		mnt, base, o.reps, o.sizeMiB, o.files)
	failed, err := table(o, "baseline (tmpfs)", workloads(), filepath.Join(mnt, "memory"), base)
	if err != nil {
		return err
	}
	fmt.Println()
	switch {
	case o.dropped:
		fmt.Println("page cache dropped before each read phase (echo 3 > /proc/sys/vm/drop_caches)")
	case o.dropErr != nil:
		fmt.Printf("page cache not dropped (%v); reads still go through the FUSE server: fresh opens, no FOPEN_KEEP_CACHE\n", o.dropErr)
	}
	if len(failed) > 0 {
		fmt.Printf("below target: %s\n", strings.Join(failed, "; "))
	}
	return d.stop()
}

// measure runs w alternately on both sides, reps times, each time in a
// fresh directory, and returns the best result of each side.
func measure(w workload, o *options, vfs, base string) (bestVFS, bestBase float64, err error) {
	better := func(a, b float64) bool {
		if w.HigherIsBetter {
			return a > b
		}
		return a < b
	}
	for i := 0; i < o.reps; i++ {
		for _, side := range []struct {
			root string
			best *float64
		}{{vfs, &bestVFS}, {base, &bestBase}} {
			dir, err := os.MkdirTemp(side.root, "w-")
			if err != nil {
				return 0, 0, err
			}
			v, err := w.Run(dir, o)
			if rerr := os.RemoveAll(dir); err == nil {
				err = rerr
			}
			if err != nil {
				return 0, 0, err
			}
			if i == 0 || better(v, *side.best) {
				*side.best = v
			}
		}
	}
	return bestVFS, bestBase, nil
}

func ratioCell(w workload, r float64) (string, bool) {
	s := fmt.Sprintf("%.2fx", r)
	if w.Unit == "ms" {
		s += " time"
	} else {
		s += " throughput"
	}
	if w.Target == 0 {
		return s + " (report)", true
	}
	ok := r <= w.Target
	cmp := "<="
	if w.HigherIsBetter {
		ok, cmp = r >= w.Target, ">="
	}
	verdict := "ok"
	if !ok {
		verdict = "MISSED"
	}
	return fmt.Sprintf("%s (target %s %.1fx: %s)", s, cmp, w.Target, verdict), ok
}

func value(v float64, unit string) string {
	if unit == "ms" {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

const block = 1 << 20

func seqWrite(dir string, o *options) (float64, error) {
	start := time.Now()
	if err := writeBig(filepath.Join(dir, "seq.bin"), o.sizeMiB); err != nil {
		return 0, err
	}
	return float64(o.sizeMiB) * block / 1e6 / time.Since(start).Seconds(), nil
}

func seqRead(dir string, o *options) (float64, error) {
	name := filepath.Join(dir, "seq.bin")
	if err := writeBig(name, o.sizeMiB); err != nil {
		return 0, err
	}
	dropCaches(o)
	start := time.Now()
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, block)
	var n int64
	for {
		m, err := f.Read(buf)
		n += int64(m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if want := int64(o.sizeMiB) * block; n != want {
		return 0, fmt.Errorf("read %d bytes, want %d", n, want)
	}
	return float64(n) / 1e6 / time.Since(start).Seconds(), nil
}

// writeBig writes sizeMiB MiB in 1 MiB blocks and closes the file (close
// flushes through FUSE; fsync is not part of the workload on either side).
func writeBig(name string, sizeMiB int) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	buf := bytes.Repeat([]byte("vfsmount"), block/8)
	for i := 0; i < sizeMiB; i++ {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// tree creates `files` files holding data, spread over directories of at
// most 100 entries, as source trees are.
func tree(dir string, files int, data []byte) error {
	for i := 0; i < files; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.Mkdir(sub, 0o755); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(filepath.Join(sub, fmt.Sprintf("f%05d.txt", i)), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if len(data) > 0 {
			if _, err := f.Write(data); err != nil {
				f.Close()
				return err
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func statWalk(dir string, o *options) (float64, error) {
	if err := tree(dir, o.files, []byte("x")); err != nil {
		return 0, err
	}
	walk := func() (int, error) {
		n := 0
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if _, err := os.Lstat(p); err != nil {
				return err
			}
			n++
			return nil
		})
		return n, err
	}
	if _, err := walk(); err != nil { // warm the caches
		return 0, err
	}
	start := time.Now()
	n, err := walk()
	if err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	if want := o.files + (o.files+99)/100 + 1; n != want {
		return 0, fmt.Errorf("walk saw %d entries, want %d", n, want)
	}
	return float64(elapsed.Microseconds()) / 1000, nil
}

func createFiles(dir string, o *options) (float64, error) {
	data := bytes.Repeat([]byte("x"), 4096)
	start := time.Now()
	if err := tree(dir, o.files, data); err != nil {
		return 0, err
	}
	return float64(time.Since(start).Microseconds()) / 1000, nil
}

// dropCaches writes dirty pages back and drops the page cache, where the
// process may.
func dropCaches(o *options) {
	syscall.Sync()
	err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
	if err != nil {
		o.dropErr = err
		return
	}
	o.dropped = true
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run bench inside the vfsmount module (go run ./bench)")
	}
	return filepath.Dir(mod), nil
}
