package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

// daemon is a `vfsmount mount` child serving the workspace a table
// measures. Measuring from another process is what a user sees, and it
// keeps the bench from touching the mount from the serving process.
type daemon struct {
	mnt  string
	cmd  *exec.Cmd
	log  lockedBuffer
	done chan error

	stopOnce sync.Once
	stopErr  error
}

// startDaemon runs `bin mount ARGS... MNT`. Its log is kept for error
// messages, and copied to stderr when verbose.
func startDaemon(bin, mnt string, verbose bool, args ...string) (*daemon, error) {
	d := &daemon{mnt: mnt, done: make(chan error, 1)}
	d.cmd = exec.Command(bin, append(append([]string{"mount"}, args...), mnt)...)
	d.cmd.Stderr = &d.log
	if verbose {
		d.cmd.Stderr = io.MultiWriter(&d.log, os.Stderr)
	}
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.done <- d.cmd.Wait() }()
	return d, nil
}

// waitReady waits until MNT is a FUSE mount whose sub directory answers. On
// failure the child is killed and its log is part of the error.
func (d *daemon) waitReady(sub string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile("/proc/mounts")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) > 2 && f[1] == d.mnt && strings.HasPrefix(f[2], "fuse") {
				if _, err := os.Stat(filepath.Join(d.mnt, sub)); err == nil {
					return nil
				}
			}
		}
		select {
		case err := <-d.done:
			d.done <- err
			return fmt.Errorf("vfsmount exited before %s was mounted (%v); its log:\n%s", d.mnt, err, d.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = d.cmd.Process.Kill()
	return fmt.Errorf("%s not mounted after %v; vfsmount log:\n%s", d.mnt, timeout, d.log.String())
}

// stop sends SIGINT, as Ctrl-C would, and waits for a clean unmount (30 s
// at most, then kills). Calling it again returns the first result.
func (d *daemon) stop() error {
	d.stopOnce.Do(func() {
		_ = d.cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-d.done:
			if err != nil {
				d.stopErr = fmt.Errorf("vfsmount: %w; its log:\n%s", err, d.log.String())
			}
		case <-time.After(30 * time.Second):
			_ = d.cmd.Process.Kill()
			d.stopErr = errors.New("vfsmount did not exit after SIGINT")
		}
	})
	return d.stopErr
}

// lockedBuffer is the child's log, written by exec's copying goroutine
// while the bench may read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// table measures each workload on both sides and prints one
// `workload | vfsmount | baseline | ratio` table under baseline's label. It
// returns the names of the rows below target.
func table(o *options, baseline string, rows []workload, vfs, base string) ([]string, error) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprintf(tw, "workload\t vfsmount\t %s\t ratio\n", baseline)
	fmt.Fprintf(tw, "--------\t --------\t %s\t -----\n", strings.Repeat("-", len(baseline)))
	var failed []string
	for _, w := range rows {
		v, b, err := measure(w, o, vfs, base)
		if err != nil {
			tw.Flush()
			return failed, fmt.Errorf("%s: %w", w.Name, err)
		}
		cell, ok := ratioCell(w, v/b)
		if !ok {
			failed = append(failed, w.Name)
		}
		fmt.Fprintf(tw, "%s\t %s\t %s\t %s\n", w.Name, value(v, w.Unit), value(b, w.Unit), cell)
	}
	return failed, tw.Flush()
}
