package agentbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/vfsmount/vfsmount/mounts"
)

// readLints: the design's optional lint tool (TOOLS.md), offered only when
// the host names linters (Options.Lints) and the workspace has a shell,
// whose namespace the linters run in: the workspace at its absolute paths
// (/repo, /memory …), the system directories read-only, a private /tmp.
// Never a stub: without either the tool is not offered, and an allowlist
// that names it is an error saying why. It answers in the shape of the
// Cursor SDK's ReadLints tool (ReadLintsSuccessSchema): per file, its
// diagnostics, as JSON text.
//
// A call names workspace paths (files, or directories: every file below).
// Each linter whose Glob matches one of those files runs once per root
// directory (below), over the matching files below that root, and its
// diagnostics are kept for the files the call named only. Lines and
// characters are 1-based, as the linters print them and as read numbers
// lines.

// VerbReadLints is the lint tool's name, the same in every dialect.
const VerbReadLints = "readLints"

// LintVerbs lists the lint family (one tool), in every dialect when the
// workspace offers it, as [CheckpointVerbs] is.
var LintVerbs = []string{VerbReadLints}

// Lint output formats (Linter.Format).
const (
	// LintAuto tells the format from the output: a JSON object is SARIF,
	// a JSON array is LintJSON, anything else is LintLine.
	LintAuto = ""
	// LintLine is one diagnostic a line, "file:line:col: message" or
	// "file:line: message" (go vet, staticcheck's default, gcc, many
	// more). A message that starts with "error:", "warning:", "note:",
	// "info:" or "hint:" has that severity; one that ends in a
	// staticcheck-style code ("(SA4000)") has that code. Lines starting
	// with "# " (a package header) are skipped.
	LintLine = "line"
	// LintFiles is a list of file names, one a line (gofmt -l): each is
	// one diagnostic on the whole file, Message (default "the file is
	// not formatted as NAME wants it").
	LintFiles = "files"
	// LintSARIF is SARIF 2.1.0 on stdout: runs[].results[] with ruleId,
	// level (else the rule's default level, else warning), message.text
	// and locations[].physicalLocation (artifactLocation.uri, a file: URI
	// or relative to the directory the linter ran in, and region).
	LintSARIF = "sarif"
	// LintJSON is ESLint's JSON formatter on stdout: [{filePath,
	// messages: [{ruleId, severity (2 error, 1 warning), message, line,
	// column, endLine, endColumn}]}].
	LintJSON = "json"
)

// LintFormats are the known formats, for a config's validation.
var LintFormats = []string{LintLine, LintFiles, LintSARIF, LintJSON}

// LintSeverities are the Cursor SDK's severities.
var LintSeverities = []string{"error", "warning", "information", "hint"}

// DefaultLintRoots are the files that mark the directory a linter runs in
// when Linter.Roots names none.
var DefaultLintRoots = []string{"go.mod", "package.json", "pyproject.toml", "Cargo.toml"}

// DefaultLintTimeout bounds one run of a linter when Linter.Timeout is 0.
const DefaultLintTimeout = 2 * time.Minute

// Linter is one linter readLints runs.
type Linter struct {
	// Name is the diagnostics' source; "" is the base name of
	// Command[0] ("go", "gofmt").
	Name string
	// Glob (doublestar) picks the files the linter checks; it is
	// matched against the workspace path, with or without its leading
	// slash ("**/*.go", "/repo/**/*.py"), or, when it has no slash, the
	// file's base name ("*.go", "Dockerfile").
	Glob string
	// Command is the argv to run (no shell), found in the shell's PATH
	// (/usr/local/bin, /usr/bin, /bin …) unless absolute. An argument
	// "{files}" is replaced by the matching files (absolute workspace
	// paths, which are the paths in the namespace); without one the
	// command runs as it is (go vet ./...) and what it reports is
	// filtered to the files asked about. It runs in the root directory:
	// the nearest directory at or above the files holding one of Roots,
	// else the root of their mount.
	Command []string
	// Format is how the output reads: LintAuto ("") or one of
	// LintFormats.
	Format string
	// Severity is the severity of diagnostics whose format has none:
	// default "error" for LintLine, "warning" for LintFiles.
	Severity string
	// Message is the message of a LintFiles diagnostic.
	Message string
	// Env holds KEY=VALUE entries set over the shell's environment for
	// the linter (GOFLAGS=-mod=mod, GOCACHE=…): HOME and TMPDIR are the
	// namespace's private /tmp, which is new at every run.
	Env []string
	// Roots are the file names that mark the directory the linter runs
	// in; nil is DefaultLintRoots.
	Roots []string
	// Timeout bounds one run; 0 is DefaultLintTimeout. A linter that
	// outlives it is killed, and the call is an error.
	Timeout time.Duration
}

