package skillsfs

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Limits of the skill format.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024 // characters, not bytes
	// maxFrontMatter bounds how far into SKILL.md the closing "---" may
	// be, so a huge file without one is not read whole.
	maxFrontMatter = 64 << 10
)

// Skill is one validated skill: its front matter.
type Skill struct {
	// Name equals the skill's directory name.
	Name string
	// Description says what the skill is for and when to use it.
	Description string
	// Extra holds the other front matter keys, as YAML decoded them.
	Extra map[string]any
}

// validName reports whether s is lowercase letters, digits and hyphens,
// 1 to MaxNameLen of them.
func validName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func errBadDirName(dir string) error {
	return fmt.Errorf("directory name %q must be 1 to %d lowercase letters, digits and hyphens", dir, MaxNameLen)
}

// parseSkill validates the SKILL.md content of the skill directory dir.
// The error says which rule is broken, without naming the directory (the
// caller does).
func parseSkill(dir string, data []byte) (Skill, error) {
	if !validName(dir) {
		return Skill{}, errBadDirName(dir)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	first, rest, ok := cutLine(data)
	if !ok || strings.TrimRight(string(first), " \t") != "---" {
		return Skill{}, errors.New("SKILL.md must begin with YAML front matter (a \"---\" line)")
	}
	var front []byte
	closed := false
	for bodyStart := len(data) - len(rest); len(rest) > 0; {
		start := len(data) - len(rest)
		line, next, _ := cutLine(rest)
		if strings.TrimRight(string(line), " \t") == "---" {
			front, closed = data[bodyStart:start], true
			break
		}
		rest = next
	}
	if !closed {
		return Skill{}, errors.New("SKILL.md front matter has no closing \"---\" line")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		return Skill{}, fmt.Errorf("SKILL.md front matter is not valid YAML: %v", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return Skill{}, errors.New("SKILL.md front matter must be a YAML mapping with name and description")
	}
	m := doc.Content[0]
	s := Skill{Extra: map[string]any{}}
	var haveName, haveDesc bool
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch k.Value {
		case "name":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return Skill{}, errors.New("name must be a string")
			}
			s.Name, haveName = v.Value, true
		case "description":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return Skill{}, errors.New("description must be a string")
			}
			s.Description, haveDesc = v.Value, true
		default:
			var val any
			if err := v.Decode(&val); err != nil {
				return Skill{}, fmt.Errorf("front matter key %q: %v", k.Value, err)
			}
			s.Extra[k.Value] = val
		}
	}
	switch {
	case !haveName:
		return Skill{}, errors.New("front matter has no name")
	case s.Name != dir:
		return Skill{}, fmt.Errorf("name %q must equal the directory name %q", s.Name, dir)
	case !haveDesc || strings.TrimSpace(s.Description) == "":
		return Skill{}, errors.New("description must not be empty")
	case utf8.RuneCountInString(s.Description) > MaxDescriptionLen:
		return Skill{}, fmt.Errorf("description is %d characters, at most %d allowed",
			utf8.RuneCountInString(s.Description), MaxDescriptionLen)
	}
	return s, nil
}

// cutLine splits data after its first line, without the line ending
// ("\n" or "\r\n"). ok is false when data has no newline at all.
func cutLine(data []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return data, nil, false
	}
	return bytes.TrimSuffix(data[:i], []byte("\r")), data[i+1:], true
}
