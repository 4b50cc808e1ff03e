// Package store keeps workspace checkpoints in S3-compatible object storage,
// so that a workspace's state can leave the node it runs on: resumed on
// another machine, forked into many, kept while nothing runs.
//
// # Layout
//
// Under s3://BUCKET/PREFIX:
//
//	chunks/<sha256>              content, addressed by the SHA-256 of its bytes
//	packs/<sha256>               small chunks, several to an object (a push's)
//	manifests/<sha256>           one checkpoint: its mounts and their trees (JSON)
//	workspaces/NAME/head         the workspace's checkpoints, newest last (JSON)
//	workspaces/NAME/lease        who writes the workspace, until when (JSON)
//	locks/<kind>-<id>            pushes and collections in progress (JSON)
//
// A chunk smaller than PackBelow is not an object of its own: the small
// chunks one push sends go into packs of up to PackSize, and the manifest
// says where each is (its pack, offset and length). A push of many small
// files is then a few requests, not two a file; the price is that two
// workspaces with no checkpoint in common may each hold the same small
// chunk (a fork, sharing its source's manifests, does not). A chunk read
// from a pack is checked against its own hash like any other.
//
// Chunks, packs and manifests are created with If-None-Match: * (a 412
// means the same bytes are there already). A manifest is written only once every chunk
// it names is, and a head only once its manifest is, so no head or manifest
// is ever visible whose chunks are not all there. A head moves only by
// compare-and-swap: If-Match on the ETag it was read with (If-None-Match when
// it is created); every head written differs from the one before (a
// generation number), so an ETag never comes back.
//
// # One writer
//
// A workspace is written by the holder of its lease ([Store.Acquire]). The
// lease is an object taken by a conditional write and renewed; a second
// taker is refused, naming the holder and when the lease ends, unless it
// takes over. Taking over rewrites the head naming the new writer, so the
// old holder's next compare-and-swap of the head fails: it learns it is
// fenced ([ErrFenced]) and stops writing.
//
// # Garbage
//
// [Store.GC] deletes manifests no head names and chunks no kept manifest
// names. It never deletes what a push in progress is about to name: a push
// and a collection each announce themselves with a lock object and then
// list the locks; whichever sees the other backs off (both may), so a
// collection never runs while a push decides which chunks exist. Chunks and
// manifests younger than a grace period are kept as well.
package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Errors, by cause. Those of [Open] tell a usage error (ErrBadURL: exit 2)
// from a runtime one (the rest: exit 1).
var (
	// ErrBadURL: the store URL is not s3://BUCKET[/PREFIX].
	ErrBadURL = errors.New("bad store URL")
	// ErrNoBucket: the bucket does not exist.
	ErrNoBucket = errors.New("no such bucket")
	// ErrCredentials: the store refused the credentials.
	ErrCredentials = errors.New("the store refused the credentials")
	// ErrUnreachable: the store did not answer.
	ErrUnreachable = errors.New("the store is unreachable")
	// ErrNotFound: no such workspace or checkpoint in the store.
	ErrNotFound = errors.New("not in the store")
	// ErrExists: a workspace of that name exists already.
	ErrExists = errors.New("exists already")
	// ErrNewerFormat: an object written by a newer vfsmount; it is left as
	// it is.
	ErrNewerFormat = errors.New("written in a newer format than this vfsmount reads")
	// ErrCorrupt: an object's bytes do not match its name or do not parse.
	ErrCorrupt = errors.New("corrupt object")
	// ErrConflict: a compare-and-swap lost to another writer.
	ErrConflict = errors.New("changed by another writer")
	// ErrFenced: another daemon took the workspace over; this one no
	// longer writes it.
	ErrFenced = errors.New("the workspace was taken over by another writer; this one stops writing to the store")
	// ErrLeaseHeld: another daemon holds the workspace's lease.
	ErrLeaseHeld = errors.New("the workspace is held by another writer")
	// ErrOtherCommit: a checkpoint of a writable git mount over another
	// commit than the source serves.
	ErrOtherCommit = errors.New("checkpoint is of another commit")
	// ErrBusy: a push or a collection in progress keeps another off.
	ErrBusy = errors.New("the store is busy")
)

