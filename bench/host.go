package main

// The host mount's rows. They compare a host mount through the kernel with
// the very host directory it serves, on the same disk, in the same run:
//
//	vfsmount: MNT/host/w-XXX   (served from SRC/w-XXX by a child vfsmount)
//	baseline: SRC/base-XXX     (plain system calls)
//
// SRC is a directory under /var/tmp (a real disk, not tmpfs: the host mount
// exists to serve real directories). Call runHost after building the binary;
// it mounts, prints its own table and unmounts.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// hostSizeMiB is the sequential file of the host rows: 1 GiB, as the issue
// asks, whatever -size says for the memory rows.
const hostSizeMiB = 1024

// hostWorkloads lists the host mount's rows. The sequential rows' targets
// depend on whether FUSE passthrough serves them (the issue asks 0.9x with
// it, 0.7x without).
func hostWorkloads(passthrough bool) []workload {
	seqTarget := 0.7
	if passthrough {
		seqTarget = 0.9
	}
	big := func(run func(string, *options) (float64, error)) func(string, *options) (float64, error) {
		return func(dir string, o *options) (float64, error) {
			oo := *o
			oo.sizeMiB = hostSizeMiB
			v, err := run(dir, &oo)
			o.dropped, o.dropErr = oo.dropped, oo.dropErr
			return v, err
		}
	}
	return []workload{
		{Name: "host: sequential write 1 GiB, 1 MiB blocks", Unit: "MB/s", HigherIsBetter: true, Target: seqTarget, Run: big(seqWrite)},
		{Name: "host: sequential read 1 GiB, 1 MiB blocks", Unit: "MB/s", HigherIsBetter: true, Target: seqTarget, Run: big(seqRead)},
		{Name: "host: untar 10 000 files", Unit: "ms", Target: 3, Run: untar},
		{Name: "host: git status, 10 000 files", Unit: "ms", Target: 2, Run: gitStatus},
	}
}

// runHost measures hostWorkloads twice: with FUSE passthrough (the
// default of vfsmount mount) and with --no-passthrough.
func runHost(o *options, bin string, verbose bool) error {
	for _, passthrough := range []bool{true, false} {
		if err := runHostMode(o, bin, verbose, passthrough); err != nil {
			return err
		}
	}
	return nil
}

// runHostMode mounts SRC on /host with bin and measures hostWorkloads.
func runHostMode(o *options, bin string, verbose bool, passthrough bool) error {
	src, err := os.MkdirTemp("/var/tmp", "vfsmount-bench-host-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	mnt, err := os.MkdirTemp("", "vfsmount-bench-hostmnt-")
	if err != nil {
		return err
	}
	defer os.Remove(mnt)

	args := []string{"--mount", "type=host,src=" + src + ",dst=/host"}
	mode := "with passthrough"
	if !passthrough {
		args = append(args, "--no-passthrough")
		mode = "--no-passthrough"
	}
	d, err := startDaemon(bin, mnt, verbose, args...)
	if err != nil {
		return err
	}
	defer d.stop()
	if err := d.waitReady("host", 15*time.Second); err != nil {
		return err
	}

	fmt.Printf("\nvfsmount %s on %s (host mount of %s) vs the same directory directly; best of %d\n\n", mode, mnt, src, o.reps)
	failed, err := table(o, "baseline (host dir)", hostWorkloads(passthrough), filepath.Join(mnt, "host"), src)
	if err != nil {
		return err
	}
	switch {
	case o.dropped:
		fmt.Println("\npage cache dropped before each cold phase (echo 3 > /proc/sys/vm/drop_caches)")
	case o.dropErr != nil:
		fmt.Printf("\npage cache NOT dropped (%v): cold rows are warm for the kernel\n", o.dropErr)
	}
	// The log is complete once the child has exited.
	if err := d.stop(); err != nil {
		return err
	}
	if strings.Contains(d.log.String(), "passthrough active") {
		fmt.Println("FUSE passthrough active: the kernel reads and writes host files itself")
	} else {
		fmt.Println("no FUSE passthrough: every read and write goes through the vfsmount process")
	}
	if len(failed) > 0 {
		fmt.Printf("below target: %s\n", strings.Join(failed, "; "))
	}
	return nil
}

// untar extracts an archive of o.files small files (in directories of 100,
// as source trees are) with tar(1), outside the timed part built in memory
// and written next to dir's parent so only the extraction touches dir.
func untar(dir string, o *options) (float64, error) {
	archive, err := os.CreateTemp("", "vfsmount-bench-*.tar")
	if err != nil {
		return 0, err
	}
	defer os.Remove(archive.Name())
	tw := tar.NewWriter(archive)
	body := bytes.Repeat([]byte("package x\n"), 60)
	now := time.Now()
	for i := 0; i < o.files; i++ {
		if i%100 == 0 {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("d%03d/", i/100), Mode: 0o755, ModTime: now}); err != nil {
				return 0, err
			}
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("d%03d/f%05d.go", i/100, i), Mode: 0o644, Size: int64(len(body)), ModTime: now}
		if err := tw.WriteHeader(h); err != nil {
			return 0, err
		}
		if _, err := tw.Write(body); err != nil {
			return 0, err
		}
	}
	if err := errors.Join(tw.Close(), archive.Close()); err != nil {
		return 0, err
	}
	start := time.Now()
	cmd := exec.Command("tar", "-C", dir, "-xf", archive.Name())
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("tar: %w: %s", err, out)
	}
	return float64(time.Since(start).Microseconds()) / 1000, nil
}

// gitStatus times `git status` in a fresh checkout of o.files files, after
// one untimed run that fills the index's stat data (and the caches).
func gitStatus(dir string, o *options) (float64, error) {
	if err := tree(dir, o.files, []byte("package x\n")); err != nil {
		return 0, err
	}
	git := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
			"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "bench"}, {"status", "--porcelain"}} {
		if err := git(args...); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	if err := git("status", "--porcelain"); err != nil {
		return 0, err
	}
	return float64(time.Since(start).Microseconds()) / 1000, nil
}
