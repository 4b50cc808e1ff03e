package main

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/workspace"
)

// testTypes is a registry with a key of every kind, so the validator is
// exercised beyond what the memory type needs.
func testTypes() registry {
	reg := mountTypes()
	reg["demo"] = mountType{
		Name:    "demo",
		Example: "type=demo,src=.,dst=/demo",
		Keys: map[string]keySpec{
			"src": {Kind: kindPath, Required: true},
			"rev": {Kind: kindString},
			"ro":  {Kind: kindBool},
			"url": {Kind: kindSource},
		},
		Build: func(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
			return memfs.New(memfs.Options{}), nil
		},
	}
	return reg
}

func TestParseAndValidateSpec(t *testing.T) {
	const base = "/base"
	tests := []struct {
		name   string
		spec   string
		want   mountSpec // Origin is filled in from spec
		values map[string]any
		errMsg string // the whole message after the origin, "" for success
	}{
		{name: "memory", spec: "type=memory,dst=/memory",
			want: mountSpec{Type: "memory", Dst: "/memory"}},
		{name: "root dst", spec: "type=memory,dst=/",
			want: mountSpec{Type: "memory", Dst: "/"}},
		{name: "nested dst", spec: "dst=/agent/notes,type=memory",
			want: mountSpec{Type: "memory", Dst: "/agent/notes"}},
		{name: "docker aliases", spec: "type=demo,source=sub/dir,target=/d,readonly",
			want:   mountSpec{Type: "demo", Dst: "/d"},
			values: map[string]any{"src": "/base/sub/dir", "ro": true}},
		{name: "absolute src kept, cleaned", spec: "type=demo,src=/x/./y/,dst=/d",
			want: mountSpec{Type: "demo", Dst: "/d"}, values: map[string]any{"src": "/x/y"}},
		{name: "quoted value with a comma", spec: `type=demo,"src=a,b",rev=v1,dst=/d`,
			want: mountSpec{Type: "demo", Dst: "/d"}, values: map[string]any{"src": "/base/a,b", "rev": "v1"}},
		{name: "bool false", spec: "type=demo,src=.,ro=false,dst=/d",
			want: mountSpec{Type: "demo", Dst: "/d"}, values: map[string]any{"src": "/base", "ro": false}},
		{name: "value with equals sign", spec: "type=demo,src=.,rev=a=b,dst=/d",
			want: mountSpec{Type: "demo", Dst: "/d"}, values: map[string]any{"src": "/base", "rev": "a=b"}},

		{name: "source as URL", spec: "type=demo,src=.,url=https://example.com/r.git,dst=/d",
			want: mountSpec{Type: "demo", Dst: "/d"}, values: map[string]any{"src": "/base", "url": "https://example.com/r.git"}},
		{name: "source scp-style", spec: "type=demo,src=.,url=git@example.com:r.git,dst=/d",
			want: mountSpec{Type: "demo", Dst: "/d"}, values: map[string]any{"src": "/base", "url": "git@example.com:r.git"}},
		{name: "source as relative path", spec: "type=demo,src=.,url=./a:b/c,dst=/d",
			want: mountSpec{Type: "demo", Dst: "/d"}, values: map[string]any{"src": "/base", "url": "/base/a:b/c"}},

		{name: "unknown type", spec: "type=nope,dst=/x",
			errMsg: `unknown mount type "nope" (known: {known})`},
		{name: "missing type", spec: "dst=/x",
			errMsg: `missing key "type" (one of {known})`},
		{name: "empty type", spec: "type=,dst=/x",
			errMsg: `key "type" needs a value (one of {known})`},
		{name: "missing dst", spec: "type=memory",
			errMsg: `missing key "dst" (an absolute path such as /memory)`},
		{name: "bare dst", spec: "type=memory,dst",
			errMsg: `key "dst" needs a value (an absolute path such as /memory)`},
		{name: "relative dst", spec: "type=memory,dst=memory",
			errMsg: `dst "memory" must be an absolute path (start with /)`},
		{name: "unclean dst dotdot", spec: "type=memory,dst=/a/../b",
			errMsg: `dst "/a/../b" is not clean (did you mean "/b"?)`},
		{name: "unclean dst trailing slash", spec: "type=memory,dst=/memory/",
			errMsg: `dst "/memory/" is not clean (did you mean "/memory"?)`},
		{name: "unclean dst double slash", spec: "type=memory,dst=//m",
			errMsg: `dst "//m" is not clean (did you mean "/m"?)`},
		{name: "control character in dst", spec: "type=memory,dst=/a\x01b",
			errMsg: `dst "/a\x01b" holds an invalid name (control character or empty component)`},
		{name: "unknown key", spec: "type=memory,dst=/m,colour=blue",
			errMsg: `unknown key "colour" for type memory (allowed: type, dst, max_bytes, max_files, persist)`},
		{name: "unknown key lists allowed", spec: "type=demo,src=.,dst=/d,size=1",
			errMsg: `unknown key "size" for type demo (allowed: type, dst, rev, ro, src, url)`},
		{name: "duplicate key", spec: "type=memory,dst=/a,dst=/b",
			errMsg: `key "dst" given twice`},
		{name: "duplicate key through alias", spec: "type=memory,dst=/a,target=/b",
			errMsg: `key "dst" given twice`},
		{name: "bad bool", spec: "type=demo,src=.,dst=/d,ro=maybe",
			errMsg: `key "ro": want true or false, got "maybe"`},
		{name: "bare string key", spec: "type=demo,src=.,dst=/d,rev",
			errMsg: `key "rev": needs a value (a string)`},
		{name: "empty path", spec: "type=demo,src=,dst=/d",
			errMsg: `key "src": needs a value (a path)`},
		{name: "missing required key", spec: "type=demo,dst=/d",
			errMsg: `type demo needs key "src"`},
		{name: "empty spec", spec: "",
			errMsg: `empty mount spec (want e.g. type=memory,dst=/memory)`},
		{name: "stray comma", spec: "type=memory,,dst=/m",
			errMsg: `empty option (stray comma?)`},
		{name: "no key", spec: "type=memory,=x,dst=/m",
			errMsg: `option "=x" has no key`},
		{name: "two lines", spec: "type=memory\ndst=/m",
			errMsg: `a mount spec is one line`},
		{name: "bad quoting", spec: `type=memory,dst=/m"x"`,
			errMsg: `column 19: bare " in non-quoted-field`},
	}
	reg := testTypes()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			origin := fmt.Sprintf("--mount %q", tc.spec)
			raw, err := parseSpec(tc.spec, base)
			if err == nil {
				assert.Equal(t, origin, raw.Origin)
				var got mountSpec
				got, err = validateSpec(reg, raw)
				if tc.errMsg == "" {
					require.NoError(t, err)
					assert.Equal(t, tc.want.Type, got.Type)
					assert.Equal(t, tc.want.Dst, got.Dst)
					if tc.values == nil {
						tc.values = map[string]any{}
					}
					assert.Equal(t, tc.values, got.values)
					return
				}
			}
			require.Error(t, err, "want error %q", tc.errMsg)
			assert.Equal(t, exitUsage, exitCode(err), "exit code")
			assert.Equal(t, origin+": "+strings.ReplaceAll(tc.errMsg, "{known}", reg.names()), err.Error())
		})
	}
}

