package main

import (
	"context"
	"errors"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/skillsfs"
)

// skillsType is a directory of agent skills, validated at start-up and
// served read-only with a generated SKILLS.md catalog.
func skillsType() mountType {
	return mountType{
		Name:    "skills",
		Doc:     "a directory of skills (NAME/SKILL.md with name and description), validated, read-only, with a generated SKILLS.md",
		Example: "type=skills,src=./skills,dst=/agent/skills",
		Keys: map[string]keySpec{
			"src": {Kind: kindPath, Required: true, Doc: "host directory holding one directory per skill"},
		},
		Build: buildSkills,
	}
}

func buildSkills(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
	fsys, err := skillsfs.Open(spec.String("src"), skillsfs.Options{Prefix: spec.Dst, Logger: env.Logger})
	switch {
	case errors.Is(err, skillsfs.ErrInvalidSkill), errors.Is(err, skillsfs.ErrBadSource):
		return nil, specErrorf(spec.Origin, "src: %v", err)
	case err != nil:
		return nil, err
	}
	env.OnClose(fsys.Close)
	return fsys, nil
}
