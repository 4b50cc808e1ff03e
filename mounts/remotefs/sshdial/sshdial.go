// Package sshdial connects a remote mount to its peer over ssh
// (golang.org/x/crypto/ssh): the host key checked against known_hosts,
// keys from the identity file, ~/.ssh and the agent, and the peer binary
// installed on the remote side when it has none of this build, as VS Code
// Server and Mutagen do.
package sshdial

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Target is where a remote mount's directory is: ssh://[USER@]HOST[:PORT]/ABS/DIR.
type Target struct {
	User string
	Host string
	Port int
	Dir  string
}

// String is the target as a URL, for messages.
func (t Target) String() string {
	u := url.URL{Scheme: "ssh", Host: net.JoinHostPort(t.Host, strconv.Itoa(t.Port)), Path: t.Dir}
	if t.Port == 22 {
		u.Host = t.Host
	}
	if t.User != "" {
		u.User = url.User(t.User)
	}
	return u.String()
}

// Addr is host:port.
func (t Target) Addr() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

// ParseTarget reads an ssh:// URL. The path must be absolute and clean.
func ParseTarget(src string) (Target, error) {
	u, err := url.Parse(src)
	if err != nil {
		return Target{}, fmt.Errorf("not an ssh:// URL: %v", err)
	}
	if u.Scheme != "ssh" {
		return Target{}, fmt.Errorf("%q is not an ssh:// URL (ssh://[USER@]HOST[:PORT]/ABS/DIR)", src)
	}
	t := Target{Host: u.Hostname(), Port: 22, Dir: u.Path}
	if u.User != nil {
		t.User = u.User.Username()
		if _, has := u.User.Password(); has {
			return Target{}, fmt.Errorf("%q holds a password: use a key (identity=FILE) or the agent", src)
		}
	}
	if t.Host == "" {
		return Target{}, fmt.Errorf("%q names no host", src)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return Target{}, fmt.Errorf("%q: bad port %q", src, p)
		}
		t.Port = n
	}
	if t.Dir == "" || !strings.HasPrefix(t.Dir, "/") || filepath.Clean(t.Dir) != t.Dir {
		return Target{}, fmt.Errorf("%q: the remote directory must be an absolute, clean path", src)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Target{}, fmt.Errorf("%q: no query or fragment in an ssh:// URL", src)
	}
	return t, nil
}

// Config says how to reach and run the peer.
type Config struct {
	Target Target
	// Identity is a private key file; empty: ~/.ssh/id_ed25519,
	// id_ecdsa and id_rsa, those that exist, and the agent at
	// SSH_AUTH_SOCK.
	Identity string
	// KnownHosts is the known_hosts file; empty: ~/.ssh/known_hosts.
	KnownHosts string
	// AcceptNewHostKey accepts (and records) the key of a host the file
	// does not know. A key that differs from the recorded one is always
	// refused.
	AcceptNewHostKey bool
	// Install the peer: "auto" (default) uploads this binary into the
	// remote user's cache when it is not there; "never" runs the
	// remote's own `vfsmount`.
	Install string
	// Self is this program's binary (what is installed); empty:
	// os.Executable.
	Self string
	// Timeout bounds the connection's set-up.
	Timeout time.Duration
	// ReadOnly asks the peer to serve read-only.
	ReadOnly bool
	// PeerArgs are extra arguments for `vfsmount peer`.
	PeerArgs []string
}

// HostKeyError is a host key that known_hosts does not vouch for.
type HostKeyError struct {
	Host        string
	Fingerprint string
	// Changed is true when the file holds another key for the host.
	Changed bool
	File    string
}

func (e *HostKeyError) Error() string {
	if e.Changed {
		return fmt.Sprintf("the host key of %s has CHANGED (now %s); %s holds another: refused", e.Host, e.Fingerprint, e.File)
	}
	return fmt.Sprintf("the host key of %s (%s) is not in %s: refused (add it, or set accept_new_host_key)", e.Host, e.Fingerprint, e.File)
}

// Client is an ssh connection to the remote machine.
type Client struct {
	cfg   Config
	conn  net.Conn
	quick *quickAckConn // conn, when it is TCP
	ssh   *ssh.Client
	self  func() (path, sum string, err error) // the binary to install, hashed while the handshake runs
}

func home() string {
	h, _ := os.UserHomeDir()
	return h
}