func TestSpecAccessors(t *testing.T) {
	raw, err := parseSpec("type=demo,src=.,rev=main,ro,dst=/d", "/w")
	require.NoError(t, err)
	s, err := validateSpec(testTypes(), raw)
	require.NoError(t, err)
	assert.Equal(t, "/w", s.String("src"))
	assert.Equal(t, "main", s.String("rev"))
	assert.True(t, s.Bool("ro"))
	assert.True(t, s.Has("ro"))
	assert.False(t, s.Has("missing"))
	assert.Equal(t, "", s.String("missing"))
	assert.False(t, s.Bool("missing"))
}

func TestValidateSpecsDuplicateDst(t *testing.T) {
	a, err := parseSpec("type=memory,dst=/m", "/")
	require.NoError(t, err)
	b, err := parseSpec("type=memory,target=/m", "/")
	require.NoError(t, err)
	_, err = validateSpecs(mountTypes(), []rawSpec{a, b})
	require.Error(t, err)
	assert.Equal(t, exitUsage, exitCode(err))
	assert.Equal(t, `--mount "type=memory,target=/m": dst "/m" is already mounted by --mount "type=memory,dst=/m"`, err.Error())

	specs, err := validateSpecs(mountTypes(), []rawSpec{a})
	require.NoError(t, err)
	require.Len(t, specs, 1)
	assert.Equal(t, "/m", specs[0].Dst)
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string
		want   []string // "Origin Type Dst" per mount
		errMsg string
	}{
		{name: "flow and block entries", yaml: `
mounts:
  - {type: memory, dst: /memory}
  - type: demo
    src: sub
    ro: true
    dst: /d
`, want: []string{"ws.yaml:3 memory /memory", "ws.yaml:4 demo /d"}},
		{name: "bare bool in flow mapping", yaml: "mounts:\n  - {type: demo, src: ., dst: /d, ro}\n",
			want: []string{"ws.yaml:2 demo /d"}},
		{name: "number as string value", yaml: "mounts:\n  - {type: demo, src: ., dst: /d, rev: 1234}\n",
			want: []string{"ws.yaml:2 demo /d"}},
		{name: "alias", yaml: "mounts:\n  - {type: memory, dst: &m /memory}\n  - {type: memory, dst: *m}\n",
			errMsg: `ws.yaml:3: dst "/memory" is already mounted by ws.yaml:2`},
		{name: "empty file", yaml: "", want: nil},
		{name: "comments only", yaml: "# nothing\n", want: nil},
		{name: "empty mounts", yaml: "mounts: []\n", want: nil},

		{name: "unknown top-level key", yaml: "mounts: []\ntoolz: [read]\n",
			errMsg: `ws.yaml:2: unknown key "toolz"`},
		{name: "mounts not a list", yaml: "mounts: memory\n",
			errMsg: "ws.yaml:1: want a list of mounts, got a string (memory)"},
		{name: "document not a mapping", yaml: "- {type: memory, dst: /m}\n",
			errMsg: "ws.yaml:1: want a mapping with keys: mounts, tools, policy, audit, approval, dry_run, checkpoint, lints, got a list"},
		{name: "entry not a mapping", yaml: "mounts:\n  - memory\n",
			errMsg: `ws.yaml:2: a mount must be a mapping such as {type: memory, dst: /memory}, got the value "memory"`},
		{name: "nested value", yaml: "mounts:\n  - type: memory\n    dst:\n      - /a\n",
			errMsg: `ws.yaml:4: key "dst": want a single value, got a list`},
		{name: "syntax error", yaml: "mounts:\n  - {type: memory\n",
			errMsg: "ws.yaml:1: did not find expected ',' or '}'"},
		{name: "tab indentation", yaml: "mounts:\n\t- {type: memory, dst: /m}\n",
			errMsg: "ws.yaml:2: found character that cannot start any token"},
		{name: "two documents", yaml: "mounts: []\n---\nmounts: []\n",
			errMsg: "ws.yaml:2: a config file holds one YAML document"},

		// Validation errors name the entry's line.
		{name: "unknown type", yaml: "mounts:\n  - {type: nope, dst: /x}\n",
			errMsg: `ws.yaml:2: unknown mount type "nope" (known: {known})`},
		{name: "relative dst", yaml: "mounts:\n  - {type: memory, dst: memory}\n",
			errMsg: `ws.yaml:2: dst "memory" must be an absolute path (start with /)`},
		{name: "unknown key", yaml: "mounts:\n  - {type: memory, dst: /m, colour: blue}\n",
			errMsg: `ws.yaml:2: unknown key "colour" for type memory (allowed: type, dst, max_bytes, max_files, persist)`},
		{name: "bool type error", yaml: "mounts:\n  - {type: demo, src: ., dst: /d, ro: maybe}\n",
			errMsg: `ws.yaml:2: key "ro": want true or false, got "maybe"`},
		{name: "duplicate dst", yaml: "mounts:\n  - {type: memory, dst: /m}\n  - {type: memory, dst: /m}\n",
			errMsg: `ws.yaml:3: dst "/m" is already mounted by ws.yaml:2`},
		{name: "duplicate key in entry", yaml: "mounts:\n  - {type: memory, dst: /a, dst: /b}\n",
			errMsg: `ws.yaml:2: key "dst" given twice`},
	}
	reg := testTypes()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, raws, err := parseConfig([]byte(tc.yaml), "ws.yaml", "/cfg")
			var specs []mountSpec
			if err == nil {
				specs, err = validateSpecs(reg, raws)
			}
			if tc.errMsg != "" {
				require.Error(t, err)
				assert.Equal(t, exitUsage, exitCode(err), "exit code")
				assert.Equal(t, strings.ReplaceAll(tc.errMsg, "{known}", reg.names()), errorLine(err))
				return
			}
			require.NoError(t, err)
			var got []string
			for _, s := range specs {
				got = append(got, s.Origin+" "+s.Type+" "+s.Dst)
				if s.Has("src") {
					assert.True(t, strings.HasPrefix(s.String("src"), "/cfg"), "src %q resolved against the config's directory", s.String("src"))
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "ws.yaml")
	writeFile(t, name, "mounts:\n  - {type: demo, src: data, dst: /d}\n")
	_, raws, err := loadConfig(name)
	require.NoError(t, err)
	specs, err := validateSpecs(testTypes(), raws)
	require.NoError(t, err)
	require.Len(t, specs, 1)
	assert.Equal(t, filepath.Join(dir, "data"), specs[0].String("src"), "relative to the config file")
	assert.Equal(t, name+":2", specs[0].Origin)

	_, _, err = loadConfig(filepath.Join(dir, "missing.yaml"))
	require.Error(t, err)
	assert.Equal(t, exitUsage, exitCode(err))
	assert.Equal(t, "config "+filepath.Join(dir, "missing.yaml")+": cannot read: no such file or directory", err.Error())

	_, _, err = loadConfig(dir)
	require.Error(t, err)
	assert.Equal(t, "config "+dir+": cannot read: is a directory", err.Error())
}

