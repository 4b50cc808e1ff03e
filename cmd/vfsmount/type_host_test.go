package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
)

// hostTypes is a registry holding the host and skills types, whether or not
// mountTypes lists them yet.
func hostTypes() registry {
	reg := mountTypes()
	reg["host"] = hostType()
	reg["skills"] = skillsType()
	return reg
}

// buildOne validates one raw spec and builds it, closing what it opened at
// the end of the test.
func buildOne(t *testing.T, raw rawSpec) (mounts.FS, error) {
	t.Helper()
	spec, err := validateSpec(hostTypes(), raw)
	if err != nil {
		return nil, err
	}
	env := &buildEnv{Logger: slog.New(slog.DiscardHandler)}
	t.Cleanup(func() {
		for i := len(env.onClose) - 1; i >= 0; i-- {
			assert.NoError(t, env.onClose[i]())
		}
	})
	return hostTypes()[spec.Type].Build(context.Background(), &spec, env)
}

func TestHostAndSkillsSpecs(t *testing.T) {
	base := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(base, "out"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "skills", "pdf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "skills", "pdf", "SKILL.md"),
		[]byte("---\nname: pdf\ndescription: PDFs.\n---\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "badskills", "Bad"), 0o755))

	tests := []struct {
		name     string
		spec     string
		wantCaps mounts.Capability
		wantType string
		// errParts, when set, must all appear in the error, which must
		// exit 2.
		errParts []string
	}{
		{name: "host", spec: "type=host,src=out,dst=/host", wantType: "host",
			wantCaps: mounts.CapMutating | mounts.CapXattr | mounts.CapStatFS},
		{name: "host ro", spec: "type=host,src=./out,dst=/host,ro", wantType: "host",
			wantCaps: mounts.CapXattr | mounts.CapStatFS},
		{name: "host readonly=false", spec: "type=host,source=out,target=/host,readonly=false", wantType: "host",
			wantCaps: mounts.CapMutating | mounts.CapXattr | mounts.CapStatFS},
		{name: "skills", spec: "type=skills,src=skills,dst=/agent/skills", wantType: "skills",
			wantCaps: mounts.CapXattr | mounts.CapStatFS},
		{name: "host missing src", spec: "type=host,src=nope,dst=/host",
			errParts: []string{`--mount "type=host,src=nope,dst=/host"`, "does not exist"}},
		{name: "host src is a file", spec: "type=host,src=file,dst=/host",
			errParts: []string{"is not a directory"}},
		{name: "host no src", spec: "type=host,dst=/host", errParts: []string{`needs key "src"`}},
		{name: "host unknown key", spec: "type=host,src=out,dst=/host,rev=x", errParts: []string{`unknown key "rev"`}},
		{name: "skills ro is not a key", spec: "type=skills,src=skills,dst=/s,ro", errParts: []string{`unknown key "ro"`}},
		{name: "skills invalid", spec: "type=skills,src=badskills,dst=/agent/skills",
			errParts: []string{`invalid skill "Bad"`, "lowercase"}},
		{name: "skills missing src", spec: "type=skills,src=nope,dst=/agent/skills", errParts: []string{"does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := parseSpec(tt.spec, base)
			require.NoError(t, err)
			fsys, err := buildOne(t, raw)
			if tt.errParts != nil {
				require.Error(t, err)
				assert.Equal(t, exitUsage, exitCode(err), "bad input exits 2")
				for _, p := range tt.errParts {
					assert.Contains(t, err.Error(), p)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantCaps, mounts.Capabilities(fsys))
			assert.Equal(t, tt.wantType, mounts.Describe(fsys).Type)
		})
	}
}

// TestSkillsFromGit serves the skills of a commit: the skills mount takes
// the git mount the CLI opened, as it takes a host one.
func TestSkillsFromGit(t *testing.T) {
	ctx := context.Background()
	dir, sha := testutil.GitRepo(t, map[string]string{
		"tools/skills/pdf/SKILL.md": "---\nname: pdf\ndescription: PDFs.\n---\n",
		"tools/skills/Bad/SKILL.md": "---\nname: Bad\ndescription: no.\n---\n",
		"skills/csv/SKILL.md":       "---\nname: csv\ndescription: Tables.\n---\n",
	})
	build := func(spec string) (mounts.FS, error) {
		raw, err := parseSpec(spec, "/")
		require.NoError(t, err)
		return buildOne(t, raw)
	}

	fsys, err := build("type=skills,src=" + dir + ",rev=" + sha + ",subdir=skills,dst=/agent/skills")
	require.NoError(t, err)
	assert.Equal(t, "skills", mounts.Describe(fsys).Type)
	assert.False(t, mounts.Writable(fsys))
	cat, err := mounts.ReadFile(ctx, fsys, "SKILLS.md")
	require.NoError(t, err)
	assert.Contains(t, string(cat), "## csv")
	got, err := mounts.ReadFile(ctx, fsys, "csv/SKILL.md")
	require.NoError(t, err)
	assert.Contains(t, string(got), "Tables.")

	for _, tt := range []struct{ name, spec, mention string }{
		{"invalid skill in the commit", "type=skills,src=" + dir + ",rev=main,subdir=tools/skills,dst=/s", `invalid skill "Bad"`},
		{"rev does not exist", "type=skills,src=" + dir + ",rev=nope,dst=/s", `rev "nope"`},
		{"subdir without rev", "type=skills,src=" + dir + ",subdir=skills,dst=/s", "subdir needs rev"},
		{"URL without rev", "type=skills,src=https://example.com/skills.git,dst=/s", "give rev="},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := build(tt.spec)
			require.Error(t, err)
			assert.Equal(t, exitUsage, exitCode(err), "bad input exits 2: %v", err)
			assert.Contains(t, err.Error(), tt.mention)
		})
	}
}

func TestHostAndSkillsConfig(t *testing.T) {
	base := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(base, "out"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "skills"), 0o755))
	_, raws, err := parseConfig([]byte(`
mounts:
  - {type: host, src: out, dst: /host, ro: true}
  - type: skills
    src: ./skills
    dst: /agent/skills
`), "ws.yaml", base)
	require.NoError(t, err)
	require.Len(t, raws, 2)
	ro, err := buildOne(t, raws[0])
	require.NoError(t, err)
	assert.False(t, mounts.Writable(ro))
	sk, err := buildOne(t, raws[1])
	require.NoError(t, err)
	cat, err := mounts.ReadFile(context.Background(), sk, "SKILLS.md")
	require.NoError(t, err)
	assert.Contains(t, string(cat), "No skills are installed.")
}
