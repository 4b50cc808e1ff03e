// Package semsearch is the engine of the tool face's semSearch tool: it
// chunks files (Go by its declarations, other text by paragraphs), embeds
// each chunk once per git blob through an OpenAI-compatible embeddings
// endpoint (POST /v1/embeddings: Ollama, OpenAI, a local server), keeps
// the vectors in a cache directory by blob id, and finds the chunks
// nearest a query by cosine similarity.
//
// A blob is embedded once: its vectors are kept under its git blob id, so
// the same content at another path, in another commit or in another
// mount is never embedded again. An immutable tree (a git mount) is
// listed once per commit ([Engine.Tree]); a file of a mutable mount is
// hashed again only when its size or modification time changes.
//
// The package knows nothing of the tool face: its caller lists the files
// ([Doc]) and lays out the hits.
package semsearch

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config configures an [Engine].
type Config struct {
	// Endpoint is the base URL of an OpenAI-compatible API, with or
	// without /v1 ("http://localhost:11434", "https://api.openai.com/v1").
	Endpoint string
	// Model is the embedding model's name ("nomic-embed-text",
	// "text-embedding-3-small").
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// CacheDir holds the vectors and the tree lists (see store.go);
	// required.
	CacheDir string
	// Batch is the number of inputs per request (default 64); Workers the
	// requests in flight at once (default 2); Timeout bounds one request
	// (default 60s).
	Batch   int
	Workers int
	Timeout time.Duration
	// HTTPClient, when set, makes the requests (tests); its Timeout is
	// left as it is.
	HTTPClient *http.Client
	// MemoryBytes bounds the vectors kept in memory between searches
	// (default 256 MiB); the rest are read from the cache directory.
	MemoryBytes int
}

// Engine searches files by meaning. It is safe for concurrent use.
type Engine struct {
	cl    *client
	store *store

	mu      sync.Mutex
	stamps  map[string]stamp  // Doc.Key -> what its content was last seen as
	mem     map[string]*entry // oid -> entry, within memBytes
	used    int
	memMax  int
	loading sync.Mutex // one search embeds at a time: a blob once
}

type stamp struct {
	mtime time.Time
	size  int64
	oid   string
}

// New makes an engine. It does not call the endpoint.
func New(cfg Config) (*Engine, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("semsearch: no endpoint")
	}
	if cfg.Model == "" {
		return nil, errors.New("semsearch: no model")
	}
	if cfg.CacheDir == "" {
		return nil, errors.New("semsearch: no cache directory")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		t := cfg.Timeout
		if t <= 0 {
			t = defaultTimeout
		}
		hc = &http.Client{Timeout: t}
	}
	e := &Engine{
		cl: &client{url: embeddingsURL(cfg.Endpoint), shown: cfg.Endpoint, model: cfg.Model, key: cfg.APIKey, http: hc,
			batch: cfg.Batch, workers: cfg.Workers},
		store:  newStore(cfg.CacheDir, cfg.Model),
		stamps: map[string]stamp{},
		mem:    map[string]*entry{},
		memMax: cfg.MemoryBytes,
	}
	if e.cl.batch <= 0 {
		e.cl.batch = 64
	}
	if e.cl.workers <= 0 {
		e.cl.workers = 2
	}
	if e.memMax <= 0 {
		e.memMax = 256 << 20
	}
	return e, nil
}

// Endpoint is the endpoint as configured.
func (e *Engine) Endpoint() string { return e.cl.shown }

// Doc is a file to search.
type Doc struct {
	// Path is the file as hits name it (a workspace path).
	Path string
	// OID is the file's git blob id when the caller knows it (a git
	// mount's); otherwise the engine hashes the content.
	OID string
	// Key names the file for the engine's memory of what it hashed
	// (a name in the caller's tree; "" for none): a file with the same
	// Key, ModTime and Size as when it was hashed is not hashed again.
	Key     string
	ModTime time.Time
	// Size is the file's size: one over MaxFileSize is left out unread.
	Size int64
	// Read reads the whole file.
	Read func(ctx context.Context) ([]byte, error)
}

// Hit is a chunk found: its file, lines, score (cosine similarity) and
// text.
type Hit struct {
	Path       string
	Start, End int
	Score      float64
	Text       string
}

// Stats say what a search did: the files and chunks searched, and the
// blobs and chunks it had to embed.
type Stats struct {
	Files, Chunks               int
	EmbeddedBlobs, EmbeddedText int
}