func TestBuildWorkspace(t *testing.T) {
	ctx := context.Background()
	reg := testTypes()
	// "file" mounts hold one regular file, f, so a dst can be put under a file.
	reg["file"] = mountType{Name: "file", Keys: map[string]keySpec{},
		Build: func(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
			m := memfs.New(memfs.Options{})
			return m, mounts.WriteFile(ctx, m, "f", []byte("x"), 0o644)
		}}
	closed := 0
	reg["closer"] = mountType{Name: "closer", Keys: map[string]keySpec{},
		Build: func(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
			env.OnClose(func() error { closed++; return nil })
			return memfs.New(memfs.Options{}), nil
		}}
	build := func(specs ...string) (*workspace.Workspace, error) {
		var raws []rawSpec
		for _, s := range specs {
			raw, err := parseSpec(s, "/")
			require.NoError(t, err)
			raws = append(raws, raw)
		}
		ms, err := validateSpecs(reg, raws)
		require.NoError(t, err)
		return buildWorkspace(ctx, &workspaceConfig{Mounts: ms, Types: reg}, nil)
	}

	ws, err := build("type=memory,dst=/memory", "type=closer,dst=/agent", "type=memory,dst=/agent/notes")
	require.NoError(t, err)
	var prefixes []string
	for _, m := range ws.Mounts() {
		prefixes = append(prefixes, m.Prefix+" "+m.Type)
		assert.True(t, m.Writable, "%s writable", m.Prefix)
	}
	assert.ElementsMatch(t, []string{"/memory memory", "/agent memory", "/agent/notes memory"}, prefixes)
	require.NoError(t, mounts.WriteFile(ctx, ws.FS, "agent/notes/n.txt", []byte("hi"), 0o644))
	got, err := mounts.ReadFile(ctx, ws.FS, "agent/notes/n.txt")
	require.NoError(t, err)
	assert.Equal(t, "hi", string(got))
	assert.Equal(t, 0, closed, "cleanups wait for Close")
	require.NoError(t, ws.Close())
	assert.Equal(t, 1, closed)

	_, err = build("type=closer,dst=/c", "type=file,dst=/a", "type=memory,dst=/a/f/x")
	require.Error(t, err, "a dst under a file")
	assert.Equal(t, exitUsage, exitCode(err))
	assert.Contains(t, errorLine(err), "mount table: ")
	assert.Contains(t, errorLine(err), "/a/f")
	assert.Equal(t, 2, closed, "a failed build releases what it built")
}