// Config says where the store is.
type Config struct {
	// URL is s3://BUCKET/PREFIX (the prefix may be empty).
	URL string
	// Endpoint is the S3 endpoint of a server other than AWS
	// (http://127.0.0.1:7070); objects are then addressed path-style.
	Endpoint string
	// Region; empty takes the AWS chain's, else us-east-1.
	Region string
	// MaxAttempts bounds the tries of one request (retried with
	// exponential backoff and jitter on 5xx, throttling and broken
	// connections); 0 is 8.
	MaxAttempts int
	// MaxBackoff bounds the wait between tries; 0 is 4s.
	MaxBackoff time.Duration
	// Parallel bounds the requests a push or a resume has in flight;
	// 0 is 16.
	Parallel int
	// ChunkSize is the size of the content chunks a push cuts files
	// into; 0 is 4 MiB.
	ChunkSize int64
	// PackBelow is the size under which a chunk goes into a pack; 0 is
	// 256 KiB, negative packs none. PackSize is the size at which a pack
	// is cut; 0 is 8 MiB.
	PackBelow, PackSize int64
	// CacheDir keeps fetched chunks (by hash, checked on read); empty
	// keeps none.
	CacheDir string
	// CacheBytes bounds CacheDir (oldest used first out); 0 is 1 GiB.
	CacheBytes int64
	// Logger hears of retries, corrupt chunks, fencing; nil is silent.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// HTTPClient, when set, carries the requests (a test's fault
	// injection).
	HTTPClient aws.HTTPClient
}

// Store is an opened store. It is safe for concurrent use.
type Store struct {
	cfg    Config
	url    string // as given, for errors
	bucket string
	prefix string
	s3     *s3.Client
	log    *slog.Logger
	cache  *cache
	// warming are the packs being fetched whole into the cache
	// (WarmPacks), each closed when done: a read of one of their chunks
	// waits for it instead of asking again.
	warmMu  sync.Mutex
	warming map[string]chan struct{}
	// hooks are a test's stopping points ("push:checked", "gc:listed").
	hooks func(point string)
}

// ParseURL splits s3://BUCKET/PREFIX.
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("store %q: %w: %v", raw, ErrBadURL, err)
	}
	if u.Scheme != "s3" {
		return "", "", fmt.Errorf("store %q: %w: unknown scheme %q, want s3://BUCKET/PREFIX", raw, ErrBadURL, u.Scheme)
	}
	if u.Host == "" {
		return "", "", fmt.Errorf("store %q: %w: no bucket, want s3://BUCKET/PREFIX", raw, ErrBadURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", "", fmt.Errorf("store %q: %w: want s3://BUCKET/PREFIX, nothing else", raw, ErrBadURL)
	}
	return u.Host, strings.Trim(u.Path, "/"), nil
}

// Open opens the store cfg names and checks that its bucket is there and
// that the credentials are taken.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	bucket, prefix, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 4 * time.Second
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 16
	}
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = 4 << 20
	}
	if cfg.PackBelow == 0 {
		cfg.PackBelow = 256 << 10
	}
	if cfg.PackSize <= 0 {
		cfg.PackSize = 8 << 20
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = 1 << 30
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			// The standard retryer (exponential backoff with
			// jitter; retries 5xx, throttling, broken
			// connections), without its client-side retry
			// quota: a store that is down for a while is retried
			// to the bound, not given up on after a burst.
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = cfg.MaxBackoff
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("store %s: the AWS configuration (environment, shared files): %w", cfg.URL, err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		// As many idle connections kept as requests run at once: the
		// SDK's default keeps 10, and a push of many small chunks
		// dialled a new connection for most of the rest.
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = 2 * cfg.Parallel
		})
		if cfg.HTTPClient != nil {
			o.HTTPClient = cfg.HTTPClient
		}
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		// A server other than AWS (an endpoint given here, or by
		// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL): its buckets are
		// addressed by path, not by host name.
		if o.BaseEndpoint != nil {
			o.UsePathStyle = true
		}
		// Checksums only where the API requires them: S3-compatible
		// servers differ in the trailing checksums they take, and
		// content is checked by its SHA-256 name anyway.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	s := &Store{cfg: cfg, url: cfg.URL, bucket: bucket, prefix: prefix, s3: client, log: log}
	if cfg.CacheDir != "" {
		if s.cache, err = newCache(cfg.CacheDir, cfg.CacheBytes); err != nil {
			return nil, fmt.Errorf("store %s: chunk cache: %w", cfg.URL, err)
		}
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return nil, s.classify("open", "bucket "+bucket, err)
	}
	return s, nil
}

// URL is the store's URL, as given.
func (s *Store) URL() string { return s.url }

// key is the object key of the parts under the prefix.
func (s *Store) key(parts ...string) string {
	return path.Join(append([]string{s.prefix}, parts...)...)
}

func chunkKeyPart(sum string) string    { return "chunks/" + sum }
func manifestKeyPart(sum string) string { return "manifests/" + sum }
func packKeyPart(sum string) string     { return "packs/" + sum }
func headKeyPart(name string) string    { return "workspaces/" + name + "/head" }
func leaseKeyPart(name string) string   { return "workspaces/" + name + "/lease" }

// hook tells a test's hook of point.
func (s *Store) hook(point string) {
	if s.hooks != nil {
		s.hooks(point)
	}
}

