package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/sshdial"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// remoteType is a directory on another machine, served by a peer there
// (`vfsmount peer DIR`) over ssh or any command that gives a byte stream.
func remoteType() mountType {
	return mountType{
		Name:    "remote",
		Doc:     "a directory on another machine (ssh://[USER@]HOST[:PORT]/ABS/DIR, or a command: in the config), its files and shell served there",
		Example: "type=remote,src=ssh://dev@build-box/srv/work,dst=/workspace",
		Keys: map[string]keySpec{
			"src":                 {Kind: kindString, Doc: "ssh://[USER@]HOST[:PORT]/ABS/DIR"},
			"command":             {Kind: kindArgv, Doc: "in a config file: the argv of a channel to `vfsmount peer DIR` on the remote side (kubectl exec -i …)"},
			"ro":                  {Kind: kindBool, Doc: "read-only: no write capability at all (EROFS)"},
			"identity":            {Kind: kindPath, Doc: "ssh private key (default: ~/.ssh/id_ed25519, id_ecdsa, id_rsa and the agent)"},
			"known_hosts":         {Kind: kindPath, Doc: "known_hosts file (default ~/.ssh/known_hosts)"},
			"accept_new_host_key": {Kind: kindBool, Doc: "accept and record the key of a host known_hosts does not know (a changed key is always refused)"},
			"install":             {Kind: kindString, Doc: "auto (default): install this binary as the peer in the remote user's cache when missing; never: run the remote's vfsmount"},
			"timeout":             {Kind: kindString, Doc: "how long an operation waits for a link that is down before EIO (default 5s)"},
			"mode":                {Kind: kindString, Doc: "auto (default): a peer on the remote side, or its ssh server's SFTP and exec where no peer can run there; peer: a peer or nothing; sftp: SFTP and exec only"},
		},
		Check: checkRemote,
		Build: buildRemote,
	}
}

func checkRemote(spec *mountSpec) error {
	hasSrc, hasCmd := spec.Has("src"), spec.Has("command")
	switch {
	case hasSrc == hasCmd:
		return specErrorf(spec.Origin, "give exactly one of src (ssh://…) and command")
	case hasSrc:
		if _, err := sshdial.ParseTarget(spec.String("src")); err != nil {
			return specErrorf(spec.Origin, "src: %v", err)
		}
	default:
		for _, k := range []string{"identity", "known_hosts", "accept_new_host_key", "install"} {
			if spec.Has(k) {
				return specErrorf(spec.Origin, "%s applies to ssh (src) only, not to a command", k)
			}
		}
	}
	switch spec.String("install") {
	case "", "auto", "never":
	default:
		return specErrorf(spec.Origin, "install: want auto or never, got %q", spec.String("install"))
	}
	switch spec.String("mode") {
	case "", modeAuto, modePeer:
	case modeSFTP:
		if hasCmd {
			return specErrorf(spec.Origin, "mode=sftp applies to ssh (src) only, not to a command")
		}
	default:
		return specErrorf(spec.Origin, "mode: want auto, peer or sftp, got %q", spec.String("mode"))
	}
	if t := spec.String("timeout"); t != "" {
		if d, err := time.ParseDuration(t); err != nil || d <= 0 {
			return specErrorf(spec.Origin, "timeout: want a duration such as 5s, got %q", t)
		}
	}
	return nil
}

func buildRemote(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
	timeout := 5 * time.Second
	if t := spec.String("timeout"); t != "" {
		timeout, _ = time.ParseDuration(t)
	}
	opts := remotefs.Options{ReadOnly: spec.Bool("ro"), Timeout: timeout, Build: version, Logger: env.Logger}
	if argv := spec.Strings("command"); argv != nil {
		opts.Source = "command:" + argv[0]
		opts.Dial = commandDialer(argv)
	} else {
		target, _ := sshdial.ParseTarget(spec.String("src"))
		opts.Source = "ssh://" + target.Host
		d := &sshDialer{log: env.Logger, cfg: sshdial.Config{Target: target, Identity: spec.String("identity"),
			KnownHosts: spec.String("known_hosts"), AcceptNewHostKey: spec.Bool("accept_new_host_key"),
			Install: spec.String("install"), Self: env.Self, Timeout: 2 * timeout, ReadOnly: spec.Bool("ro")}}
		opts.Dial = d.dial
		env.OnClose(d.close)
		if spec.String("mode") == modeSFTP {
			return openSFTP(ctx, spec, env, d.cfg, "")
		}
	}
	fsys, err := remotefs.Open(ctx, opts)
	if why, ok := peerUnavailable(err); ok && spec.String("mode") != modePeer && !spec.Has("command") {
		env.Logger.Warn("remote: the peer cannot run there; serving over SFTP", "source", opts.Source, "reason", why)
		target, _ := sshdial.ParseTarget(spec.String("src"))
		return openSFTP(ctx, spec, env, sshdial.Config{Target: target, Identity: spec.String("identity"),
			KnownHosts: spec.String("known_hosts"), AcceptNewHostKey: spec.Bool("accept_new_host_key"),
			Timeout: 2 * timeout, ReadOnly: spec.Bool("ro")}, why)
	}
	if err != nil {
		var hk *sshdial.HostKeyError
		var ver *wire.ErrVersion
		switch {
		case errors.As(err, &hk):
			return nil, specErrorf(spec.Origin, "%v", err)
		case errors.As(err, &ver):
			return nil, specErrorf(spec.Origin, "the peer is not a vfsmount peer of this protocol: %v", err)
		}
		return nil, fmt.Errorf("%s: cannot reach %s: %w", spec.Origin, opts.Source, err)
	}
	env.OnClose(fsys.(interface{ Close() error }).Close)
	env.Logger.Info("remote mount connected", "source", opts.Source, "mode", "peer")
	return fsys, nil
}

