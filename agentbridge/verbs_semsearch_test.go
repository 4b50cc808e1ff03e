package agentbridge

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge/semsearch/semsearchtest"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/policy"
)

const semServerGo = `package srv

// listen accepts connections on the socket and serves requests.
func listen(addr string) error {
	return serve(addr)
}
`

func toolNamesOf(t *testing.T, w *Workspace, dialect string) []string {
	t.Helper()
	defs, err := w.Tools(dialect)
	require.NoError(t, err)
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return names
}

// TestSemSearchNotOfferedWithoutEndpoint: without an engine the tool is in
// no dialect's list, a call is an unknown tool, and an allowlist naming it
// is an error that says why.
func TestSemSearchNotOfferedWithoutEndpoint(t *testing.T) {
	w := fixture(t, map[string]string{"/repo/cfg.go": semsearchtest.ConfigGo}, Options{})
	for _, d := range Dialects {
		assert.NotContains(t, toolNamesOf(t, w, d), VerbSemSearch, d)
	}
	assert.Contains(t, fail(t, w, VerbSemSearch, obj{"query": "config"}), `unknown tool "semSearch"`)
	assert.NotContains(t, w.Brief(), "semSearch")

	_, err := New(memoryOnly(t), Options{Tools: []string{VerbRead, VerbSemSearch}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tools: "semSearch" cannot be served: no embeddings endpoint is configured`)
}

func memoryOnly(t *testing.T) mounts.FS {
	t.Helper()
	return fixture(t, nil, Options{}).fsys
}

// TestSemSearchOffered: with an engine, semSearch is listed in every
// dialect under its Cursor SDK name and arguments, read-only; an
// allowlist may leave it out.
func TestSemSearchOffered(t *testing.T) {
	srv := semsearchtest.Start(t)
	e := semsearchtest.Engine(t, srv.URL, t.TempDir())
	w := fixture(t, nil, Options{SemSearch: e})
	for _, d := range Dialects {
		defs, err := w.Tools(d)
		require.NoError(t, err)
		var def *ToolDef
		for i := range defs {
			if defs[i].Name == VerbSemSearch {
				def = &defs[i]
			}
		}
		require.NotNil(t, def, d)
		assert.True(t, def.Annotations.ReadOnly)
		assert.False(t, def.Annotations.Destructive)
		var s struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		require.NoError(t, json.Unmarshal(def.InputSchema, &s))
		assert.Equal(t, []string{"query"}, s.Required)
		assert.Equal(t, "string", s.Properties["query"].Type)
		assert.Equal(t, "array", s.Properties["targetDirectories"].Type)
		assert.Equal(t, "string", s.Properties["explanation"].Type)
		assert.Len(t, s.Properties, 3)
		assert.Contains(t, w.BriefFor(d), "semSearch")
	}
	narrowed, err := New(w.fsys, Options{SemSearch: e, Tools: []string{VerbRead}})
	require.NoError(t, err)
	assert.NotContains(t, toolNamesOf(t, narrowed, ""), VerbSemSearch)
	named, err := New(w.fsys, Options{SemSearch: e, Tools: []string{VerbRead, VerbSemSearch}})
	require.NoError(t, err)
	assert.Equal(t, []string{VerbRead, VerbSemSearch}, toolNamesOf(t, named, ""))
	assert.Equal(t, int64(0), srv.Requests.Load(), "offering the tool calls nothing")
}

// TestSemSearchFindsByMeaning: the query "parse config file" finds
// parseConfig first, shown as path:lines (score) and its numbered lines;
// targetDirectories narrows the search; bad arguments are errors naming
// them.
func TestSemSearchFindsByMeaning(t *testing.T) {
	srv := semsearchtest.Start(t)
	w := fixture(t, map[string]string{
		"/repo/cfg.go":         semsearchtest.ConfigGo,
		"/repo/srv/srv.go":     semServerGo,
		"/memory/notes.md":     semsearchtest.NotesMD,
		"/memory/image.png":    "\x89PNG\x00\x00config file parse",
		"/repo/.git/config.go": semsearchtest.ConfigGo,
	}, Options{SemSearch: semsearchtest.Engine(t, srv.URL, t.TempDir())})

	out := ok(t, w, VerbSemSearch, obj{"query": "parse config file", "explanation": "to find the parser"})
	first, _, _ := strings.Cut(out, "\n\n")
	assert.Regexp(t, `^/repo/cfg\.go:5-12 \(score 0\.\d\d\)\n     5\t// parseConfig reads the config file at path and parses it\.\n     6\tfunc parseConfig`, first)
	assert.True(t, strings.HasSuffix(strings.TrimSuffix(first, "\n"), "    12\t}"), first)
	assert.NotContains(t, out, ".git")
	assert.NotContains(t, out, "image.png")

	out = ok(t, w, VerbSemSearch, obj{"query": "server socket requests"})
	assert.Regexp(t, `^/memory/notes\.md:1-5 \(score`, out)
	assert.Contains(t, out, "/repo/srv/srv.go:3-6")

	out = ok(t, w, VerbSemSearch, obj{"query": "server socket requests", "targetDirectories": []string{"/repo/srv"}})
	assert.Regexp(t, `^/repo/srv/srv\.go:3-6 \(score`, out)
	assert.NotContains(t, out, "notes.md")
	out = ok(t, w, VerbSemSearch, obj{"query": "server socket requests", "targetDirectories": []string{"/memory/notes.md"}})
	assert.Regexp(t, `^/memory/notes\.md:1-5 \(score`, out)
	assert.NotContains(t, out, "srv.go")

	assert.Equal(t, "No results found", ok(t, w, VerbSemSearch, obj{"query": "? !"}))
	assert.Contains(t, fail(t, w, VerbSemSearch, obj{}), `"query"`)
	assert.Contains(t, fail(t, w, VerbSemSearch, obj{"query": "  "}), `"query" is empty`)
	assert.Contains(t, fail(t, w, VerbSemSearch, obj{"query": "x", "targetDirectories": 3}), `"targetDirectories" must be a list of strings`)
	assert.Contains(t, fail(t, w, VerbSemSearch, obj{"query": "x", "targetDirectories": []string{"/nope"}}), "/nope")
}

// TestSemSearchFollowsChanges: a file of a writable mount that changes is
// hashed and embedded again; unchanged ones are not.
func TestSemSearchFollowsChanges(t *testing.T) {
	srv := semsearchtest.Start(t)
	w := fixture(t, map[string]string{"/memory/a.md": semsearchtest.NotesMD, "/memory/b.go": semsearchtest.ConfigGo}, Options{SemSearch: semsearchtest.Engine(t, srv.URL, t.TempDir())})
	ok(t, w, VerbSemSearch, obj{"query": "socket"})
	before := srv.Inputs.Load()
	ok(t, w, VerbWrite, obj{"path": "/memory/a.md", "fileText": "Widgets are frobnicated nightly.\n"})
	out := ok(t, w, VerbSemSearch, obj{"query": "frobnicated widgets"})
	assert.Regexp(t, `^/memory/a\.md:1-1 \(score`, out)
	assert.Equal(t, before+1+1, srv.Inputs.Load(), "the query and the changed file's one chunk")
}

// TestSemSearchEndpointDown: an endpoint that fails makes semSearch a
// tool error naming it and its answer; every other tool works on.
func TestSemSearchEndpointDown(t *testing.T) {
	srv := semsearchtest.Start(t)
	srv.Status.Store(502)
	w := fixture(t, map[string]string{"/repo/cfg.go": semsearchtest.ConfigGo}, Options{SemSearch: semsearchtest.Engine(t, srv.URL, t.TempDir())})
	msg := fail(t, w, VerbSemSearch, obj{"query": "config"})
	assert.Equal(t, "semSearch: embeddings endpoint "+srv.URL+` answered 502 Bad Gateway: {"error":{"message":"model not loaded"}}`, msg)
	assert.Contains(t, ok(t, w, VerbRead, obj{"path": "/repo/cfg.go"}), "parseConfig")
	assert.Contains(t, ok(t, w, VerbGrep, obj{"pattern": "retryBackoff"}), "/repo/cfg.go")

	down := fixture(t, map[string]string{"/repo/cfg.go": semsearchtest.ConfigGo}, Options{SemSearch: semsearchtest.Engine(t, "http://127.0.0.1:1", t.TempDir())})
	assert.Equal(t, "semSearch: embeddings endpoint http://127.0.0.1:1 is unreachable: connection refused", fail(t, down, VerbSemSearch, obj{"query": "config"}))
	assert.Contains(t, ok(t, down, VerbRead, obj{"path": "/repo/cfg.go"}), "parseConfig")

	srv.Status.Store(0)
	assert.Regexp(t, `^/repo/cfg\.go:`, ok(t, w, VerbSemSearch, obj{"query": "parse config file"}), "back up: served")
}

// TestSemSearchAcrossCommits mounts two commits of a repository in turn,
// each searched by a new engine over one cache directory: the first
// embeds every blob, the second only the file the commit changed, and a
// search of a commit already listed neither lists nor hashes the mount
// again.
func TestSemSearchAcrossCommits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "src")
	testutil.GitInit(t, repo)
	one := testutil.GitCommit(t, repo, map[string]string{"cfg.go": semsearchtest.ConfigGo, "srv/srv.go": semServerGo, "NOTES.md": semsearchtest.NotesMD}, "one")
	two := testutil.GitCommit(t, repo, map[string]string{"NOTES.md": semsearchtest.NotesMD + "\nWidgets are frobnicated nightly.\n"}, "two")
	srv := semsearchtest.Start(t)
	cache := t.TempDir()

	search := func(rev string, args obj) (out string, readDirs, reads int64) {
		t.Helper()
		g, err := gitfs.Open(ctx, gitfs.Options{Src: repo, Rev: rev, CacheDir: t.TempDir(), Index: gitfs.IndexOff})
		require.NoError(t, err)
		defer g.Close()
		var rd, rf atomic.Int64
		counted := mounts.Watch(g, mounts.Watcher{Done: func(_ context.Context, c mounts.Call, _ error) {
			switch c.Op {
			case mounts.OpReadDir:
				rd.Add(1)
			case mounts.OpOpen:
				rf.Add(1)
			}
		}})
		_, w := realWorkspace(t, map[string]mounts.FS{"/repo": counted, "/host": openHost(t, t.TempDir())})
		w2, err := New(w.fsys, Options{SemSearch: semsearchtest.Engine(t, srv.URL, cache)})
		require.NoError(t, err)
		out = ok(t, w2, VerbSemSearch, args)
		return out, rd.Load(), rf.Load()
	}

	// Commit one: the query, and the chunks of the three files
	// (cfg.go: 3, srv.go: 2, NOTES.md: 1).
	out, _, _ := search(one, obj{"query": "parse config file"})
	assert.Regexp(t, `^/repo/cfg\.go:5-12 \(score`, out)
	assert.Equal(t, int64(1+6), srv.Inputs.Load())

	// Commit two: only NOTES.md changed, so only its one chunk.
	out, _, _ = search(two, obj{"query": "frobnicated widgets"})
	assert.Regexp(t, `^/repo/NOTES\.md:1-7 \(score`, out)
	assert.Equal(t, int64(1+6+1+1), srv.Inputs.Load())
	texts := srv.Texts()
	assert.Contains(t, texts[len(texts)-1], "frobnicated", "the one text embedded is the changed file's")

	// Commit two again: the list of its files is in the cache, so the
	// mount is not walked, and only the hit's file is read.
	out, readDirs, reads := search(two, obj{"query": "parse config file"})
	assert.Regexp(t, `^/repo/cfg\.go:5-12 \(score`, out)
	assert.Equal(t, int64(0), readDirs, "not walked")
	assert.Equal(t, int64(1), reads, "only the hit's file read")
	assert.Equal(t, int64(1+6+1+1+1), srv.Inputs.Load(), "only the query")

	// A directory inside the mount: its part of the list.
	out, _, _ = search(two, obj{"query": "parse config file socket", "targetDirectories": []string{"/repo/srv"}})
	assert.Regexp(t, `^/repo/srv/srv\.go:3-6 \(score`, out)
	assert.NotContains(t, out, "cfg.go")
	assert.NotContains(t, out, "NOTES.md")
}

