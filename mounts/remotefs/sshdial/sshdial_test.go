package sshdial

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// session is what the test server does with a session channel whose exec
// request asked for command.
type session func(t *testing.T, ch ssh.Channel, command string)

// exitStatus sends the exit status of a command, as sshd does before it
// closes the session.
func exitStatus(ch ssh.Channel, status uint32) {
	_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
}

// serve runs an ssh server on 127.0.0.1 that accepts the client's key and
// answers each session with do, and returns a client connected to it,
// with install=never (the remote's own vfsmount is run).
func serve(t *testing.T, do session) *Client {
	t.Helper()
	dir := t.TempDir()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	hostKey, err := ssh.NewSignerFromKey(hostPriv)
	require.NoError(t, err)
	clientPub, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	require.NoError(t, err)
	identity := filepath.Join(dir, "id")
	require.NoError(t, os.WriteFile(identity, pem.EncodeToMemory(block), 0o600))
	authorized, err := ssh.NewPublicKey(clientPub)
	require.NoError(t, err)

	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if string(key.Marshal()) == string(authorized.Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(hostKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_, chans, reqs, err := ssh.NewServerConn(c, cfg)
				if err != nil {
					c.Close()
					return
				}
				go ssh.DiscardRequests(reqs)
				for nc := range chans {
					if nc.ChannelType() != "session" {
						_ = nc.Reject(ssh.UnknownChannelType, "sessions only")
						continue
					}
					ch, chReqs, err := nc.Accept()
					if err != nil {
						continue
					}
					go func() {
						for req := range chReqs {
							if req.Type != "exec" {
								_ = req.Reply(false, nil)
								continue
							}
							var exec struct{ Command string }
							_ = ssh.Unmarshal(req.Payload, &exec)
							if req.WantReply {
								_ = req.Reply(true, nil)
							}
							go func() {
								do(t, ch, exec.Command)
								ch.Close()
							}()
						}
					}()
				}
			}()
		}
	}()

	port := l.Addr().(*net.TCPAddr).Port
	known := filepath.Join(dir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(fmt.Sprintf("127.0.0.1:%d", port))}, hostKey.PublicKey())
	require.NoError(t, os.WriteFile(known, []byte(line+"\n"), 0o600))
	c, err := Connect(context.Background(), Config{
		Target:     Target{Host: "127.0.0.1", Port: port, User: "u", Dir: "/w"},
		Identity:   identity,
		KnownHosts: known,
		Install:    "never",
		Timeout:    10 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// The peer's command and the daemon's first bytes go in one flight, and
// what the peer says comes back on the stream.
func TestPeerStarts(t *testing.T) {
	got := make(chan string, 1)
	c := serve(t, func(t *testing.T, ch ssh.Channel, command string) {
		got <- command
		_, _ = io.WriteString(ch, "hello\n")
		_, _ = io.Copy(ch, io.LimitReader(ch, int64(len("first bytes")))) // echo what the daemon sent
		exitStatus(ch, 0)
	})
	st, err := c.Peer([]byte("first bytes"))
	require.NoError(t, err)
	defer st.Close()
	b, err := io.ReadAll(st)
	require.NoError(t, err)
	assert.Equal(t, "hello\nfirst bytes", string(b))
	assert.Equal(t, "exec vfsmount peer '/w'", <-got)
}

// A peer that does not start says why, from what the server sent: the
// shell's message and status, a status alone, or a session that ended
// with neither.
func TestPeerDoesNotStart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		do          session
		unavailable bool
		want        string
	}{
		{"no vfsmount there", func(_ *testing.T, ch ssh.Channel, _ string) {
			_, _ = io.WriteString(ch.Stderr(), "sh: 1: exec: vfsmount: not found\n")
			exitStatus(ch, 127)
		}, true, "no vfsmount the remote can run: sh: 1: exec: vfsmount: not found"},
		{"cannot run it", func(_ *testing.T, ch ssh.Channel, _ string) {
			exitStatus(ch, 126)
		}, true, "no vfsmount the remote can run"},
		{"says why", func(_ *testing.T, ch ssh.Channel, _ string) {
			_, _ = io.WriteString(ch.Stderr(), "vfsmount: /w: no such directory\n")
			exitStatus(ch, 2)
		}, false, "the peer did not start: vfsmount: /w: no such directory"},
		{"a status alone", func(_ *testing.T, ch ssh.Channel, _ string) {
			exitStatus(ch, 3)
		}, false, "the peer did not start: it exited with status 3"},
		{"the server ends the session", func(*testing.T, ssh.Channel, string) {}, false,
			"the peer did not start: the server ended the session (EOF)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := serve(t, tc.do)
			st, err := c.Peer([]byte("first bytes"))
			require.Error(t, err)
			assert.Nil(t, st)
			var pu *PeerUnavailableError
			assert.Equal(t, tc.unavailable, errors.As(err, &pu), "%v", err)
			if tc.unavailable {
				assert.True(t, strings.HasPrefix(err.Error(), tc.want), "%q", err)
			} else {
				assert.Equal(t, tc.want, err.Error())
			}
		})
	}
}
