package skillsfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

func skillMD(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n# " + name + "\n\nBody.\n"
}

// writeTree writes name -> content under dir; a content of "DIR" makes an
// empty directory.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if content == "DIR" {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// openDir serves the skills in the host directory dir, as the CLI does: a
// read-only host mount under the skills mount. The host mount is closed at
// the end of the test.
func openDir(t *testing.T, dir string, opts Options) (*FS, error) {
	t.Helper()
	src, err := hostfs.Open(dir, hostfs.Options{ReadOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, src.(interface{ Close() error }).Close()) })
	return New(src, opts)
}

func TestValidation(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name  string
		files map[string]string
		// wantSkill is the directory the error must name; wantRule a
		// fragment of the rule. Empty wantSkill means the mount opens.
		wantSkill, wantRule string
	}{
		{"valid", map[string]string{"pdf/SKILL.md": skillMD("pdf", "Work with PDFs.")}, "", ""},
		{"valid with extra keys and CRLF", map[string]string{"a-1/SKILL.md": "---\r\nname: a-1\r\ndescription: d\r\nlicense: MIT\r\nallowed-tools: [bash]\r\n---\r\nbody"}, "", ""},
		{"valid folded description", map[string]string{"x/SKILL.md": "---\nname: x\ndescription: >\n  two\n  lines\n---\n"}, "", ""},
		{"valid at 64 characters", map[string]string{strings.Repeat("a", 64) + "/SKILL.md": skillMD(strings.Repeat("a", 64), "d")}, "", ""},
		{"valid 1024-character description", map[string]string{"x/SKILL.md": skillMD("x", strings.Repeat("é", 1024))}, "", ""},
		{"top-level files are not skills", map[string]string{"README.md": "hi", "x/SKILL.md": skillMD("x", "d")}, "", ""},
		{"hidden directories are not skills", map[string]string{".git/HEAD": "ref", "x/SKILL.md": skillMD("x", "d")}, "", ""},
		{"no SKILL.md", map[string]string{"empty": "DIR"}, "empty", "no SKILL.md"},
		{"no front matter", map[string]string{"x/SKILL.md": "# x\n"}, "x", "must begin with YAML front matter"},
		{"front matter not closed", map[string]string{"x/SKILL.md": "---\nname: x\ndescription: d\n"}, "x", "no closing"},
		{"front matter not YAML", map[string]string{"x/SKILL.md": "---\nname: [x\n---\n"}, "x", "not valid YAML"},
		{"front matter not a mapping", map[string]string{"x/SKILL.md": "---\n- x\n---\n"}, "x", "must be a YAML mapping"},
		{"no name", map[string]string{"x/SKILL.md": "---\ndescription: d\n---\n"}, "x", "has no name"},
		{"name differs from directory", map[string]string{"x/SKILL.md": skillMD("y", "d")}, "x", `name "y" must equal the directory name "x"`},
		{"name not a string", map[string]string{"x/SKILL.md": "---\nname: [x]\ndescription: d\n---\n"}, "x", "name must be a string"},
		{"uppercase directory", map[string]string{"PDF/SKILL.md": skillMD("PDF", "d")}, "PDF", "lowercase letters, digits and hyphens"},
		{"underscore", map[string]string{"a_b/SKILL.md": skillMD("a_b", "d")}, "a_b", "lowercase letters, digits and hyphens"},
		{"name too long", map[string]string{long + "/SKILL.md": skillMD(long, "d")}, long, "1 to 64"},
		{"no description", map[string]string{"x/SKILL.md": "---\nname: x\n---\n"}, "x", "description must not be empty"},
		{"blank description", map[string]string{"x/SKILL.md": "---\nname: x\ndescription: '  '\n---\n"}, "x", "description must not be empty"},
		{"description too long", map[string]string{"x/SKILL.md": skillMD("x", strings.Repeat("d", 1025))}, "x", "1025 characters, at most 1024"},
		{"SKILL.md is a directory", map[string]string{"x/SKILL.md/": "DIR"}, "x", "SKILL.md cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			fsys, err := openDir(t, dir, Options{})
			if tt.wantSkill == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Nil(t, fsys)
			assert.ErrorIs(t, err, ErrInvalidSkill)
			assert.Contains(t, err.Error(), `"`+tt.wantSkill+`"`, "names the skill directory")
			assert.Contains(t, err.Error(), tt.wantRule)
			assert.NotContains(t, err.Error(), dir, "the host path stays out of skill errors")
		})
	}
}

func TestValidationReportsEverySkill(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"good/SKILL.md": skillMD("good", "d"),
		"bad1/SKILL.md": skillMD("other", "d"),
		"bad2":          "DIR",
	})
	_, err := openDir(t, dir, Options{})
	require.ErrorIs(t, err, ErrInvalidSkill)
	assert.Contains(t, err.Error(), `"bad1"`)
	assert.Contains(t, err.Error(), `"bad2"`)
	assert.NotContains(t, err.Error(), `"good"`)
}

func TestSourceErrors(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"SKILLS.md": "mine", "x/SKILL.md": skillMD("x", "d")})
	_, err := openDir(t, dir, Options{})
	assert.ErrorIs(t, err, ErrBadSource)
	assert.Contains(t, err.Error(), "SKILLS.md")

	// A missing host directory is the host mount's error, before the skills
	// mount sees a source: cmd/vfsmount's TestHostAndSkillsSpecs checks
	// the CLI's message for it. A source that cannot be listed is this
	// mount's.
	_, err = New(unlistable{memfs.New(memfs.Options{})}, Options{})
	assert.ErrorIs(t, err, ErrBadSource)
	assert.ErrorIs(t, err, fs.ErrPermission)

	_, err = openDir(t, dir, Options{Prefix: "agent/skills"})
	assert.ErrorContains(t, err, "absolute")
}