// Connect opens an ssh connection, authenticated, with the host key
// checked; [Client.Peer] then runs the peer on it.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.KnownHosts == "" {
		cfg.KnownHosts = filepath.Join(home(), ".ssh", "known_hosts")
	}
	user := cfg.Target.User
	if user == "" {
		user = os.Getenv("USER")
		if user == "" {
			user = "root"
		}
	}
	self := selfHash(cfg)
	auths, err := authMethods(cfg)
	if err != nil {
		return nil, err
	}
	hostKey, err := hostKeyCallback(cfg)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: cfg.Timeout}
	conn, err := d.DialContext(ctx, "tcp", cfg.Target.Addr())
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(cfg.Timeout))
	var quick *quickAckConn
	if tc, ok := conn.(*net.TCPConn); ok {
		quick = newQuickAckConn(tc)
		conn = quick
	}
	sc, chans, reqs, err := ssh.NewClientConn(conn, cfg.Target.Addr(), &ssh.ClientConfig{
		User: user, Auth: auths, HostKeyCallback: hostKey, Timeout: cfg.Timeout,
	})
	if err != nil {
		conn.Close()
		var hk *HostKeyError
		if errors.As(err, &hk) {
			return nil, hk
		}
		return nil, err
	}
	return &Client{cfg: cfg, conn: conn, quick: quick, ssh: ssh.NewClient(sc, chans, reqs), self: self}, nil
}

// selfHash starts hashing the binary a peer would be installed from,
// which a new daemon does once (24 MB: tens of milliseconds), beside the
// handshake; the function it returns waits for the result.
func selfHash(cfg Config) func() (string, string, error) {
	if cfg.Install == "never" {
		return nil
	}
	var path, sum string
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if path = cfg.Self; path == "" {
			if path, err = os.Executable(); err != nil {
				return
			}
		}
		sum, err = hashOf(path)
	}()
	return func() (string, string, error) {
		<-done
		return path, sum, err
	}
}

// setUp ends what holds while the connection is set up: the bound on its
// time, and the quick acknowledgements.
func (c *Client) setUp() {
	_ = c.conn.SetDeadline(time.Time{})
	if c.quick != nil {
		c.quick.settled()
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.ssh.Close() }

func authMethods(cfg Config) ([]ssh.AuthMethod, error) {
	var signers []ssh.Signer
	files := []string{cfg.Identity}
	if cfg.Identity == "" {
		files = nil
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			p := filepath.Join(home(), ".ssh", n)
			if _, err := os.Stat(p); err == nil {
				files = append(files, p)
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("identity: %v", err)
		}
		s, err := ssh.ParsePrivateKey(b)
		if err != nil {
			var pp *ssh.PassphraseMissingError
			if errors.As(err, &pp) && cfg.Identity == "" {
				continue // the agent may hold it
			}
			return nil, fmt.Errorf("identity %s: %v", f, err)
		}
		signers = append(signers, s)
	}
	methods := []ssh.AuthMethod{}
	if len(signers) > 0 {
		methods = append(methods, ssh.PublicKeys(signers...))
	}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" && cfg.Identity == "" {
		if conn, err := net.Dial("unix", sock); err == nil {
			methods = append(methods, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
		}
	}
	if len(methods) == 0 {
		return nil, errors.New("no ssh key: give identity=FILE, put one in ~/.ssh, or start an agent")
	}
	return methods, nil
}

var knownHostsMu sync.Mutex

func hostKeyCallback(cfg Config) (ssh.HostKeyCallback, error) {
	file := cfg.KnownHosts
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		if !cfg.AcceptNewHostKey {
			return func(host string, _ net.Addr, key ssh.PublicKey) error {
				return &HostKeyError{Host: host, Fingerprint: ssh.FingerprintSHA256(key), File: file}
			}, nil
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			return nil, err
		}
	}
	check, err := knownhosts.New(file)
	if err != nil {
		return nil, fmt.Errorf("known_hosts %s: %v", file, err)
	}
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := check(host, remote, key)
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return err
		}
		hk := &HostKeyError{Host: host, Fingerprint: ssh.FingerprintSHA256(key), Changed: len(ke.Want) > 0, File: file}
		if hk.Changed || !cfg.AcceptNewHostKey {
			return hk
		}
		knownHostsMu.Lock()
		defer knownHostsMu.Unlock()
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, knownhosts.Line([]string{knownhosts.Normalize(host)}, key))
		return err
	}, nil
}

// run runs a command on the remote and returns its output.
func (c *Client) run(cmd string, stdin io.Reader) (string, error) {
	s, err := c.ssh.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	s.Stdin = stdin
	var out, errb strings.Builder
	s.Stdout, s.Stderr = &out, &errb
	if err := s.Run(cmd); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.String(), errors.New(msg)
	}
	return out.String(), nil
}

// hashes remembers the hash of a binary by path, size and time: every
// dial (each reconnection too) needs it, and hashing a 24 MB binary each
// time was most of a mount's set-up.
var hashes struct {
	sync.Mutex
	m map[string]hashed
}

