package main

import (
	"context"
	"errors"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/skillsfs"
)

// skillsType is a directory of agent skills, validated at start-up and
// served read-only with a generated SKILLS.md catalog. The skills come from
// a host directory, or with rev= from one commit of a git repository: the
// CLI opens that source as the host or git type would and hands it to the
// skills mount, which serves any mount.
func skillsType() mountType {
	return mountType{
		Name:    "skills",
		Doc:     "a directory of skills (NAME/SKILL.md with name and description), validated, read-only, with a generated SKILLS.md",
		Example: "type=skills,src=./skills,dst=/agent/skills",
		Keys: map[string]keySpec{
			"src":    {Kind: kindSource, Required: true, Doc: "host directory holding one directory per skill; with rev, a git repository (path or URL)"},
			"rev":    {Kind: kindString, Doc: "serve the skills of this commit of the repository src (SHA, branch, tag)"},
			"subdir": {Kind: kindString, Doc: "with rev: the directory of the commit that holds the skills"},
		},
		Build: buildSkills,
	}
}

func buildSkills(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
	var src mounts.FS
	var err error
	switch {
	case spec.Has("rev"):
		src, err = buildGit(ctx, spec, env)
	case spec.Has("subdir"):
		return nil, specErrorf(spec.Origin, "subdir needs rev: it names a directory of a commit")
	case isURL(spec.String("src")):
		return nil, specErrorf(spec.Origin, "src %q is a URL: give rev= to serve the skills of one of its commits", spec.String("src"))
	default:
		src, err = openHost(spec, true, env)
	}
	if err != nil {
		return nil, err
	}
	fsys, err := skillsfs.New(src, skillsfs.Options{Prefix: spec.Dst, Logger: env.Logger})
	switch {
	case errors.Is(err, skillsfs.ErrInvalidSkill), errors.Is(err, skillsfs.ErrBadSource):
		return nil, specErrorf(spec.Origin, "src: %v", err)
	case err != nil:
		return nil, err
	}
	return fsys, nil
}