// BlobID is the git blob id of data: sha1("blob <len>\x00" + data).
func BlobID(data []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// Tree returns the files of the immutable tree tree of commit (git ids),
// from the cache directory, or by calling list and keeping its answer
// there: a second search of the same commit neither walks nor hashes. A
// list that says it is not complete (a directory or an id it could not
// read: a path rule, say) is used once and not kept.
func (e *Engine) Tree(ctx context.Context, commit, tree string, list func(ctx context.Context) (files []TreeFile, complete bool, err error)) ([]TreeFile, error) {
	if validOID(commit) && validOID(tree) {
		if fs, ok := e.store.loadTree(commit, tree); ok {
			return fs, nil
		}
	}
	fs, complete, err := list(ctx)
	if err != nil {
		return nil, err
	}
	if complete && validOID(commit) && validOID(tree) {
		_ = e.store.saveTree(commit, tree, fs) // a cache: a failed write costs a walk next time
	}
	return fs, nil
}

// Search embeds query and returns the k chunks of docs nearest it, best
// first. Blobs not embedded yet are embedded first (each once, kept in the
// cache directory). An endpoint that fails is an error naming it.
func (e *Engine) Search(ctx context.Context, query string, docs []Doc, k int) ([]Hit, Stats, error) {
	var st Stats
	qv, err := e.cl.embed(ctx, []string{query}, nil)
	if err != nil {
		return nil, st, err
	}
	q := normalize(qv[0])

	// The blob id of every file.
	files := make([]file, 0, len(docs))
	for i := range docs {
		d := &docs[i]
		if d.Size > MaxFileSize {
			continue
		}
		f := file{doc: d, oid: d.OID}
		if f.oid == "" {
			f.oid = e.stamped(d)
		}
		if f.oid == "" {
			data, err := d.Read(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil, st, ctx.Err()
				}
				continue // vanished or unreadable: skipped, as grep does
			}
			f.oid, f.data = BlobID(data), data
			if d.Key != "" {
				e.mu.Lock()
				e.stamps[d.Key] = stamp{mtime: d.ModTime, size: d.Size, oid: f.oid}
				e.mu.Unlock()
			}
		}
		files = append(files, f)
	}

	// The entries, embedding the blobs that have none.
	e.loading.Lock()
	entries := map[string]*entry{}
	var missing []*file
	for i := range files {
		f := &files[i]
		if _, ok := entries[f.oid]; ok {
			continue
		}
		en, err := e.entry(f.oid)
		if err != nil {
			e.loading.Unlock()
			return nil, st, err
		}
		if en != nil && len(en.ranges) > 0 && en.dim != len(q) {
			en = nil // another model's under the same name: embedded again
		}
		entries[f.oid] = en
		if en == nil {
			missing = append(missing, f)
		}
	}
	for i := range files {
		if entries[files[i].oid] != nil {
			files[i].data = nil // hashed, and embedded before: not kept
		}
	}
	err = e.embedBlobs(ctx, missing, func(oid string, en *entry) { entries[oid] = en }, &st, func(f *file) ([]byte, error) {
		if f.data != nil {
			return f.data, nil
		}
		return f.doc.Read(ctx)
	})
	e.loading.Unlock()
	if err != nil {
		return nil, st, err
	}

	// Score every chunk.
	type scored struct {
		f     *file
		chunk int
		score float64
	}
	var all []scored
	for i := range files {
		f := &files[i]
		en := entries[f.oid]
		if en == nil || en.dim != len(q) {
			continue
		}
		st.Files++
		for c := range en.ranges {
			all = append(all, scored{f, c, dot(q, en.vec(c))})
		}
	}
	st.Chunks = len(all)
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		if all[i].f.doc.Path != all[j].f.doc.Path {
			return all[i].f.doc.Path < all[j].f.doc.Path
		}
		return all[i].chunk < all[j].chunk
	})
	// The best k whose files can still be read: a file the caller may
	// not read (policy) is not shown, not even by its lines.
	hits := make([]Hit, 0, min(len(all), max(k, 0)))
	texts := map[*file][]string{}
	for _, s := range all {
		if k > 0 && len(hits) >= k || s.score <= 0 {
			break // enough, or the rest are nothing like the query
		}
		lines, ok := texts[s.f]
		if !ok {
			data := s.f.data
			if data == nil {
				data, _ = s.f.doc.Read(ctx)
			}
			if data != nil {
				lines = splitLines(string(data))
			}
			texts[s.f] = lines
		}
		r := entries[s.f.oid].ranges[s.chunk]
		h := Hit{Path: s.f.doc.Path, Start: int(r[0]), End: int(r[1]), Score: s.score}
		if h.Start < 1 || h.End > len(lines) || h.Start > h.End {
			continue // unreadable now, or changed since it was hashed
		}
		h.Text = strings.Join(lines[h.Start-1:h.End], "\n")
		hits = append(hits, h)
	}
	return hits, st, nil
}

