package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Server is a real S3 server (versitygw over its POSIX backend) on
// 127.0.0.1 and a free port, serving a directory of the test's; it stops
// with the test, and can be stopped and started again (a fault test).
type S3Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// Dir is the backend's top directory: each subdirectory a bucket,
	// each file below it an object (a test may alter one there).
	Dir string
	// Access and Secret are the root account's credentials.
	Access, Secret string
	// Log is the server's output.
	Log  *Buffer
	bin  string
	addr string
	cmd  *exec.Cmd
	tb   testing.TB
}

// needVersitygw finds versitygw: on PATH or in ~/go/bin. Missing, it
// fails the test with VFSMOUNT_REQUIRE_FUSE=1 (CI go-installs it) and
// skips it otherwise.
func needVersitygw(tb testing.TB) string {
	tb.Helper()
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, "go", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("VFSMOUNT_REQUIRE_FUSE") == "1" {
		tb.Fatal("versitygw is required with VFSMOUNT_REQUIRE_FUSE=1 (go install github.com/versity/versitygw/cmd/versitygw@latest)")
	}
	tb.Skip("versitygw is not installed (go install github.com/versity/versitygw/cmd/versitygw@latest)")
	return ""
}

// StartS3 starts versitygw with buckets made (empty directories of its
// backend), and sets the test's AWS_* environment to its credentials.
func StartS3(tb testing.TB, buckets ...string) *S3Server {
	tb.Helper()
	bin := needVersitygw(tb)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &S3Server{Endpoint: "http://" + addr, Dir: tb.TempDir(), Access: "vfsmounttest", Secret: "vfsmounttestsecret",
		Log: &Buffer{}, bin: bin, addr: addr, tb: tb}
	tb.Setenv("AWS_ACCESS_KEY_ID", s.Access)
	tb.Setenv("AWS_SECRET_ACCESS_KEY", s.Secret)
	tb.Setenv("AWS_REGION", "us-east-1")
	tb.Setenv("AWS_CONFIG_FILE", filepath.Join(s.Dir, "no-aws-config"))
	tb.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(s.Dir, "no-aws-credentials"))
	tb.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s.Start()
	tb.Cleanup(s.Stop)
	for _, b := range buckets {
		s.CreateBucket(b)
	}
	return s
}

// CreateBucket makes bucket through the S3 API (the backend keeps a
// bucket's owner and ACL beside its directory).
func (s *S3Server) CreateBucket(bucket string) {
	s.tb.Helper()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(s.Access, s.Secret, "")}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
	})
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		s.tb.Fatalf("create bucket %s: %v\n%s", bucket, err, s.Log.String())
	}
}

// Start starts the server (again) and waits until it answers.
func (s *S3Server) Start() {
	s.tb.Helper()
	cmd := exec.Command(s.bin, "--access", s.Access, "--secret", s.Secret, "--port", s.addr, "posix", s.Dir)
	cmd.Stdout, cmd.Stderr = s.Log, s.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("versitygw: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.tb.Fatalf("versitygw did not listen on %s: %v\n%s", s.addr, err, s.Log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL: a crash, not a shutdown) and waits for
// it. It may be called more than once.
func (s *S3Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// ObjectPath is the backend file of an object.
func (s *S3Server) ObjectPath(bucket, key string) string {
	return filepath.Join(s.Dir, bucket, filepath.FromSlash(key))
}

// String describes the server for a test's log.
func (s *S3Server) String() string { return fmt.Sprintf("versitygw at %s over %s", s.Endpoint, s.Dir) }
