package store

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vfsmount/vfsmount/internal/testutil"
)

const testBucket = "vfsm"

// openTest starts versitygw with bucket testBucket and opens s3://b/PREFIX on it.
func openTest(t *testing.T, prefix string) (*Store, *testutil.S3Server) {
	t.Helper()
	srv := testutil.StartS3(t, testBucket)
	return openOn(t, srv, prefix), srv
}

func openOn(t *testing.T, srv *testutil.S3Server, prefix string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{URL: "s3://" + testBucket + "/" + prefix, Endpoint: srv.Endpoint, MaxAttempts: 3, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatalf("open: %v\n%s", err, srv.Log.String())
	}
	return s
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct{ in, bucket, prefix string }{
		{"s3://b", "b", ""}, {"s3://b/", "b", ""}, {"s3://b/p/q/", "b", "p/q"},
	} {
		b, p, err := ParseURL(tc.in)
		if err != nil || b != tc.bucket || p != tc.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q", tc.in, b, p, err, tc.bucket, tc.prefix)
		}
	}
	for _, bad := range []string{"gs://b/p", "b/p", "s3:///p", "s3://b/p?x=1", "http://b"} {
		if _, _, err := ParseURL(bad); !errors.Is(err, ErrBadURL) || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseURL(%q) = %v; want ErrBadURL naming it", bad, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	srv := testutil.StartS3(t, testBucket)
	ctx := context.Background()
	_, err := Open(ctx, Config{URL: "s3://nobucket/p", Endpoint: srv.Endpoint, MaxAttempts: 1})
	if !errors.Is(err, ErrNoBucket) || !strings.Contains(err.Error(), "s3://nobucket/p") {
		t.Errorf("missing bucket: %v; want ErrNoBucket naming the store", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	_, err = Open(ctx, Config{URL: "s3://vfsm/p", Endpoint: srv.Endpoint, MaxAttempts: 1})
	if !errors.Is(err, ErrCredentials) {
		t.Errorf("bad credentials: %v; want ErrCredentials", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.Secret)
	_, err = Open(ctx, Config{URL: "s3://vfsm/p", Endpoint: "http://127.0.0.1:1", MaxAttempts: 1})
	if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrCredentials) {
		t.Errorf("unreachable: %v; want ErrUnreachable", err)
	}
	if _, err := Open(ctx, Config{URL: "file:///x"}); !errors.Is(err, ErrBadURL) {
		t.Errorf("unknown scheme: %v; want ErrBadURL", err)
	}
}

// TestConditionalWrites checks that the server honours If-None-Match: *
// and If-Match on PutObject, which the whole design rests on.
func TestConditionalWrites(t *testing.T) {
	s, _ := openTest(t, "p")
	ctx := context.Background()
	k := s.key("x")
	e1, err := s.put(ctx, k, []byte("one"), cond{ifNoneMatch: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.put(ctx, k, []byte("two"), cond{ifNoneMatch: true}); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: %v; want ErrConflict", err)
	}
	e2, err := s.put(ctx, k, []byte("two"), cond{ifMatch: e1})
	if err != nil {
		t.Fatalf("swap with the right ETag: %v", err)
	}
	if _, err := s.put(ctx, k, []byte("three"), cond{ifMatch: e1}); !errors.Is(err, ErrConflict) {
		t.Fatalf("swap with a stale ETag: %v; want ErrConflict", err)
	}
	o, err := s.get(ctx, k)
	if err != nil || string(o.data) != "two" || o.etag != e2 {
		t.Fatalf("get = %q %q %v; want two %q", o.data, o.etag, err, e2)
	}
	if _, err := s.put(ctx, s.key("absent"), []byte("x"), cond{ifMatch: e2}); !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
		t.Fatalf("swap of an absent key: %v; want a refusal", err)
	}
	if ok, _, _ := s.exists(ctx, s.key("absent")); ok {
		t.Fatal("a refused swap created the key")
	}
}

// TestCorruptChunk: a chunk altered in the bucket is refused at read, by
// its hash, naming it; never its wrong bytes.
func TestCorruptChunk(t *testing.T) {
	s, srv := openTest(t, "p")
	s.cache = nil
	ctx := context.Background()
	data := []byte("the right bytes")
	h := sum(data)
	if n, err := s.putChunk(ctx, h, data); err != nil || n != int64(len(data)) {
		t.Fatalf("putChunk = %d, %v", n, err)
	}
	if n, err := s.putChunk(ctx, h, data); err != nil || n != 0 {
		t.Fatalf("second putChunk = %d, %v; want 0 sent", n, err)
	}
	got, err := s.getChunk(ctx, h)
	if err != nil || string(got) != string(data) {
		t.Fatalf("getChunk = %q, %v", got, err)
	}
	if err := os.WriteFile(srv.ObjectPath(testBucket, "p/chunks/"+h), []byte("the wrong bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = s.getChunk(ctx, h)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "p/chunks/"+h) || got != nil {
		t.Fatalf("corrupt chunk: %q, %v; want ErrCorrupt naming the chunk, no bytes", got, err)
	}
}

func TestParseWorkspaceURL(t *testing.T) {
	for _, tc := range []struct{ in, store, name, ckpt string }{
		{"s3://b/ws", "s3://b", "ws", ""},
		{"s3://b/p/q/ws@3", "s3://b/p/q", "ws", "3"},
		{"s3://b/p/ws@c7", "s3://b/p", "ws", "c7"},
	} {
		s, n, c, err := ParseWorkspaceURL(tc.in)
		if err != nil || s != tc.store || n != tc.name || c != tc.ckpt {
			t.Errorf("ParseWorkspaceURL(%q) = %q %q %q %v; want %q %q %q", tc.in, s, n, c, err, tc.store, tc.name, tc.ckpt)
		}
	}
	for _, bad := range []string{"s3://b", "s3://b/", "s3://b/p/bad name", "gs://b/ws"} {
		if _, _, _, err := ParseWorkspaceURL(bad); !errors.Is(err, ErrBadURL) {
			t.Errorf("ParseWorkspaceURL(%q) = %v; want ErrBadURL", bad, err)
		}
	}
}

// TestEndpointFromEnvironment: AWS_ENDPOINT_URL names the server (path
// style) when the config does not.
func TestEndpointFromEnvironment(t *testing.T) {
	srv := testutil.StartS3(t, testBucket)
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	if _, err := Open(context.Background(), Config{URL: "s3://" + testBucket + "/p", MaxAttempts: 1}); err != nil {
		t.Fatalf("open with AWS_ENDPOINT_URL: %v", err)
	}
}
