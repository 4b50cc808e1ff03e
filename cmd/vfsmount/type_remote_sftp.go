package main

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/sftpfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/sshdial"
)

// Remote mount modes (the key mode): how the files are served.
const (
	modeAuto = "auto" // the peer; SFTP where it cannot run
	modePeer = "peer" // the peer, or nothing
	modeSFTP = "sftp" // the ssh server's SFTP subsystem and ssh exec
)

// peerUnavailable reports why the peer cannot run on the remote machine,
// when that is what err says (so that mode auto falls back to SFTP).
func peerUnavailable(err error) (string, bool) {
	var pu *sshdial.PeerUnavailableError
	if !errors.As(err, &pu) {
		return "", false
	}
	why := pu.Reason
	if len(why) > 200 {
		why = why[:200] + "…"
	}
	return why, true
}

// openSFTP mounts the remote directory over the ssh server's SFTP
// subsystem, with the shell over ssh exec: where no peer can run (why
// says so; "" when mode=sftp asked for it).
func openSFTP(ctx context.Context, spec *mountSpec, env *buildEnv, cfg sshdial.Config, why string) (mounts.FS, error) {
	source := "ssh://" + cfg.Target.Host + " over SFTP"
	if why == "" {
		why = "mode=sftp"
	} else {
		why = "no peer: " + why
	}
	dial := func(ctx context.Context) (*ssh.Client, error) {
		c, err := sshdial.Connect(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return c.SSH(), nil
	}
	fsys, err := sftpfs.Open(ctx, sftpfs.Options{Dial: dial, Dir: cfg.Target.Dir, Source: source, Why: why,
		ReadOnly: cfg.ReadOnly, Timeout: cfg.Timeout / 2, Logger: env.Logger})
	if err != nil {
		var hk *sshdial.HostKeyError
		if errors.As(err, &hk) {
			return nil, specErrorf(spec.Origin, "%v", err)
		}
		return nil, fmt.Errorf("%s: cannot reach %s: %w", spec.Origin, source, err)
	}
	env.OnClose(fsys.(interface{ Close() error }).Close)
	env.Logger.Info("remote mount connected", "source", source, "mode", modeSFTP, "reason", why)
	return fsys, nil
}