// unlistable is a source whose directories cannot be read.
type unlistable struct{ mounts.FS }

func (unlistable) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	return nil, mounts.PathErr("readdir", name, fs.ErrPermission)
}

// TestAnySource serves skills from a memory tree: any mount can be the
// source, and a writable one is still served without a write verb.
func TestAnySource(t *testing.T) {
	ctx := context.Background()
	src := memfs.New(memfs.Options{})
	require.NoError(t, mounts.MkdirAll(ctx, src, "pdf", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, src, "pdf/SKILL.md", []byte(skillMD("pdf", "PDFs.")), 0o644))
	require.True(t, mounts.Writable(src))

	fsys, err := New(src, Options{})
	require.NoError(t, err)
	assert.False(t, mounts.Writable(fsys), "the skills mount has no write verb")
	assert.Zero(t, mounts.Capabilities(fsys)&mounts.CapMutating)
	assert.Equal(t, mounts.Description{Type: "skills", Source: "skills"}, mounts.Describe(fsys),
		"a memory source is not external")
	cat, err := mounts.ReadFile(ctx, fsys, CatalogName)
	require.NoError(t, err)
	assert.Contains(t, string(cat), "Path: /agent/skills/pdf/SKILL.md")

	require.NoError(t, mounts.MkdirAll(ctx, src, "bad_name", 0o755))
	_, err = New(src, Options{})
	assert.ErrorIs(t, err, ErrInvalidSkill, "validation is the same for every source")
}

func TestServesLiveWithCatalog(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"pdf/SKILL.md":       skillMD("pdf", "Extract text\n  from PDFs."),
		"pdf/scripts/run.sh": "#!/bin/sh\necho hi\n",
		"README.md":          "about",
	})
	require.NoError(t, os.Chmod(filepath.Join(dir, "pdf/scripts/run.sh"), 0o755))
	fsys, err := openDir(t, dir, Options{Prefix: "/ws/skills"})
	require.NoError(t, err)
	ctx := context.Background()

	assert.Equal(t, mounts.CapXattr|mounts.CapStatFS, mounts.Capabilities(fsys), "no write capability")
	assert.Equal(t, mounts.Description{Type: "skills", Source: "skills", External: true}, mounts.Describe(fsys))
	assert.ErrorIs(t, mounts.WriteFile(ctx, fsys, "pdf/new", nil, 0o644), mounts.ErrReadOnly)

	a, err := fsys.Stat(ctx, "pdf/scripts/run.sh")
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o755), a.Mode, "scripts keep their exec bits")

	ents, err := fsys.ReadDir(ctx, ".")
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"README.md", "SKILLS.md", "pdf"}, names)

	cat, err := mounts.ReadFile(ctx, fsys, CatalogName)
	require.NoError(t, err)
	assert.Contains(t, string(cat), "## pdf\n\nExtract text from PDFs.\n\nPath: /ws/skills/pdf/SKILL.md\n")
	ca, err := fsys.Stat(ctx, CatalogName)
	require.NoError(t, err)
	assert.EqualValues(t, len(cat), ca.Size)
	assert.Equal(t, fs.FileMode(0o444), ca.Mode)

	// Live: a new skill and an edited description show at the next read.
	writeTree(t, dir, map[string]string{
		"csv/SKILL.md": skillMD("csv", "Tables."),
		"pdf/SKILL.md": skillMD("pdf", "PDFs, now better."),
	})
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "csv/SKILL.md"), future, future))
	cat, err = mounts.ReadFile(ctx, fsys, CatalogName)
	require.NoError(t, err)
	s := string(cat)
	assert.Contains(t, s, "Path: /ws/skills/csv/SKILL.md")
	assert.Contains(t, s, "PDFs, now better.")
	assert.Less(t, strings.Index(s, "## csv"), strings.Index(s, "## pdf"), "sorted by name")
	ca, err = fsys.Stat(ctx, CatalogName)
	require.NoError(t, err)
	assert.True(t, ca.Mtime.Equal(future), "the catalog's time follows the newest SKILL.md")

	// A skill broken after the mount is left out, not served wrong.
	writeTree(t, dir, map[string]string{"csv/SKILL.md": "no front matter"})
	cat, err = mounts.ReadFile(ctx, fsys, CatalogName)
	require.NoError(t, err)
	assert.NotContains(t, string(cat), "## csv")
	sk, err := fsys.Skills(ctx)
	require.NoError(t, err)
	require.Len(t, sk, 1)
	assert.Equal(t, "pdf", sk[0].Name)

	_, err = fsys.ReadLink(ctx, CatalogName)
	assert.ErrorIs(t, err, fs.ErrInvalid)
	_, err = fsys.GetXattr(ctx, CatalogName, "user.x")
	assert.ErrorIs(t, err, mounts.ErrNoAttr)
}

func TestExtraKeysKept(t *testing.T) {
	s, err := parseSkill("x", []byte("---\nname: x\ndescription: d\nlicense: MIT\nmetadata:\n  version: 2\n---\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"license": "MIT", "metadata": map[string]any{"version": 2}}, s.Extra)
	_, err = parseSkill("x", nil)
	assert.True(t, err != nil && !errors.Is(err, ErrInvalidSkill), "parseSkill states the rule; Open adds the sentinel")
}