type hashed struct {
	size  int64
	mtime time.Time
	sum   string
}

// hashOf returns the hex SHA-256 of the file at path.
func hashOf(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	hashes.Lock()
	h, ok := hashes.m[path]
	hashes.Unlock()
	if ok && h.size == st.Size() && h.mtime.Equal(st.ModTime()) {
		return h.sum, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return "", err
	}
	h = hashed{size: st.Size(), mtime: st.ModTime(), sum: hex.EncodeToString(d.Sum(nil))}
	hashes.Lock()
	if hashes.m == nil {
		hashes.m = map[string]hashed{}
	}
	hashes.m[path] = h
	hashes.Unlock()
	return h.sum, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// goArch maps `uname -m` to GOARCH.
var goArch = map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386", "armv7l": "arm"}

// missing is what the start script prints, instead of the peer's hello,
// when this build's peer is not in the remote cache: then the remote's
// system (uname -sm). A hello starts with 'v', never '!'.
const missing = "!missing"

// Peer starts `vfsmount peer DIR` on the remote and returns its stdio as
// one stream that begins with first (the daemon's hello and first
// request: sent as soon as the server takes input, not after the peer has
// answered). Closing the stream ends the peer (its stdin closes).
//
// With Install "auto" the peer is this build's binary, in the remote
// user's cache by its SHA-256. One session both looks for it and, when it
// is there, runs it: no round trip is spent asking first. When it is not,
// the remote's system is checked, the binary is installed, and the peer
// started again (and sent first again). With Install "never" the
// remote's own vfsmount runs.
//
// The set-up is bounded (an upload included, longer), so that a link
// that stalls now does not hang the dial; the bound ends when the peer
// has said its first byte.
func (c *Client) Peer(first []byte) (io.ReadWriteCloser, error) {
	_ = c.conn.SetDeadline(time.Now().Add(max(6*c.cfg.Timeout, time.Minute)))
	args := ""
	if c.cfg.ReadOnly {
		args += " --ro"
	}
	for _, a := range c.cfg.PeerArgs {
		args += " " + shellQuote(a)
	}
	args += " " + shellQuote(c.cfg.Target.Dir)
	if c.cfg.Install == "never" {
		return c.startPeer("exec vfsmount peer"+args, first)
	}
	self, sum, err := c.self()
	if err != nil {
		return nil, err
	}
	dir := `"${XDG_CACHE_HOME:-$HOME/.cache}/vfsmount/peer/` + sum + `"`
	path := dir + `/vfsmount`
	start := `if test -x ` + path + `; then exec ` + path + ` peer` + args + `; fi; echo ` + missing + `; uname -sm`
	st, err := c.startPeer(start, first)
	if err == nil || !errors.Is(err, errMissing) {
		return st, err
	}
	if err := c.install(self, sum, dir, err.(*missingError).system); err != nil {
		return nil, err
	}
	st, err = c.startPeer(start, first)
	if errors.Is(err, errMissing) {
		return nil, &PeerUnavailableError{Reason: "the peer was installed in the remote cache but cannot run from there (mounted noexec?)"}
	}
	return st, err
}

// PeerUnavailableError says the peer cannot run on the remote machine:
// another system or architecture, an install that failed (a noexec
// cache, no write access), or no vfsmount there with install=never. A
// mount may then fall back to SFTP.
type PeerUnavailableError struct{ Reason string }

func (e *PeerUnavailableError) Error() string { return e.Reason }

// SSH hands the connection over for other channels on it (SFTP, exec):
// the bound on its set-up is lifted.
func (c *Client) SSH() *ssh.Client {
	c.setUp()
	return c.ssh
}

var errMissing = errors.New("the peer is not installed")

type missingError struct{ system string }

func (e *missingError) Error() string     { return errMissing.Error() }
func (e *missingError) Is(err error) bool { return err == errMissing }

// startPeer runs cmd in a new session, sends first on its stdin and
// waits for its first byte: the peer's hello, or the missing mark of the
// start script.
//
// The session is a channel of its own rather than an ssh.Session, whose
// Start waits for the server's answer to the exec request: asked without
// an answer, first follows the command as soon as the server takes input
// (OpenSSH opens a session's window once its command runs: a round trip
// after the exec, which the peer spends placing its watches), and a
// command the server would not run shows as the session's end.
func (c *Client) startPeer(cmd string, first []byte) (io.ReadWriteCloser, error) {
	ch, reqs, err := c.ssh.OpenChannel("session", nil)
	if err != nil {
		return nil, err
	}
	s := &stream{ch: ch, errb: &limited{w: &strings.Builder{}, n: 4096}, ended: make(chan struct{}), status: -1}
	stderr := make(chan struct{})
	go func() {
		defer close(stderr)
		_, _ = io.Copy(s.errb, ch.Stderr())
	}()
	go func() {
		defer close(s.ended)
		for req := range reqs {
			if req.Type == "exit-status" && len(req.Payload) >= 4 {
				s.status = int(binary.BigEndian.Uint32(req.Payload))
			}
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
		<-stderr
	}()
	if _, err := ch.SendRequest("exec", false, ssh.Marshal(struct{ Command string }{cmd})); err != nil {
		ch.Close()
		return nil, err
	}
	// A command that ends at once (the start script's missing mark, a
	// shell that finds no vfsmount) may have closed the session before
	// first is written: what it said and its status, read below, are
	// the answer, not the write that failed.
	_, _ = ch.Write(first)
	s.r = bufio.NewReader(ch)
	b, err := s.r.Peek(1)
	if err != nil {
		status := s.wait()
		ch.Close()
		if status == 127 || status == 126 {
			// The shell found no vfsmount to run, or could not run it.
			return nil, &PeerUnavailableError{Reason: "no vfsmount the remote can run: " + strings.TrimSpace(s.errb.String())}
		}
		if msg := strings.TrimSpace(s.errb.String()); msg != "" {
			return nil, fmt.Errorf("the peer did not start: %s", msg)
		}
		if status >= 0 {
			return nil, fmt.Errorf("the peer did not start: it exited with status %d", status)
		}
		return nil, fmt.Errorf("the peer did not start: the server ended the session (%v)", err)
	}
	if b[0] == missing[0] {
		rest, _ := io.ReadAll(s.r)
		s.wait()
		ch.Close()
		lines := strings.Split(strings.TrimSpace(string(rest)), "\n")
		return nil, &missingError{system: lines[len(lines)-1]}
	}
	c.setUp()
	return s, nil
}

// install uploads self into dir on the remote, after checking that the
// remote's system (uname -sm) can run it.
func (c *Client) install(self, sum, dir, system string) error {
	f := strings.Fields(system)
	if len(f) != 2 || f[0] != "Linux" || goArch[f[1]] != runtime.GOARCH {
		return &PeerUnavailableError{Reason: fmt.Sprintf("the remote is %q, this vfsmount is linux/%s: install a vfsmount for it and set install=never", system, runtime.GOARCH)}
	}
	bin, err := os.Open(self)
	if err != nil {
		return err
	}
	defer bin.Close()
	// Content-addressed, verified, and never over another file: the
	// upload goes to a new temporary name, is checked against the hash,
	// and takes the final name by link(2), which fails if it exists.
	script := `set -e; umask 077; d=` + dir + `; mkdir -p "$d"; t=$(mktemp "$d/.upload.XXXXXX"); trap 'rm -f "$t"' EXIT; ` +
		`cat > "$t"; h=$(sha256sum "$t" | cut -d" " -f1); ` +
		`if [ "$h" != ` + sum + ` ]; then echo "the uploaded peer's hash is $h, not ` + sum + `" >&2; exit 3; fi; ` +
		`chmod 700 "$t"; ln "$t" "$d/vfsmount" 2>/dev/null || test -x "$d/vfsmount"; "$d/vfsmount" version >/dev/null`
	if _, err := c.run("sh -c "+shellQuote(script), bin); err != nil {
		return &PeerUnavailableError{Reason: fmt.Sprintf("cannot install the peer in the remote cache: %v", err)}
	}
	return nil
}

// stream is the peer's stdio on its session channel.
type stream struct {
	ch     ssh.Channel
	r      *bufio.Reader
	errb   *limited
	ended  chan struct{} // closed once the channel closed and stderr was read
	status int           // the exit status, -1 if none came; read after ended
	once   sync.Once
}

// wait waits for the session's end and returns its exit status.
func (s *stream) wait() int {
	<-s.ended
	return s.status
}

func (s *stream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		// Say why the peer ended, if it said.
		s.wait()
		if msg := strings.TrimSpace(s.errb.String()); msg != "" {
			return n, fmt.Errorf("the peer ended: %s", msg)
		}
	}
	return n, err
}

func (s *stream) Write(p []byte) (int, error) { return s.ch.Write(p) }

func (s *stream) Close() error {
	s.once.Do(func() {
		_ = s.ch.CloseWrite()
		s.ch.Close()
	})
	return nil
}

// String is what was kept.
func (l *limited) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// limited keeps the first n bytes written.
type limited struct {
	mu sync.Mutex
	w  *strings.Builder
	n  int
}

func (l *limited) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