// TestSemSearchHonoursPathRules: a file a deny_read rule covers is never
// shown, not even when its vectors are in the cache from a search without
// the rule; a list of a commit's files made under the rule is not kept.
func TestSemSearchHonoursPathRules(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "src")
	testutil.GitInit(t, repo)
	secret := "package cfg\n\n// parseConfigSecret parses the config file of secrets.\nfunc parseConfigSecret() {}\n"
	testutil.GitCommit(t, repo, map[string]string{"cfg.go": semsearchtest.ConfigGo, "secret/key.go": secret, "notes.md": semsearchtest.NotesMD}, "one")
	srv := semsearchtest.Start(t)
	rs, err := policy.Compile(policy.Rules{DenyRead: []string{"/repo/secret/"}})
	require.NoError(t, err)

	search := func(cache string, guarded bool) string {
		t.Helper()
		g, err := gitfs.Open(ctx, gitfs.Options{Src: repo, CacheDir: t.TempDir(), Index: gitfs.IndexOff})
		require.NoError(t, err)
		t.Cleanup(func() { g.Close() })
		u, _ := realWorkspace(t, map[string]mounts.FS{"/repo": g})
		var fsys mounts.FS = u
		if guarded {
			fsys = policy.Guard(u, rs)
		}
		w, err := New(fsys, Options{SemSearch: semsearchtest.Engine(t, srv.URL, cache)})
		require.NoError(t, err)
		return ok(t, w, VerbSemSearch, obj{"query": "parse config file secrets"})
	}

	// Under the rule from the start: the file is not read, and the list
	// of the commit is not kept.
	cache := t.TempDir()
	out := search(cache, true)
	assert.NotContains(t, out, "secret")
	assert.Regexp(t, `^/repo/cfg\.go:5-12`, out)
	trees, err := filepath.Glob(filepath.Join(cache, "semsearch", "trees", "*", "*"))
	require.NoError(t, err)
	assert.Empty(t, trees)

	// Without it, the file is found; the list and its vectors are kept.
	out = search(cache, false)
	assert.Regexp(t, `^/repo/secret/key\.go:3-4`, out)
	trees, err = filepath.Glob(filepath.Join(cache, "semsearch", "trees", "*", "*"))
	require.NoError(t, err)
	assert.Len(t, trees, 1)

	// Under the rule again, with all of it in the cache: still not shown.
	out = search(cache, true)
	assert.NotContains(t, out, "secret")
	assert.Regexp(t, `^/repo/cfg\.go:5-12`, out)
}

