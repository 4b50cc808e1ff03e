package agentbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The parsers of readLints (verbs_lints.go): each reads one format of
// linter output into findings. They never fail on input they do not
// understand: the line formats return it as the rest, the JSON formats an
// error, and the caller shows it raw with a note.

var (
	// reLintLine is "file:line:col: message" or "file:line: message".
	reLintLine = regexp.MustCompile(`^([^:\s][^:]*):(\d+):(?:(\d+):)?\s*(.*)$`)
	// reLintSeverity is a gcc-style severity at the start of a message.
	reLintSeverity = regexp.MustCompile(`^(error|warning|note|info|information|hint):\s*`)
	// reLintCode is a staticcheck-style code at the end of a message.
	reLintCode = regexp.MustCompile(`\s\(([A-Z]+[0-9]+)\)$`)
)

// lintSeverity maps the words linters use onto the Cursor SDK's.
func lintSeverity(s, def string) string {
	switch strings.ToLower(s) {
	case "error", "fatal", "fail", "failure":
		return "error"
	case "warning", "warn":
		return "warning"
	case "note", "info", "information":
		return "information"
	case "hint", "none":
		return "hint"
	}
	return def
}

// parseLineOutput reads "file:line[:col]: message" lines. Blank lines and
// "# package" headers are skipped; any other line that does not parse is
// returned in rest, in order.
func parseLineOutput(out, severity string) (finds []finding, rest string) {
	if severity == "" {
		severity = "error"
	}
	var unread []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "# ") {
			continue
		}
		m := reLintLine.FindStringSubmatch(line)
		if m == nil {
			unread = append(unread, line)
			continue
		}
		f := finding{file: m[1], severity: severity, message: m[4]}
		f.line, _ = strconv.Atoi(m[2])
		if m[3] != "" {
			f.col, _ = strconv.Atoi(m[3])
		}
		if s := reLintSeverity.FindStringSubmatch(f.message); s != nil {
			f.severity = lintSeverity(s[1], severity)
			f.message = f.message[len(s[0]):]
		}
		if c := reLintCode.FindStringSubmatch(f.message); c != nil {
			f.code = c[1]
			f.message = strings.TrimSuffix(f.message, c[0])
		}
		finds = append(finds, f)
	}
	if len(unread) > 0 {
		rest = strings.Join(unread, "\n") + "\n"
	}
	return finds, rest
}

// parseFilesOutput reads a list of file names (gofmt -l): one finding on
// each whole file.
func parseFilesOutput(out, severity, message, source string) []finding {
	if severity == "" {
		severity = "warning"
	}
	if message == "" {
		message = "the file is not formatted as " + source + " wants it"
	}
	var finds []finding
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimRight(line, "\r"); strings.TrimSpace(line) != "" {
			finds = append(finds, finding{file: line, severity: severity, message: message})
		}
	}
	return finds
}