// source is what the linter's diagnostics name as their source.
func (l *Linter) source() string {
	if l.Name != "" {
		return l.Name
	}
	if len(l.Command) > 0 {
		return path.Base(l.Command[0])
	}
	return "lint"
}

// glob is the linter's glob without a leading slash.
func (l *Linter) glob() string { return strings.TrimPrefix(l.Glob, "/") }

// matches reports whether the linter checks the file name (an FS name):
// its glob matches the workspace path, or, for a glob without a slash
// ("*.go"), the file's base name.
func (l *Linter) matches(name string) bool {
	g := l.glob()
	subject := strings.TrimPrefix(mounts.PathOf(name), "/")
	if !strings.Contains(g, "/") {
		_, subject = mounts.Split(name)
	}
	ok, _ := doublestar.Match(g, subject)
	return ok
}

// Check reports the first problem of l, naming its field as a config
// names it ("glob: …").
func (l *Linter) Check() error {
	switch {
	case l.Glob == "":
		return errors.New("glob: missing: say which files the linter checks, such as **/*.go")
	case !doublestar.ValidatePattern(l.glob()):
		return fmt.Errorf("glob: %q is not a valid glob pattern", l.Glob)
	case len(l.Command) == 0 || l.Command[0] == "":
		return errors.New("command: missing: the linter's argv, such as [go, vet, ./...]")
	case l.Format != LintAuto && !slices.Contains(LintFormats, l.Format):
		return fmt.Errorf("format: unknown format %q (known: %s; leave it out to tell from the output)", l.Format, strings.Join(LintFormats, ", "))
	case l.Severity != "" && !slices.Contains(LintSeverities, l.Severity):
		return fmt.Errorf("severity: unknown severity %q (known: %s)", l.Severity, strings.Join(LintSeverities, ", "))
	case l.Timeout < 0:
		return fmt.Errorf("timeout: must not be negative, got %s", l.Timeout)
	}
	for _, kv := range l.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("env: %q is not KEY=VALUE", kv)
		}
	}
	for _, r := range l.Roots {
		if r == "" || strings.Contains(r, "/") {
			return fmt.Errorf("roots: %q is not a file name", r)
		}
	}
	return nil
}

// lintVerb is the verb over the linters ls.
func lintVerb(ls []Linter) *verb {
	ls = slices.Clone(ls)
	return &verb{name: VerbReadLints, ann: Annotations{ReadOnly: true, Idempotent: true},
		run: func(w *Workspace, ctx context.Context, a *args) (string, error) { return w.readLints(ctx, a, ls) }}
}

const descReadLints = "Read the linter diagnostics (errors and warnings) of files or directories of the workspace. " +
	"The configured linters run on the files now, in the shell's namespace; the result is JSON: per file, its diagnostics " +
	"with severity, 1-based line and character, message, source (the linter) and code."

// lintTool is the family's tool, the same in every dialect and kept out of
// the dialects' own lists (extraToolList), as the checkpoint family is.
var lintTool = &dialectTool{name: VerbReadLints, verb: VerbReadLints, desc: descReadLints, schema: schema(
	prop{"paths", strList, "Workspace paths of files or directories (every file below) to read diagnostics for; absolute, or relative to the session's directory", true},
)}

// The result, in the Cursor SDK's ReadLintsSuccess shape.
type (
	lintPos struct {
		Line      int `json:"line,omitempty"`
		Character int `json:"character,omitempty"`
	}
	lintRange struct {
		Start *lintPos `json:"start,omitempty"`
		End   *lintPos `json:"end,omitempty"`
	}
	lintDiagnostic struct {
		Severity string     `json:"severity"`
		Range    *lintRange `json:"range,omitempty"`
		Message  string     `json:"message"`
		Source   string     `json:"source"`
		Code     string     `json:"code"`
	}
	lintFile struct {
		Path             string           `json:"path"`
		Diagnostics      []lintDiagnostic `json:"diagnostics"`
		DiagnosticsCount int              `json:"diagnosticsCount"`
	}
	lintResult struct {
		FileDiagnostics  []lintFile `json:"fileDiagnostics"`
		TotalFiles       int        `json:"totalFiles"`
		TotalDiagnostics int        `json:"totalDiagnostics"`
	}
)

