// Command vfsmount builds an agent's workspace from several sources (git
// commits, host directories, skills directories and memory trees; see
// "vfsmount help mount") and serves it two ways from one tree: as a FUSE
// filesystem (the kernel face) and as the file and shell tools agents call
// (the tool face, over the CLI, JSON-RPC and MCP).
//
// # Usage
//
//	vfsmount mount [--config FILE] [--mount SPEC]... MOUNTPOINT
//	vfsmount umount [--lazy] MOUNTPOINT
//	vfsmount status MOUNTPOINT
//	vfsmount tools|serve|mcp [--config FILE] [--mount SPEC]... ...
//	vfsmount call [--server ADDR | --config FILE | --mount SPEC...] TOOL JSON
//	vfsmount exec [--config FILE] [--mount SPEC]... -- CMD [ARG]...
//	vfsmount diff [--stat | --name-status] MOUNTPOINT [PATH]...
//	vfsmount commit MOUNTPOINT -m MSG --branch NAME [--force] [--dst PREFIX]
//	vfsmount reset MOUNTPOINT [PATH]...
//	vfsmount checkpoint create|list|diff|restore|delete|push MOUNTPOINT ...
//	vfsmount mount --store|--resume s3://BUCKET/PREFIX/NAME[@CKPT] [--take-over] ... MOUNTPOINT
//	vfsmount store ls|gc s3://BUCKET/PREFIX
//	vfsmount fork s3://BUCKET/PREFIX/NAME[@CKPT] NEWNAME
//	vfsmount fsmonitor SOCKET VERSION TOKEN
//	vfsmount peer [--ro] DIR
//	vfsmount completion bash|zsh|fish
//	vfsmount version
//	vfsmount help [COMMAND]
//
// diff, commit and reset export a writable git mount's changes, checkpoint
// takes and restores checkpoints of a live workspace, both through its
// control socket; git runs fsmonitor, as the writable git mount's
// core.fsmonitor hook; a remote mount's daemon runs peer on the remote
// machine (over ssh, or its command:). The test TestDocListsEveryCommand holds this list to
// the command tree.
//
// # Exit codes
//
// 0 success; 1 runtime failure (a live mount in the way, a busy mount, a
// mount that failed, a tool call that returned an error); 2 usage or
// config error, in which case nothing was mounted and one line on stderr
// names the flag, spec, key or path at fault. `status` answers with its
// exit code: 0 live (and whole), 1 stale or incomplete, 2 none; `exec`
// exits with its command's.
//
// # Layout of this package
//
// cli.go builds the command tree on cobra and holds what every subcommand
// shares: the global flags, help, and how errors become exit codes;
// cmd_*.go declare one subcommand each, and cmd_completion.go what the
// completion scripts cobra generates offer. A workspace is described by
// [workspaceFlags] (--config, --mount and the policy flags) and built by
// [buildWorkspace]: mount specs and config entries go through one
// parser/validator (spec.go, config.go) driven by the mount type registry
// (registry.go, type_*.go), the policy is read, registered as flags and
// merged in policy_*.go, and package workspace opens the workspace over
// the mounts: it stacks the policy and the two faces on the union (and
// says why in that order), and serves the checkpoints, the export, git's
// fsmonitor hook and the control socket. This package is flags, config,
// signals and exit codes around it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
	"time"
)

func main() {
	softMemoryLimit()
	ctx, cancel := context.WithCancelCause(context.Background())
	a := newApp(os.Stdout, os.Stderr)
	a.again = watchSignals(cancel)
	a.self = selfPath()
	os.Exit(a.main(ctx, os.Args[1:]))
}

// defaultMemoryLimit is the Go runtime's soft memory limit unless
// GOMEMLIMIT says otherwise. A daemon's live heap is small (decoded blobs
// live in the kernel's page cache and the git mounts' blob store), but a
// grep reads whole files, some large, on several workers at once: without
// a limit the heap then grows to twice its transient peak and keeps most
// of it, unused, for minutes (RSS after a grep over 13 000 files: 270 MB
// without, 120 MB with). A live heap over the limit costs more garbage
// collection, never a failure.
//
// The limit follows the live heap: twice it when that is more. A memory
// mount keeps its content on the heap, and a fixed limit below what must
// live would have the collector run without end (up to half the CPU).
const defaultMemoryLimit = 128 << 20

func softMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(defaultMemoryLimit)
	go func() {
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for range time.Tick(2 * time.Second) {
			metrics.Read(live)
			if live[0].Value.Kind() == metrics.KindUint64 {
				debug.SetMemoryLimit(memoryLimitFor(live[0].Value.Uint64()))
			}
		}
	}()
}

// memoryLimitFor is the soft memory limit for a live heap of live bytes.
func memoryLimitFor(live uint64) int64 {
	return max(defaultMemoryLimit, 2*int64(min(live, 1<<61)))
}

// watchSignals turns the first SIGINT or SIGTERM into the cancellation of
// the commands' context, with the signal as its cause, and passes later
// ones on the returned channel: a long-running command that is winding
// down gracefully (mount waiting out a busy unmount) hurries up on a second
// Ctrl-C.
// selfPath is the path of this program, "" when it cannot be told (git's
// fsmonitor hook is then not set, and git checks every file itself).
func selfPath() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return ""
	}
	return exe
}

func watchSignals(cancel context.CancelCauseFunc) <-chan os.Signal {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	again := make(chan os.Signal, 4)
	go func() {
		first := true
		for s := range sigs {
			if first {
				cancel(signalError{s})
				first = false
				continue
			}
			select {
			case again <- s:
			default:
			}
		}
	}()
	return again
}

// signalError is the cancellation cause of a signalled context.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return fmt.Sprintf("received %v", e.sig) }
