package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SSHD is a real OpenSSH server on 127.0.0.1 and a free port, with a
// host key and a user key the test made; it stops with the test.
type SSHD struct {
	Port int
	// Dir holds the keys, the config and the log.
	Dir string
	// UserKey is the private key accepted for root (and the test's user).
	UserKey string
	// KnownHosts is a known_hosts file that holds the server's key.
	KnownHosts string
	// HostKeyLine is the server's key as a known_hosts line.
	HostKeyLine string
	// Cache is the XDG_CACHE_HOME of its sessions (where a peer is
	// installed).
	Cache string
	cmd   *exec.Cmd
}

// needSSHD fails (VFSMOUNT_REQUIRE_FUSE=1: CI installs openssh-server) or
// skips when the server's programs are missing.
func needSSHD(tb testing.TB) string {
	tb.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	_, errK := exec.LookPath("ssh-keygen")
	if _, err := os.Stat(sshd); err != nil || errK != nil {
		if os.Getenv("VFSMOUNT_REQUIRE_FUSE") == "1" {
			tb.Fatalf("openssh-server (sshd, ssh-keygen) required with VFSMOUNT_REQUIRE_FUSE=1: %v %v", err, errK)
		}
		tb.Skip("openssh-server is not installed")
	}
	if os.Geteuid() != 0 {
		if os.Getenv("VFSMOUNT_REQUIRE_FUSE") == "1" {
			tb.Fatal("the ssh tests run sshd as root")
		}
		tb.Skip("the ssh tests run sshd as root")
	}
	return sshd
}

// Keygen makes an ed25519 key pair at path (and path.pub).
func Keygen(tb testing.TB, path string) {
	tb.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "vfsmount-test", "-f", path).CombinedOutput(); err != nil {
		tb.Fatalf("ssh-keygen: %v: %s", err, out)
	}
}

// StartSSHD starts the server. env (KEY=VALUE) is set in its sessions'
// environment.
func StartSSHD(tb testing.TB, env ...string) *SSHD {
	tb.Helper()
	sshd := needSSHD(tb)
	dir := tb.TempDir()
	s := &SSHD{Dir: dir, UserKey: filepath.Join(dir, "id_user"), KnownHosts: filepath.Join(dir, "known_hosts"),
		Cache: filepath.Join(dir, "cache")}
	Keygen(tb, filepath.Join(dir, "host_key"))
	Keygen(tb, s.UserKey)
	pub, err := os.ReadFile(s.UserKey + ".pub")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		tb.Fatal(err)
	}
	// The privilege separation directory sshd insists on.
	_ = os.MkdirAll("/run/sshd", 0o755)
	port := FreePort(tb)
	s.Port = port
	hostPub, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(hostPub))
	s.HostKeyLine = fmt.Sprintf("[127.0.0.1]:%d %s %s", port, f[0], f[1])
	if err := os.WriteFile(s.KnownHosts, []byte(s.HostKeyLine+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	// The remote user's HOME is a fresh directory: bash sources
	// ~/.bashrc for every ssh command, and a developer's (pyenv, nvm…)
	// can cost a second a session, which would be what is measured.
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		tb.Fatal(err)
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
SetEnv HOME=%s XDG_CACHE_HOME=%s %s
Subsystem sftp internal-sftp
LogLevel ERROR
MaxSessions 64
MaxStartups 64
`, port, filepath.Join(dir, "host_key"), filepath.Join(dir, "sshd.pid"), filepath.Join(dir, "authorized_keys"), home, s.Cache, strings.Join(env, " "))
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.start(tb, sshd, cfgPath)
	return s
}

func (s *SSHD) start(tb testing.TB, sshd, cfgPath string) {
	tb.Helper()
	log, err := os.OpenFile(filepath.Join(s.Dir, "sshd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	s.cmd = exec.Command(sshd, "-D", "-e", "-f", cfgPath)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	// Its own group: a kill takes the connections' processes too.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	log.Close()
	cmd := s.cmd
	tb.Cleanup(func() { stopGroup(cmd) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
			tb.Fatalf("sshd did not listen on %d: %v; log: %s", s.Port, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Restart kills the server (its sessions die with it) and starts it
// again on the same port and keys.
func (s *SSHD) Restart(tb testing.TB) {
	tb.Helper()
	stopGroup(s.cmd)
	s.start(tb, needSSHD(tb), filepath.Join(s.Dir, "sshd_config"))
}

// stopGroup kills a server and its process group, once.
func stopGroup(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// FreePort returns a TCP port free on 127.0.0.1 now.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