func TestDefaultMounts(t *testing.T) {
	ctx := context.Background()

	t.Run("outside a repository: memory only", func(t *testing.T) {
		t.Chdir(t.TempDir())
		var wf workspaceFlags
		cfg, err := wf.load(ctx, nil)
		require.NoError(t, err)
		require.Len(t, cfg.Mounts, 1)
		assert.Equal(t, "memory", cfg.Mounts[0].Type)
		assert.Equal(t, "/memory", cfg.Mounts[0].Dst)
	})

	t.Run("inside a repository: its HEAD on /repo, memory on /memory", func(t *testing.T) {
		top := t.TempDir()
		testutil.GitInit(t, top)
		require.NoError(t, os.MkdirAll(filepath.Join(top, "sub", "deeper"), 0o755))
		testutil.GitCommit(t, top, map[string]string{"sub/f.txt": "hello\n"}, "one")
		t.Chdir(filepath.Join(top, "sub", "deeper"))

		var wf workspaceFlags
		cfg, err := wf.load(ctx, nil)
		require.NoError(t, err)
		require.Len(t, cfg.Mounts, 2)
		assert.Equal(t, "git", cfg.Mounts[0].Type)
		assert.Equal(t, "/repo", cfg.Mounts[0].Dst)
		assert.Equal(t, "memory", cfg.Mounts[1].Type)

		ws, err := buildWorkspace(ctx, cfg, nil)
		require.NoError(t, err)
		defer ws.Close()
		data, err := mounts.ReadFile(ctx, ws.FS, "repo/sub/f.txt")
		require.NoError(t, err, "the repository's top is served, not the working directory")
		assert.Equal(t, "hello\n", string(data))
		require.Len(t, ws.Mounts(), 2)
		assert.Equal(t, "/repo", ws.Mounts()[1].Prefix)
		assert.False(t, ws.Mounts()[1].Writable, "/repo is read-only")

		wf.Mounts = []string{"type=memory,dst=/scratch"}
		cfg, err = wf.load(ctx, nil)
		require.NoError(t, err)
		require.Len(t, cfg.Mounts, 1, "flags replace the default")
		assert.Equal(t, "/scratch", cfg.Mounts[0].Dst)
	})

	t.Run("a repository without commits: /repo is left out", func(t *testing.T) {
		top := t.TempDir()
		testutil.GitInit(t, top)
		t.Chdir(top)
		var wf workspaceFlags
		ws, _, err := wf.open(ctx, nil)
		require.NoError(t, err)
		defer ws.Close()
		require.Len(t, ws.Mounts(), 1)
		assert.Equal(t, "/memory", ws.Mounts()[0].Prefix)
	})
}