// sarifLog is the part of SARIF 2.1.0 readLints reads.
type sarifLog struct {
	Version string `json:"version"`
	Runs    *[]struct {
		Tool struct {
			Driver struct {
				Rules []struct {
					ID                   string `json:"id"`
					DefaultConfiguration struct {
						Level string `json:"level"`
					} `json:"defaultConfiguration"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		OriginalURIBaseIDs map[string]struct {
			URI string `json:"uri"`
		} `json:"originalUriBaseIds"`
		Results []struct {
			RuleID    string   `json:"ruleId"`
			RuleIndex *int     `json:"ruleIndex"`
			Level     string   `json:"level"`
			Message   sarifMsg `json:"message"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI       string `json:"uri"`
						URIBaseID string `json:"uriBaseId"`
					} `json:"artifactLocation"`
					Region struct {
						StartLine   int `json:"startLine"`
						StartColumn int `json:"startColumn"`
						EndLine     int `json:"endLine"`
						EndColumn   int `json:"endColumn"`
					} `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
		} `json:"results"`
	} `json:"runs"`
}

type sarifMsg struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown"`
}

// parseSARIF reads a SARIF 2.1.0 log. A result without a location is left
// out (it is about no file).
func parseSARIF(data []byte) ([]finding, error) {
	var log sarifLog
	if err := json.Unmarshal(data, &log); err != nil {
		return nil, fmt.Errorf("not SARIF: %v", jsonErr(err))
	}
	if log.Runs == nil {
		return nil, errors.New("not SARIF: no runs")
	}
	if !strings.HasPrefix(log.Version, "2.") {
		return nil, fmt.Errorf("SARIF version %q, not 2.1.0", log.Version)
	}
	var finds []finding
	for _, run := range *log.Runs {
		levels := map[string]string{}
		for _, r := range run.Tool.Driver.Rules {
			levels[r.ID] = r.DefaultConfiguration.Level
		}
		for _, r := range run.Results {
			level := r.Level
			if level == "" {
				level = levels[r.RuleID]
				if r.RuleIndex != nil && *r.RuleIndex >= 0 && *r.RuleIndex < len(run.Tool.Driver.Rules) && level == "" {
					level = run.Tool.Driver.Rules[*r.RuleIndex].DefaultConfiguration.Level
				}
			}
			msg := r.Message.Text
			if msg == "" {
				msg = r.Message.Markdown
			}
			for _, loc := range r.Locations {
				pl := loc.PhysicalLocation
				file, err := sarifPath(pl.ArtifactLocation.URI, run.OriginalURIBaseIDs[pl.ArtifactLocation.URIBaseID].URI)
				if err != nil || file == "" {
					continue
				}
				rg := pl.Region
				f := finding{file: file, severity: lintSeverity(level, "warning"), message: msg, code: r.RuleID,
					line: rg.StartLine, col: rg.StartColumn, endLine: rg.EndLine, endCol: rg.EndColumn}
				finds = append(finds, f)
			}
		}
	}
	return finds, nil
}

// sarifPath is the path of a SARIF artifact URI: a file: URI's path, or a
// relative reference against its base (itself relative to the directory
// the linter ran in when it has none).
func sarifPath(uri, base string) (string, error) {
	if base != "" && !strings.Contains(uri, ":") {
		uri = strings.TrimSuffix(base, "/") + "/" + uri
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "file":
		return u.Path, nil
	case "":
		return u.Path, nil
	}
	return "", fmt.Errorf("not a file: %s", uri)
}

// eslintFile is one file of ESLint's JSON formatter.
type eslintFile struct {
	FilePath *string `json:"filePath"`
	Messages []struct {
		RuleID    *string `json:"ruleId"`
		Severity  int     `json:"severity"`
		Message   string  `json:"message"`
		Line      int     `json:"line"`
		Column    int     `json:"column"`
		EndLine   int     `json:"endLine"`
		EndColumn int     `json:"endColumn"`
	} `json:"messages"`
}

// parseESLint reads ESLint's JSON formatter output.
func parseESLint(data []byte) ([]finding, error) {
	var files []eslintFile
	if err := json.Unmarshal(data, &files); err != nil {
		return nil, fmt.Errorf("not ESLint JSON: %v", jsonErr(err))
	}
	var finds []finding
	for i, f := range files {
		if f.FilePath == nil {
			return nil, fmt.Errorf("not ESLint JSON: entry %d has no filePath", i)
		}
		for _, m := range f.Messages {
			sev := "warning"
			switch m.Severity {
			case 2:
				sev = "error"
			case 0:
				sev = "information"
			}
			code := ""
			if m.RuleID != nil {
				code = *m.RuleID
			}
			finds = append(finds, finding{file: *f.FilePath, severity: sev, message: m.Message, code: code,
				line: m.Line, col: m.Column, endLine: m.EndLine, endCol: m.EndColumn})
		}
	}
	return finds, nil
}