// finding is one diagnostic as a parser reads it: its file as the linter
// wrote it (relative to the directory it ran in, absolute, or a file:
// URI), positions 0 when unknown.
type finding struct {
	file                       string
	line, col, endLine, endCol int
	severity, message, code    string
}

func (f finding) diagnostic(source string) lintDiagnostic {
	d := lintDiagnostic{Severity: f.severity, Message: f.message, Source: source, Code: f.code}
	if f.line > 0 {
		d.Range = &lintRange{Start: &lintPos{Line: f.line, Character: f.col}}
		if f.endLine > 0 {
			d.Range.End = &lintPos{Line: f.endLine, Character: f.endCol}
		}
	}
	return d
}

const (
	// maxLintFiles bounds the files one call gathers below its
	// directories.
	maxLintFiles = 10000
	// lintReadCap is the most output of one run that is parsed; the raw
	// output shown when it cannot be is capped at shellOutputCap.
	lintReadCap = 8 << 20
)

// readLints runs the linters over the paths the call names.
func (w *Workspace) readLints(ctx context.Context, a *args, linters []Linter) (string, error) {
	op := a.tool
	if !a.present("paths") {
		return "", a.missing("paths")
	}
	given, err := a.strs("paths")
	if err != nil {
		return "", err
	}
	if len(given) == 0 {
		return "", a.errf("argument %q must name at least one file or directory", a.key("paths"))
	}
	// files are the FS names of the files asked about; named are those
	// the call named itself (listed even when clean).
	var files []string
	have := map[string]bool{}
	named := map[string]bool{}
	var notes []string
	for _, g := range given {
		p := wpath{given: g, rel: !strings.HasPrefix(g, "/"), name: clean(a.base(), g)}
		if err := mounts.CheckPath(op, p.name); err != nil {
			return "", fmt.Errorf("%s %s: invalid path (control characters or an over-long name)", op, g)
		}
		real, attr, _, err := w.resolve(ctx, p.name, true, false)
		if err != nil {
			return "", w.explain(ctx, op, p, err)
		}
		switch {
		case attr.Mode.IsDir():
			more := false
			err := w.walk(ctx, real, walkOpts{}, func(name, _ string, e mounts.DirEntry) error {
				if !e.Type.IsRegular() || have[name] {
					return nil
				}
				if len(files) >= maxLintFiles {
					more = true
					return fs.SkipAll
				}
				have[name] = true
				files = append(files, name)
				return nil
			})
			if err != nil && !errors.Is(err, fs.SkipAll) {
				return "", w.explain(ctx, op, p, err)
			}
			if more {
				notes = append(notes, fmt.Sprintf("%s: only the first %d files below %s were checked; name fewer", op, maxLintFiles, mounts.PathOf(real)))
			}
		case attr.Mode.IsRegular():
			named[real] = true
			if !have[real] {
				have[real] = true
				files = append(files, real)
			}
		default:
			return "", notRegular(op, p, attr.Mode)
		}
	}

	// Which files each linter checks, by the directory it runs in.
	type job struct {
		l     *Linter
		root  string // FS name
		files []string
	}
	var jobs []job
	covered := map[string]bool{}
	roots := map[string]string{} // "linter index\x00dir" -> root
	for i := range linters {
		l := &linters[i]
		byRoot := map[string][]string{}
		var order []string
		for _, f := range files {
			if !l.matches(f) {
				continue
			}
			covered[f] = true
			dir, _ := mounts.Split(f)
			key := fmt.Sprint(i) + "\x00" + dir
			r, ok := roots[key]
			if !ok {
				r = w.lintRoot(ctx, dir, l.Roots)
				roots[key] = r
			}
			if _, ok := byRoot[r]; !ok {
				order = append(order, r)
			}
			byRoot[r] = append(byRoot[r], f)
		}
		for _, r := range order {
			jobs = append(jobs, job{l: l, root: r, files: byRoot[r]})
		}
	}
	if len(jobs) == 0 {
		globs := make([]string, len(linters))
		for i, l := range linters {
			globs[i] = l.Glob
		}
		return "", fmt.Errorf("%s: no linter here checks the files named (the linters check %s)", op, strings.Join(globs, ", "))
	}
	var unchecked []string
	for _, f := range files {
		if named[f] && !covered[f] {
			unchecked = append(unchecked, mounts.PathOf(f))
		}
	}
	if len(unchecked) > 0 {
		notes = append(notes, fmt.Sprintf("%s: no linter checks %s", op, strings.Join(unchecked, ", ")))
	}

	found := map[string][]lintDiagnostic{}
	var raws []string
	parsed := false
	for _, j := range jobs {
		out, err := w.runLinter(ctx, op, j.l, j.root, j.files)
		if err != nil {
			return "", err
		}
		finds, raw := parseLintOutput(j.l, out)
		if raw == "" {
			parsed = true
		} else {
			raws = append(raws, raw)
		}
		for _, f := range finds {
			name := lintPath(j.root, f.file)
			if !have[name] {
				continue // not asked about
			}
			found[name] = append(found[name], f.diagnostic(j.l.source()))
		}
	}

	res := lintResult{FileDiagnostics: []lintFile{}}
	var paths []string
	for _, f := range files {
		if covered[f] {
			res.TotalFiles++
			if named[f] || len(found[f]) > 0 {
				paths = append(paths, f)
			}
		}
	}
	sort.Strings(paths)
	for _, f := range paths {
		ds := found[f]
		if ds == nil {
			ds = []lintDiagnostic{}
		}
		res.FileDiagnostics = append(res.FileDiagnostics, lintFile{Path: mounts.PathOf(f), Diagnostics: ds, DiagnosticsCount: len(ds)})
		res.TotalDiagnostics += len(ds)
	}
	var b strings.Builder
	if parsed || res.TotalDiagnostics > 0 {
		text, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return "", fmt.Errorf("%s: %v", op, err)
		}
		b.Write(text)
		b.WriteByte('\n')
	}
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	for _, r := range raws {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(r)
	}
	return b.String(), nil
}