func TestOpenWorkspace(t *testing.T) {
	ctx := context.Background()
	wf := workspaceFlags{Mounts: []string{"type=memory,dst=/a", "type=memory,dst=/a/b"}}
	ws, _, err := wf.open(ctx, nil)
	require.NoError(t, err)
	defer ws.Close()
	entries, err := ws.FS.ReadDir(ctx, "a")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "b", entries[0].Name, "the nested mount shows in its parent")

	wf.Mounts = []string{"type=memory"}
	_, _, err = wf.open(ctx, nil)
	assert.Equal(t, exitUsage, exitCode(err))
}

func TestConfigAndFlagsMerge(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "ws.yaml")
	writeFile(t, name, "mounts:\n  - {type: memory, dst: /a}\n")
	wf := workspaceFlags{Config: name, Mounts: []string{"type=memory,dst=/b"}}
	cfg, err := wf.load(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, cfg.Mounts, 2)
	assert.Equal(t, "/a", cfg.Mounts[0].Dst, "config first")
	assert.Equal(t, "/b", cfg.Mounts[1].Dst, "flags appended")

	wf.Mounts = []string{"type=memory,dst=/a"}
	_, err = wf.load(context.Background(), nil)
	require.Error(t, err)
	assert.Equal(t, `--mount "type=memory,dst=/a": dst "/a" is already mounted by `+name+":2", err.Error())
}

// FuzzParseSpec: the spec parser and validator never panic, and what they
// accept is a usable mount.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"type=memory,dst=/memory", "type=memory,dst=/a/../b", `type=demo,"src=a,b",ro,dst=/d`,
		"type=git,src=.,rev=main,dst=/repo", "", ",", "=", `"`, "type=memory,dst=/\x00",
	} {
		f.Add(s)
	}
	reg := testTypes()
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := parseSpec(s, "/base")
		if err != nil {
			assert.Equal(t, exitUsage, exitCode(err))
			return
		}
		spec, err := validateSpec(reg, raw)
		if err != nil {
			assert.Equal(t, exitUsage, exitCode(err))
			assert.True(t, strings.HasPrefix(err.Error(), raw.Origin+": "), "error %q names the spec", err)
			return
		}
		assert.Equal(t, path.Clean(spec.Dst), spec.Dst)
		assert.True(t, path.IsAbs(spec.Dst))
		assert.Contains(t, reg, spec.Type)
	})
}

// FuzzLoadConfig: the config parser never panics; errors are usage errors
// of one line naming the file.
func FuzzLoadConfig(f *testing.F) {
	for _, s := range []string{
		"mounts:\n  - {type: memory, dst: /memory}\n",
		"mounts:\n  - type: demo\n    src: .\n    ro:\n    dst: /d\n",
		"mounts: x\n", "tools: []\n", "mounts:\n  - [a]\n", "a: &a [*a]\n", "---\n---\n",
		"mounts:\n  - {type: memory, dst: /m, dst: /n}\n",
	} {
		f.Add([]byte(s))
	}
	reg := testTypes()
	f.Fuzz(func(t *testing.T, data []byte) {
		_, raws, err := parseConfig(data, "ws.yaml", "/cfg")
		if err == nil {
			_, err = validateSpecs(reg, raws)
		}
		if err != nil {
			assert.Equal(t, exitUsage, exitCode(err))
			line := errorLine(err)
			assert.NotContains(t, line, "\n")
			assert.True(t, strings.HasPrefix(line, "ws.yaml"), "error %q names the file", line)
		}
	})
}
