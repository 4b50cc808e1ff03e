package semsearch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge/semsearch"
	"github.com/vfsmount/vfsmount/agentbridge/semsearch/semsearchtest"
)

func docs(files map[string]string) []semsearch.Doc {
	var out []semsearch.Doc
	for p, text := range files {
		out = append(out, semsearch.Doc{Path: p, Size: int64(len(text)), Read: func(context.Context) ([]byte, error) { return []byte(text), nil }})
	}
	return out
}

// TestSearchRanksByMeaning: the chunk that shares the query's words comes
// first, with its lines and text.
func TestSearchRanksByMeaning(t *testing.T) {
	srv := semsearchtest.Start(t)
	e := semsearchtest.Engine(t, srv.URL, t.TempDir())
	hits, st, err := e.Search(context.Background(), "parse config file", docs(map[string]string{"/r/cfg.go": semsearchtest.ConfigGo, "/r/NOTES.md": semsearchtest.NotesMD}), 10)
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, "/r/cfg.go", hits[0].Path)
	assert.Equal(t, 5, hits[0].Start)
	assert.Equal(t, 12, hits[0].End)
	assert.True(t, strings.HasPrefix(hits[0].Text, "// parseConfig reads"), hits[0].Text)
	for _, h := range hits[1:] {
		assert.Less(t, h.Score, hits[0].Score)
	}
	assert.Equal(t, 2, st.Files)
	assert.Equal(t, 4, st.Chunks) // cfg.go: header, 2 funcs; NOTES.md: one chunk

	hits, _, err = e.Search(context.Background(), "retry after failed attempt", docs(map[string]string{"/r/cfg.go": semsearchtest.ConfigGo, "/r/NOTES.md": semsearchtest.NotesMD}), 1)
	require.NoError(t, err)
	require.Len(t, hits, 1)
	assert.Equal(t, 14, hits[0].Start)
}

// TestSearchEmbedsEachBlobOnce: the same content at two paths, searched
// twice and by a second engine over the same cache directory, is
// embedded once; only the query is embedded again.
func TestSearchEmbedsEachBlobOnce(t *testing.T) {
	srv := semsearchtest.Start(t)
	cache := t.TempDir()
	ctx := context.Background()
	files := map[string]string{"/a/cfg.go": semsearchtest.ConfigGo, "/b/cfg.go": semsearchtest.ConfigGo, "/a/NOTES.md": semsearchtest.NotesMD}
	_, st, err := semsearchtest.Engine(t, srv.URL, cache).Search(ctx, "config", docs(files), 10)
	require.NoError(t, err)
	assert.Equal(t, 2, st.EmbeddedBlobs)
	assert.Equal(t, int64(1+4), srv.Inputs.Load(), "the query and 4 chunks")

	for range 2 {
		_, st, err = semsearchtest.Engine(t, srv.URL, cache).Search(ctx, "config", docs(files), 10)
		require.NoError(t, err)
		assert.Equal(t, 0, st.EmbeddedBlobs)
		assert.Equal(t, 3, st.Files)
	}
	assert.Equal(t, int64(1+4+2), srv.Inputs.Load(), "only the queries again")
}

// TestSearchRecomputesACorruptEntry: a cache entry cut short or changed
// is embedded again and rewritten.
func TestSearchRecomputesACorruptEntry(t *testing.T) {
	srv := semsearchtest.Start(t)
	cache := t.TempDir()
	ctx := context.Background()
	files := map[string]string{"/cfg.go": semsearchtest.ConfigGo}
	_, _, err := semsearchtest.Engine(t, srv.URL, cache).Search(ctx, "config", docs(files), 10)
	require.NoError(t, err)
	var entry string
	require.NoError(t, filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, string(filepath.Separator)+"blobs"+string(filepath.Separator)) && info.Mode().IsRegular() {
			entry = p
		}
		return err
	}))
	require.NotEmpty(t, entry)
	assert.Equal(t, semsearch.BlobID([]byte(semsearchtest.ConfigGo)), filepath.Base(entry))
	good, err := os.ReadFile(entry)
	require.NoError(t, err)

	for name, bad := range map[string][]byte{
		"short":   good[:len(good)/2],
		"flipped": append(append([]byte{}, good[:100]...), append([]byte{good[100] ^ 1}, good[101:]...)...),
		"empty":   {},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(entry, bad, 0o644))
			before := srv.Inputs.Load()
			hits, st, err := semsearchtest.Engine(t, srv.URL, cache).Search(ctx, "parse config file", docs(files), 10)
			require.NoError(t, err)
			assert.Equal(t, 1, st.EmbeddedBlobs)
			assert.Equal(t, before+1+3, srv.Inputs.Load())
			assert.Equal(t, 5, hits[0].Start)
			now, err := os.ReadFile(entry)
			require.NoError(t, err)
			assert.Equal(t, good, now, "rewritten whole")
		})
	}
}

