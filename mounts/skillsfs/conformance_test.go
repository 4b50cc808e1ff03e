package skillsfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

func TestConformance(t *testing.T) {
	files := map[string]string{
		"pdf/SKILL.md":         skillMD("pdf", "Work with PDF files."),
		"pdf/scripts/split.sh": "#!/bin/sh\n",
		"csv-2/SKILL.md":       skillMD("csv-2", "Tables."),
		"csv-2/ref/notes.md":   "notes",
		"README.md":            "about these skills",
	}
	src := t.TempDir()
	writeTree(t, src, files)
	require.NoError(t, os.Symlink("../pdf/SKILL.md", filepath.Join(src, "csv-2", "see-also.md")))
	files[CatalogName] = "# Skills\n\n" +
		"Each skill below is a directory holding a SKILL.md with instructions, and maybe scripts\n" +
		"and reference files. Read a skill's SKILL.md before you use it.\n" +
		"\n## csv-2\n\nTables.\n\nPath: /agent/skills/csv-2/SKILL.md\n" +
		"\n## pdf\n\nWork with PDF files.\n\nPath: /agent/skills/pdf/SKILL.md\n"
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		fsys, err := openDir(t, src, Options{})
		require.NoError(t, err)
		return fsys
	}, mountstest.Caps(mounts.CapXattr|mounts.CapStatFS), mountstest.Expect(files),
		mountstest.ExpectSymlinks(map[string]string{"csv-2/see-also.md": "../pdf/SKILL.md"}))
}