// TestSemSearchGitAtTheRoot: a git mount at / with a memory mount below
// it: the search from / finds both mounts' files, the git mount's list
// holding its own files only.
func TestSemSearchGitAtTheRoot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "src")
	testutil.GitInit(t, repo)
	testutil.GitCommit(t, repo, map[string]string{"cfg.go": semsearchtest.ConfigGo}, "one")
	g, err := gitfs.Open(ctx, gitfs.Options{Src: repo, CacheDir: t.TempDir(), Index: gitfs.IndexOff})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	mem := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, mem, "notes.md", []byte(semsearchtest.NotesMD), 0o644))
	srv := semsearchtest.Start(t)
	cache := t.TempDir()
	for range 2 { // listing the commit, then from its list
		_, u := realWorkspace(t, map[string]mounts.FS{"/": g, "/memory": mem})
		w, err := New(u.fsys, Options{SemSearch: semsearchtest.Engine(t, srv.URL, cache)})
		require.NoError(t, err)
		out := ok(t, w, VerbSemSearch, obj{"query": "parse config file socket requests"})
		assert.Contains(t, out, "/cfg.go:5-12")
		assert.Contains(t, out, "/memory/notes.md:1-5")
		out = ok(t, w, VerbSemSearch, obj{"query": "parse config file socket requests", "targetDirectories": []string{"/"}})
		assert.Contains(t, out, "/memory/notes.md:1-5")
	}
	lists, err := filepath.Glob(filepath.Join(cache, "semsearch", "trees", "*", "*"))
	require.NoError(t, err)
	for _, l := range lists {
		data, err := os.ReadFile(l)
		require.NoError(t, err)
		assert.NotContains(t, string(data), "notes.md", "another mount's file in the commit's list")
	}
}

// TestSemSearchHonoursGitignore: in a host mount, what .gitignore names
// is not searched (nor embedded), as grep does not search it.
func TestSemSearchHonoursGitignore(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{".gitignore": "build/\n", "build/gen.go": semsearchtest.ConfigGo, "notes.md": semsearchtest.NotesMD})
	srv := semsearchtest.Start(t)
	_, u := realWorkspace(t, map[string]mounts.FS{"/host": openHost(t, dir)})
	w, err := New(u.fsys, Options{SemSearch: semsearchtest.Engine(t, srv.URL, t.TempDir())})
	require.NoError(t, err)
	out := ok(t, w, VerbSemSearch, obj{"query": "parse config file socket"})
	assert.Contains(t, out, "/host/notes.md:1-5")
	assert.NotContains(t, out, "gen.go")
	for _, text := range srv.Texts() {
		assert.NotContains(t, text, "parseConfig", "an ignored file was embedded")
	}
}