// lintRoot is the directory a linter runs in for files in dir (FS
// names): the nearest at or above dir that holds one of roots
// (DefaultLintRoots when nil), within dir's mount; else the mount's root.
func (w *Workspace) lintRoot(ctx context.Context, dir string, roots []string) string {
	if roots == nil {
		roots = DefaultLintRoots
	}
	top := "."
	if m, ok := w.mountFor(dir); ok {
		top = mounts.NameOf(m.Prefix)
	}
	for d := dir; ; {
		for _, r := range roots {
			if a, err := w.fsys.Stat(ctx, mounts.Join(d, r)); err == nil && a.Mode.IsRegular() {
				return d
			}
		}
		if d == top || d == "." {
			return top
		}
		d, _ = mounts.Split(d)
	}
}

// lintPath is the FS name of a file a linter run in root (an FS name)
// reported as file: an absolute path is a workspace path (the namespace's
// paths are the workspace's), a relative one is relative to root.
func lintPath(root, file string) string {
	if rest, ok := strings.CutPrefix(file, "file://"); ok {
		file = rest
		if i := strings.IndexByte(file, '/'); i > 0 {
			file = file[i:] // file://host/path
		}
	}
	return clean(root, file)
}

// lintOutput is what one run of a linter printed.
type lintOutput struct {
	cmdline        string
	dir            string // workspace path it ran in
	exitCode       int
	stdout, stderr string
	truncated      bool
}