// status is the HTTP status of an S3 error, 0 for none (a transport
// error).
func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// classify names the store, the operation and the cause of err.
func (s *Store) classify(op, what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store %s: %s %s: %w", s.url, op, what, err)
	}
	st, c := status(err), code(err)
	var cause error
	switch {
	case c == "NoSuchBucket" || (st == http.StatusNotFound && strings.HasPrefix(what, "bucket ")):
		cause = ErrNoBucket
	case c == "InvalidAccessKeyId" || c == "SignatureDoesNotMatch" || c == "AccessDenied" || st == http.StatusForbidden:
		cause = ErrCredentials
	case st == 0:
		cause = ErrUnreachable
	default:
		return fmt.Errorf("store %s: %s %s: %w", s.url, op, what, err)
	}
	return fmt.Errorf("store %s: %s %s: %w: %v", s.url, op, what, cause, err)
}

// object is what a get returns.
type object struct {
	data     []byte
	etag     string
	modified time.Time
}

// get reads key; ErrNotFound when it is absent.
func (s *Store) get(ctx context.Context, key string) (object, error) {
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return object{}, fmt.Errorf("store %s: %s: %w", s.url, key, ErrNotFound)
		}
		return object{}, s.classify("get", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return object{}, s.classify("get", key, err)
	}
	return object{data: data, etag: aws.ToString(out.ETag), modified: aws.ToTime(out.LastModified)}, nil
}

// getRange reads n bytes of key from off (a chunk in a pack). A shorter
// answer is ErrCorrupt: the object is not what the manifest says.
func (s *Store) getRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("store %s: %s: %w", s.url, key, ErrNotFound)
		}
		return nil, s.classify("get", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, n+1))
	if err != nil {
		return nil, s.classify("get", key, err)
	}
	if int64(len(data)) != n {
		return nil, fmt.Errorf("store %s: %s: %w: %d bytes at %d, want %d", s.url, key, ErrCorrupt, len(data), off, n)
	}
	return data, nil
}

func isNotFound(err error) bool {
	var nk *types.NoSuchKey
	var nf *types.NotFound
	return errors.As(err, &nk) || errors.As(err, &nf) || status(err) == http.StatusNotFound
}

func isPrecondition(err error) bool {
	st := status(err)
	// 409 ConditionalRequestConflict: a concurrent conditional write of
	// the same key; the caller reads again, as for a 412.
	return st == http.StatusPreconditionFailed || st == http.StatusConflict || code(err) == "PreconditionFailed"
}

// cond is a condition on a put.
type cond struct {
	ifNoneMatch bool   // create only
	ifMatch     string // replace only this ETag
}

// put writes data at key under c; a failed condition is ErrConflict, and
// the new ETag is returned.
func (s *Store) put(ctx context.Context, key string, data []byte, c cond) (string, error) {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if c.ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if c.ifMatch != "" {
		in.IfMatch = aws.String(c.ifMatch)
	}
	out, err := s.s3.PutObject(ctx, in)
	if err != nil {
		// If-Match of a key that is gone is a 404 (on AWS too): the
		// swap lost all the same.
		if (c.ifNoneMatch || c.ifMatch != "") && isPrecondition(err) || c.ifMatch != "" && isNotFound(err) {
			return "", fmt.Errorf("store %s: put %s: %w", s.url, key, ErrConflict)
		}
		return "", s.classify("put", key, err)
	}
	return aws.ToString(out.ETag), nil
}

// exists reports whether key is there, and when it was written.
func (s *Store) exists(ctx context.Context, key string) (bool, time.Time, error) {
	out, err := s.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return false, time.Time{}, nil
		}
		return false, time.Time{}, s.classify("head", key, err)
	}
	return true, aws.ToTime(out.LastModified), nil
}

func (s *Store) remove(ctx context.Context, key string) error {
	_, err := s.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil && !isNotFound(err) {
		return s.classify("delete", key, err)
	}
	return nil
}

// listed is one object of a listing.
type listed struct {
	key      string // below the prefix
	modified time.Time
	size     int64
}

// list lists the objects under the prefix's dir/ (every one, all pages).
func (s *Store) list(ctx context.Context, dir string) ([]listed, error) {
	base := s.key(dir) + "/"
	p := s3.NewListObjectsV2Paginator(s.s3, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(base)})
	var out []listed
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.classify("list", base, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			out = append(out, listed{key: dir + "/" + strings.TrimPrefix(k, base), modified: aws.ToTime(o.LastModified), size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

// sum is the SHA-256 of data, in hex.
func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// validName says whether name may name a workspace: one path element of
// letters, digits, '.', '-', '_'.
func validName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 200 {
		return fmt.Errorf("workspace name %q: want 1-200 of letters, digits, '.', '-', '_'", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("workspace name %q: want 1-200 of letters, digits, '.', '-', '_'", name)
		}
	}
	return nil
}