// sshDialer makes one ssh connection per dial and runs the peer on it;
// closing the stream closes the connection. A link declared lost may be
// stalled rather than closed, and nothing more should wait on it (a new
// session on a stalled connection never answers).
type sshDialer struct {
	cfg sshdial.Config
	log *slog.Logger
	mu  sync.Mutex
	c   *sshdial.Client
}

func (d *sshDialer) dial(ctx context.Context, first []byte) (io.ReadWriteCloser, error) {
	cfg := d.cfg
	sock := sshdial.BackSocket()
	cfg.PeerArgs = append(slices.Clip(cfg.PeerArgs), "--back", sock)
	t0 := time.Now()
	c, err := sshdial.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.log.Debug("remote: ssh connected", "source", cfg.Target.String(), "took", time.Since(t0))
	rwc, err := c.Peer(first)
	if err != nil {
		c.Close()
		return nil, err
	}
	d.log.Debug("remote: peer started", "source", cfg.Target.String(), "took", time.Since(t0))
	// The rest of the workspace, for the peer's commands, comes back
	// over this connection; a server that forbids it leaves /workspace.
	// Asked for now (the peer has made the socket's directory before its
	// hello), answered while the session starts.
	s := &closeBoth{ReadWriteCloser: rwc, c: c, backSet: make(chan struct{})}
	go func() {
		defer close(s.backSet)
		l, err := c.ListenBack(sock)
		if err != nil {
			d.log.Info("remote: the server forwards no Unix socket: commands there see /workspace only", "err", err)
			return
		}
		d.log.Debug("remote: back link listening", "source", cfg.Target.String(), "took", time.Since(t0))
		s.back = l
	}()
	d.mu.Lock()
	d.c = c
	d.mu.Unlock()
	return s, nil
}

func (d *sshDialer) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.c != nil {
		d.c.Close()
		d.c = nil
	}
	return nil
}

// closeBoth closes the peer's stream and its ssh connection.
type closeBoth struct {
	io.ReadWriteCloser
	c       *sshdial.Client
	backSet chan struct{} // closed once back is known
	back    net.Listener  // nil: none
}

// BackListener implements remotefs.BackLink: it waits for the server's
// answer to the forwarding request.
func (s *closeBoth) BackListener() net.Listener {
	<-s.backSet
	return s.back
}

func (s *closeBoth) Close() error {
	err := s.c.Close() // first: the connection may be stalled
	s.ReadWriteCloser.Close()
	return err
}

// commandDialer runs argv for each connection; its stdio is the stream.
func commandDialer(argv []string) remotefs.Dialer {
	return remotefs.StreamDialer(func(ctx context.Context) (io.ReadWriteCloser, error) {
		// Pipes of our own, not StdoutPipe: Wait must not close the
		// read side under a reader that has not read all yet.
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			return nil, err
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		var stderr tailBuffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
		err = cmd.Start()
		inR.Close()
		outW.Close()
		if err != nil {
			inW.Close()
			outR.Close()
			return nil, err
		}
		s := &cmdStream{cmd: cmd, r: outR, w: inW, stderr: &stderr, exited: make(chan struct{})}
		go func() {
			_ = cmd.Wait()
			close(s.exited)
		}()
		return s, nil
	})
}

// cmdStream is a command's stdio as one stream.
type cmdStream struct {
	cmd    *exec.Cmd
	r, w   *os.File
	stderr *tailBuffer
	exited chan struct{}
	once   sync.Once
}

func (s *cmdStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		select {
		case <-s.exited:
		case <-time.After(time.Second):
		}
		if msg := s.stderr.String(); msg != "" {
			return n, fmt.Errorf("%s ended: %s", s.cmd.Args[0], msg)
		}
		return n, fmt.Errorf("%s ended", s.cmd.Args[0])
	}
	return n, err
}

func (s *cmdStream) Write(p []byte) (int, error) { return s.w.Write(p) }

func (s *cmdStream) Close() error {
	s.once.Do(func() {
		s.w.Close()
		s.r.Close()
		go func() {
			// The peer ends at the end of its input; one that does not
			// is killed.
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				_ = s.cmd.Process.Kill()
			}
		}()
	})
	return nil
}

// tailBuffer keeps the last 2 KiB a command wrote, for messages.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(trimSpace(t.b))
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