// runLinter runs l in the shell's namespace in root (an FS name) over
// files. A nonzero exit is the linter's way to say it found something,
// not a failure; a linter that cannot start, or outlives its timeout, is.
func (w *Workspace) runLinter(ctx context.Context, op string, l *Linter, root string, files []string) (lintOutput, error) {
	var argv []string
	for _, s := range l.Command {
		if s == "{files}" {
			for _, f := range files {
				argv = append(argv, mounts.PathOf(f))
			}
			continue
		}
		argv = append(argv, s)
	}
	out := lintOutput{cmdline: strings.Join(l.Command, " "), dir: mounts.PathOf(root)}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = DefaultLintTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := w.command(rctx, out.dir, l.Env, true, argv)
	if err != nil {
		return out, fmt.Errorf("%s: the linter %s cannot run: %v", op, l.source(), err)
	}
	stdout, stderr := &capWriter{limit: lintReadCap}, &capWriter{limit: lintReadCap}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	out.stdout, out.stderr = stdout.String(), stderr.String()
	out.truncated = stdout.size() > lintReadCap || stderr.size() > lintReadCap
	var ee *exec.ExitError
	switch {
	case rctx.Err() != nil && ctx.Err() == nil:
		return out, fmt.Errorf("%s: the linter %s (%s) did not finish within %s and was killed", op, l.source(), out.cmdline, timeout)
	case ctx.Err() != nil:
		return out, fmt.Errorf("%s: cancelled", op)
	case errors.As(err, &ee):
		out.exitCode = ee.ExitCode()
	case err != nil:
		return out, fmt.Errorf("%s: the linter %s cannot run: %v", op, l.source(), err)
	}
	// bubblewrap says so when it cannot start the command.
	if msg, ok := strings.CutPrefix(strings.TrimSpace(out.stderr), "bwrap: execvp "); ok && out.exitCode != 0 {
		return out, fmt.Errorf("%s: the linter %s could not start: %s (the command runs in the shell's namespace, with PATH=%s unless its env sets one)",
			op, l.source(), strings.TrimSpace(strings.SplitN(msg, "\n", 2)[0]), lintPath0)
	}
	return out, nil
}

// lintPath0 is the shell's PATH, for the message of a linter not found.
const lintPath0 = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// parseLintOutput reads what l printed. raw is "" when all of it was
// understood; else it is a one-line note and the output (capped), which
// the result shows after the diagnostics that were read.
func parseLintOutput(l *Linter, out lintOutput) (finds []finding, raw string) {
	format := l.Format
	if format == LintAuto {
		format = detectLintFormat(out.stdout)
	}
	var rest string // what was not understood
	var err error
	switch format {
	case LintSARIF, LintJSON:
		parse := parseSARIF
		if format == LintJSON {
			parse = parseESLint
		}
		if strings.TrimSpace(out.stdout) == "" {
			rest = out.stderr
			if rest == "" && out.exitCode != 0 {
				err = errors.New("no output")
			}
			break
		}
		if finds, err = parse([]byte(out.stdout)); err != nil {
			rest = joinOutput(out.stdout, out.stderr)
		}
	case LintFiles:
		finds = parseFilesOutput(out.stdout, l.Severity, l.Message, l.source())
		var more []finding
		more, rest = parseLineOutput(out.stderr, l.Severity)
		finds = append(finds, more...)
	default:
		finds, rest = parseLineOutput(joinOutput(out.stdout, out.stderr), l.Severity)
	}
	if strings.TrimSpace(rest) == "" && err == nil {
		if len(finds) == 0 && out.exitCode != 0 {
			return nil, fmt.Sprintf("readLints: %s (in %s) exited with code %d and reported nothing.\n", out.cmdline, out.dir, out.exitCode)
		}
		return finds, ""
	}
	why := "is not in the " + format + " format"
	if err != nil {
		why = fmt.Sprintf("could not be read as %s (%v)", format, err)
	}
	if format == LintSARIF || format == LintJSON {
		finds = nil
	}
	if out.truncated {
		why += "; it was over " + fmt.Sprint(lintReadCap) + " bytes and was cut"
	}
	c := &capWriter{}
	c.Write([]byte(rest))
	return finds, fmt.Sprintf("readLints: the output of %s (in %s, exit code %d) %s; it follows as printed:\n%s\n",
		out.cmdline, out.dir, out.exitCode, why, strings.TrimRight(c.String(), "\n"))
}

func joinOutput(a, b string) string {
	if a != "" && b != "" && !strings.HasSuffix(a, "\n") {
		a += "\n"
	}
	return a + b
}

// detectLintFormat tells the format of output from its first character.
func detectLintFormat(stdout string) string {
	switch s := strings.TrimSpace(stdout); {
	case strings.HasPrefix(s, "{"):
		return LintSARIF
	case strings.HasPrefix(s, "["):
		return LintJSON
	}
	return LintLine
}