// TestSearchHashesAChangedFile: a file known by key is hashed again only
// when its size or time changes.
func TestSearchHashesAChangedFile(t *testing.T) {
	srv := semsearchtest.Start(t)
	e := semsearchtest.Engine(t, srv.URL, t.TempDir())
	ctx := context.Background()
	reads := 0
	content := semsearchtest.ConfigGo
	mtime := time.Unix(1000, 0)
	doc := func() []semsearch.Doc {
		return []semsearch.Doc{{Path: "/h/cfg.go", Key: "h/cfg.go", ModTime: mtime, Size: int64(len(content)),
			Read: func(context.Context) ([]byte, error) { reads++; return []byte(content), nil }}}
	}
	_, _, err := e.Search(ctx, "zzz unrelated", doc(), 10)
	require.NoError(t, err)
	assert.Equal(t, 1, reads, "read once to hash and chunk; no hit shown")
	_, _, err = e.Search(ctx, "zzz unrelated", doc(), 10)
	require.NoError(t, err)
	assert.Equal(t, 1, reads, "same size and time: not hashed again")
	content, mtime = semsearchtest.NotesMD, time.Unix(2000, 0)
	hits, st, err := e.Search(ctx, "socket requests", doc(), 10)
	require.NoError(t, err)
	assert.Equal(t, 1, st.EmbeddedBlobs)
	require.Len(t, hits, 1)
	assert.Contains(t, hits[0].Text, "listens on a socket")
}

// TestSearchEndpointDown: an endpoint that refuses, or answers an error,
// fails the search with a sentence naming it and what happened.
func TestSearchEndpointDown(t *testing.T) {
	srv := semsearchtest.Start(t)
	srv.Status.Store(503)
	_, _, err := semsearchtest.Engine(t, srv.URL, t.TempDir()).Search(context.Background(), "config", docs(map[string]string{"/cfg.go": semsearchtest.ConfigGo}), 10)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "embeddings endpoint "+srv.URL+" answered 503 Service Unavailable")
	assert.Contains(t, err.Error(), "model not loaded")

	_, _, err = semsearchtest.Engine(t, "http://127.0.0.1:1", t.TempDir()).Search(context.Background(), "config", nil, 10)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "embeddings endpoint http://127.0.0.1:1 is unreachable: connection refused")
}

// TestEndpointForms: the endpoint is a base URL with or without /v1; the
// key, when given, is a bearer token; the model is named.
func TestEndpointForms(t *testing.T) {
	srv := semsearchtest.Start(t)
	for _, ep := range []string{srv.URL, srv.URL + "/", srv.URL + "/v1", srv.URL + "/v1/", srv.URL + "/v1/embeddings"} {
		e, err := semsearch.New(semsearch.Config{Endpoint: ep, Model: "m1", APIKey: "sk-test", CacheDir: t.TempDir()})
		require.NoError(t, err)
		_, _, err = e.Search(context.Background(), "config", nil, 10)
		require.NoError(t, err, ep)
	}
	for _, a := range srv.Auth() {
		assert.Equal(t, "Bearer sk-test", a)
	}
	for _, m := range srv.Models() {
		assert.Equal(t, "m1", m)
	}
	e, err := semsearch.New(semsearch.Config{Endpoint: srv.URL, Model: "m1", CacheDir: t.TempDir()})
	require.NoError(t, err)
	_, _, err = e.Search(context.Background(), "config", nil, 10)
	require.NoError(t, err)
	assert.Equal(t, "", srv.Auth()[len(srv.Auth())-1], "no key, no header")
}

// TestSearchBatches: many chunks go in batches of Batch inputs.
func TestSearchBatches(t *testing.T) {
	srv := semsearchtest.Start(t)
	e, err := semsearch.New(semsearch.Config{Endpoint: srv.URL, Model: "m", CacheDir: t.TempDir(), Batch: 4})
	require.NoError(t, err)
	files := map[string]string{}
	for i := range 10 {
		files["/f"+string(rune('a'+i))+".txt"] = strings.Repeat("word ", i+1)
	}
	_, st, err := e.Search(context.Background(), "word", docs(files), 3)
	require.NoError(t, err)
	assert.Equal(t, 10, st.EmbeddedText)
	assert.Equal(t, int64(1+3), srv.Requests.Load(), "the query, then 4+4+2")
}

// TestTreeListKeptPerCommit: a tree's list is made once and read back.
func TestTreeListKeptPerCommit(t *testing.T) {
	srv := semsearchtest.Start(t)
	cache := t.TempDir()
	commit, tree := strings.Repeat("ab", 20), strings.Repeat("cd", 20)
	calls := 0
	complete := false
	list := func(context.Context) ([]semsearch.TreeFile, bool, error) {
		calls++
		return []semsearch.TreeFile{{Path: "a b.go", OID: strings.Repeat("01", 20), Size: 3}, {Path: "dir/\"q\".txt", OID: strings.Repeat("02", 20), Size: 4}}, complete, nil
	}
	_, err := semsearchtest.Engine(t, srv.URL, cache).Tree(context.Background(), commit, tree, list)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(cache, "semsearch", "trees", commit, tree))
	require.ErrorIs(t, err, os.ErrNotExist, "an incomplete list is not kept")
	complete = true
	calls = 0
	first, err := semsearchtest.Engine(t, srv.URL, cache).Tree(context.Background(), commit, tree, list)
	require.NoError(t, err)
	again, err := semsearchtest.Engine(t, srv.URL, cache).Tree(context.Background(), commit, tree, list)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Equal(t, 1, calls)
	_, err = os.Stat(filepath.Join(cache, "semsearch", "trees", commit, tree))
	require.NoError(t, err)
}