// stamped is the oid a file had when last hashed, if its size and time
// are the same.
func (e *Engine) stamped(d *Doc) string {
	if d.Key == "" || d.ModTime.IsZero() {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.stamps[d.Key]
	if ok && s.size == d.Size && s.mtime.Equal(d.ModTime) {
		return s.oid
	}
	return ""
}

// entry is oid's entry from memory or the cache directory; nil when it
// has none yet.
func (e *Engine) entry(oid string) (*entry, error) {
	e.mu.Lock()
	en := e.mem[oid]
	e.mu.Unlock()
	if en != nil {
		return en, nil
	}
	en, err := e.store.load(oid)
	if err != nil {
		return nil, fmt.Errorf("semantic search cache: %v", err)
	}
	if en != nil {
		e.remember(oid, en)
	}
	return en, nil
}

func (e *Engine) remember(oid string, en *entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mem[oid] == nil && e.used+en.bytes() <= e.memMax {
		e.mem[oid] = en
		e.used += en.bytes()
	}
}

// embedBlobs chunks and embeds the blobs of files, and keeps each blob's
// entry (in the cache directory, in memory, and through keep) as soon as
// all its chunks are embedded: a failure later loses only what was not.
func (e *Engine) embedBlobs(ctx context.Context, files []*file, keep func(oid string, en *entry), st *Stats, read func(*file) ([]byte, error)) error {
	type pending struct {
		oid    string
		chunks []Chunk
		vecs   [][]float32
		left   int
	}
	var (
		ps    []*pending
		texts []string
		owner []int // per text: its blob in ps
		index []int // per text: its chunk in the blob
	)
	put := func(oid string, en *entry) error {
		keep(oid, en)
		e.remember(oid, en)
		if err := e.store.save(oid, en); err != nil {
			return fmt.Errorf("semantic search cache: %v", err)
		}
		return nil
	}
	for _, f := range files {
		data, err := read(f)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue // unreadable: not searched
		}
		f.data = data
		chunks := Split(f.doc.Path, data)
		if len(chunks) == 0 {
			// Binary, empty or huge: an entry without chunks, so it
			// is not read again.
			if err := put(f.oid, &entry{}); err != nil {
				return err
			}
			continue
		}
		p := &pending{oid: f.oid, chunks: chunks, vecs: make([][]float32, len(chunks)), left: len(chunks)}
		for i, c := range chunks {
			texts = append(texts, c.Text)
			owner = append(owner, len(ps))
			index = append(index, i)
		}
		ps = append(ps, p)
	}
	if len(texts) == 0 {
		return nil
	}
	st.EmbeddedBlobs, st.EmbeddedText = len(ps), len(texts)
	_, err := e.cl.embed(ctx, texts, func(first int, vs [][]float32) error {
		for i, v := range vs {
			p := ps[owner[first+i]]
			p.vecs[index[first+i]] = normalize(v)
			if p.left--; p.left > 0 {
				continue
			}
			dim := len(p.vecs[0])
			en := &entry{dim: dim, ranges: make([][2]uint32, len(p.chunks)), vecs: make([]float32, 0, dim*len(p.chunks))}
			for j, c := range p.chunks {
				if len(p.vecs[j]) != dim {
					return fmt.Errorf("embeddings endpoint %s: embeddings of different lengths (%d and %d)", e.cl.shown, dim, len(p.vecs[j]))
				}
				en.ranges[j] = [2]uint32{uint32(c.Start), uint32(c.End)}
				en.vecs = append(en.vecs, p.vecs[j]...)
			}
			if err := put(p.oid, en); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// file is a Doc being searched, with its blob id.
type file struct {
	doc  *Doc
	oid  string
	data []byte // its content, while known
}

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	s := 1 / math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) * s)
	}
	return out
}

func dot(a, b []float32) float64 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}
