package agentbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge/semsearch"
	"github.com/vfsmount/vfsmount/mounts"
)

// Options configure a Workspace. The zero value is a read-and-write tool
// face without a shell over whatever the FS offers.
type Options struct {
	// Shell enables the shell verb; nil means no shell.
	Shell *ShellOptions
	// Checkpoints, when set, adds the checkpoint tools
	// (verbs_checkpoint.go), which are in no default list.
	Checkpoints Checkpointer
	// Lints, when it names linters and the workspace has a shell (they
	// run in its namespace), adds the readLints tool (verbs_lints.go).
	// Each must pass [Linter.Check].
	Lints []Linter
	// SemSearch, when set, adds the semSearch tool (verbs_semsearch.go)
	// over this engine: set only when an embeddings endpoint is
	// configured. Without it an allowlist naming semSearch is an error.
	SemSearch *semsearch.Engine
	// Tools is an allowlist of canonical verb names; it may only narrow
	// the derived set. Empty means every verb the tree can serve. It may
	// name readLints and semSearch (OptionalVerbs), which are offered only
	// when they can be: naming one otherwise is an error saying why.
	Tools []string
	// Logger receives one line per call at debug level and start-up
	// notes (why there is no shell); nil is silent.
	Logger *slog.Logger

	// BeforeCall, when set, runs before a known tool's arguments are
	// acted on (after they parse); an error refuses the call, and its
	// text ends the tool error ("write: not approved: …"). Policy
	// (approvals) plugs in here; this package knows nothing of it.
	BeforeCall func(ctx context.Context, c *CallInfo) error
	// AfterCall, when set, runs after every call, with its result and
	// duration (the audit log's tool-call line).
	AfterCall func(ctx context.Context, c *CallInfo, res Result, elapsed time.Duration)
	// DryRun makes effectful verbs report what they would do and change
	// nothing: write says what it would create or overwrite, edit and
	// apply_patch show the unified diff, delete what it would remove,
	// and shell does not run the command. The caller should also give a
	// tree that refuses every change (policy.Freeze) and mount the
	// kernel face read-only. What a dry run reports is not checked
	// against path rules or approvals: a change it describes may still
	// be refused when made for real.
	DryRun bool
	// Limits bound single calls; the zero value is the defaults.
	Limits Limits
}

// Workspace serves the tool verbs over one tree. It holds no per-call state
// (what a caller keeps between calls is its [Session]'s) and is safe for
// concurrent use.
//
// The brief, ls of a mount point and the read-only error messages show the
// tree's mount table ([mounts.Mounts]: the union's, as the decorators over
// it forward and correct it); a tree without one has no mount table to
// show.
type Workspace struct {
	fsys   mounts.FS
	mounts []mounts.MountInfo // sorted by descending prefix length, for lookup
	verbs  map[string]*verb
	shell  *shellRunner
	log    *slog.Logger
	before func(ctx context.Context, c *CallInfo) error
	after  func(ctx context.Context, c *CallInfo, res Result, elapsed time.Duration)
	dryRun bool
	limits Limits
	// semEngine is semSearch's engine, nil when it is not offered.
	semEngine *semsearch.Engine
	// maxSessionProcs bounds the processes a session keeps running
	// (defaultMaxSessionProcs; a test makes it small).
	maxSessionProcs int

	sessMu   sync.Mutex
	sessions map[*Session]struct{} // open sessions, closed by Close
}

// Result is the outcome of one tool call. A tool error is a Result with
// IsError set, never a Go error: the model reads it and tries again.
//
// Content, when set, is what the harness shows the model instead of Text
// (MCP content parts): an image Read returns, a notebook's cells with their
// images. Text then still describes it, for a client that shows only text.
type Result struct {
	Text    string    `json:"text"`
	IsError bool      `json:"isError,omitempty"`
	Content []Content `json:"content,omitempty"`
}

// Content is one part of a result: text, or an image as base64 data with
// its MIME type (MCP's TextContent and ImageContent).
type Content struct {
	Type     string `json:"type"` // "text" or "image"
	Text     string `json:"text,omitempty"`
	Data     []byte `json:"data,omitempty"` // image bytes (base64 in JSON)
	MIMEType string `json:"mimeType,omitempty"`
}

// Annotations are the MCP tool hints, set truthfully per verb.
type Annotations struct {
	ReadOnly    bool `json:"readOnlyHint"`
	Destructive bool `json:"destructiveHint"`
	Idempotent  bool `json:"idempotentHint"`
	OpenWorld   bool `json:"openWorldHint"`
}

// ToolDef is what a harness registers for one tool.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations Annotations     `json:"annotations"`
}

// New builds the tool face over fsys. It fails when opts.Tools names an
// unknown verb or one the tree cannot serve.
func New(fsys mounts.FS, opts Options) (*Workspace, error) {
	w := &Workspace{fsys: fsys, log: opts.Logger,
		before: opts.BeforeCall, after: opts.AfterCall, dryRun: opts.DryRun, limits: opts.Limits.withDefaults(),
		maxSessionProcs: defaultMaxSessionProcs}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.mounts = mounts.Mounts(fsys)
	for i := range w.mounts {
		w.mounts[i].Prefix = mounts.PathOf(mounts.NameOf(w.mounts[i].Prefix))
	}
	sort.SliceStable(w.mounts, func(i, j int) bool { return len(w.mounts[i].Prefix) > len(w.mounts[j].Prefix) })

	caps := mounts.Capabilities(fsys)
	table := verbTable()
	avail := map[string]string{} // verb -> "" if servable, else why not
	for _, v := range table {
		avail[v.name] = ""
		if !caps.Has(v.needs) {
			avail[v.name] = v.lacking
		}
	}
	if opts.Shell == nil {
		avail[VerbShell] = "the kernel face is not up"
	} else {
		sh, err := newShellRunner(*opts.Shell, w.topNames)
		if err != nil {
			avail[VerbShell] = err.Error()
			w.log.Warn("agentbridge: no shell tool", "reason", err.Error())
		} else {
			w.shell = sh
		}
	}

	for i := range opts.Lints {
		if err := opts.Lints[i].Check(); err != nil {
			return nil, fmt.Errorf("lints[%d].%v", i, err)
		}
	}
	// readLints is offered where it can be honoured, never as a stub.
	switch {
	case len(opts.Lints) == 0:
		avail[VerbReadLints] = "no linters are configured (lints:)"
	case w.shell == nil:
		avail[VerbReadLints] = "the linters run in the shell's namespace, and there is no shell: " + avail[VerbShell]
	default:
		avail[VerbReadLints] = ""
	}
	// So is semSearch.
	avail[VerbSemSearch] = ""
	if opts.SemSearch == nil {
		avail[VerbSemSearch] = "no embeddings endpoint is configured (the config file's semsearch: section)"
	}

	want := slices.Clone(AllVerbs)
	for _, v := range OptionalVerbs {
		if avail[v] == "" {
			want = append(want, v)
		}
	}
	if len(opts.Tools) > 0 {
		want = nil
		for _, t := range opts.Tools {
			why, known := avail[t]
			switch {
			case !known:
				return nil, fmt.Errorf("tools: unknown tool %q (known: %s)", t, strings.Join(append(slices.Clone(AllVerbs), OptionalVerbs...), ", "))
			case why != "":
				return nil, fmt.Errorf("tools: %q cannot be served: %s", t, why)
			}
			want = append(want, t)
		}
	}
	w.verbs = map[string]*verb{}
	for _, v := range table {
		if slices.Contains(want, v.name) && avail[v.name] == "" {
			w.verbs[v.name] = v
		}
	}
	if slices.Contains(want, VerbReadLints) && avail[VerbReadLints] == "" {
		w.verbs[VerbReadLints] = lintVerb(opts.Lints)
	}
	if opts.Checkpoints != nil {
		for _, v := range checkpointVerbs(opts.Checkpoints) {
			w.verbs[v.name] = v
		}
	}
	if slices.Contains(want, VerbSemSearch) && avail[VerbSemSearch] == "" {
		w.semEngine = opts.SemSearch
		w.verbs[VerbSemSearch] = semSearchVerb(opts.SemSearch)
	}
	if v := w.verbs[VerbShell]; v != nil && opts.Shell.Network {
		v.ann.OpenWorld = true // the shell can reach the network
	}
	return w, nil
}

// Verbs returns the canonical verbs this workspace offers, in order.
func (w *Workspace) Verbs() []string {
	var out []string
	for _, v := range AllVerbs {
		if w.verbs[v] != nil {
			out = append(out, v)
		}
	}
	return out
}

// Tools returns the tool definitions of dialect ("" is canonical) for
// exactly the verbs this workspace offers.
func (w *Workspace) Tools(dialect string) ([]ToolDef, error) {
	d, err := lookupDialect(dialect)
	if err != nil {
		return nil, err
	}
	var out []ToolDef
	for _, t := range d.tools {
		v := w.verbs[t.verb]
		if v == nil || t.hidden {
			continue
		}
		ann := v.ann
		if t.ann != nil {
			ann = *t.ann
		}
		out = append(out, ToolDef{
			Name:        t.name,
			Description: t.desc,
			InputSchema: json.RawMessage(t.schema.text),
			Annotations: ann,
		})
	}
	return append(out, w.extraDefs()...), nil
}

// Call runs one tool of dialect ("" is canonical) with raw JSON arguments.
// Every failure, including bad input, is a Result with IsError set.
//
// The call gets an id (the transport's, see [WithCallID], or a random
// one), and the tree sees it through mounts.Caller (Face "tool"), so an
// audit log can tie each change to its call. It belongs to the [Session]
// in ctx ([WithSession]); without one it is a session of its own.
func (w *Workspace) Call(ctx context.Context, dialect, tool string, raw json.RawMessage) (res Result) {
	start := time.Now()
	info := &CallInfo{ID: callID(ctx), Dialect: dialect, Tool: tool, DryRun: w.dryRun}
	ctx = mounts.WithCaller(ctx, toolCaller(info.ID))
	sess := sessionFrom(ctx)
	if sess == nil {
		sess = w.openSession(true)
		defer sess.Close()
	}
	defer func() {
		if p := recover(); p != nil {
			// A bug must not take the server down with it; the model
			// gets a sentence and the operator a log line.
			w.log.Error("agentbridge: panic in tool call", "tool", tool, "panic", fmt.Sprint(p))
			res = Result{Text: fmt.Sprintf("%s: internal error; the call was not completed", tool), IsError: true}
		}
		res.Text = capOutput(res.Text, w.limits.MaxOutputBytes)
		if info.Note != "" && info.Refused == "" {
			res.Text = strings.TrimSuffix(res.Text, "\n") + "\n" + info.Note
		}
		elapsed := time.Since(start)
		w.log.Debug("agentbridge: call", "id", info.ID, "dialect", dialect, "tool", tool, "isError", res.IsError, "elapsed", elapsed)
		if w.after != nil {
			w.after(ctx, info, res, elapsed)
		}
	}()
	d, err := lookupDialect(dialect)
	if err != nil {
		return Result{Text: err.Error(), IsError: true}
	}
	t := d.find(tool)
	if t == nil {
		t = w.extraTool(tool)
	}
	if t == nil || w.verbs[t.verb] == nil {
		return Result{Text: fmt.Sprintf("unknown tool %q; available tools: %s", tool, strings.Join(w.toolNames(d), ", ")), IsError: true}
	}
	info.Verb = t.verb
	ctx = withDialect(ctx, d)
	a, err := parseArgs(t, raw)
	if err != nil {
		return Result{Text: err.Error(), IsError: true}
	}
	a.dialect, a.sess, a.cwd = d, sess, sessionDir(sess)
	run := w.verbs[t.verb].run
	if t.run != nil {
		run = t.run
	}
	if t.verb == VerbShell {
		// An apply_patch typed into the shell is the edit it stands for,
		// to policy and the audit as much as to the tree (verbs_shell_patch.go).
		pa, err := w.shellPatch(ctx, t, a)
		if err != nil {
			return Result{Text: err.Error(), IsError: true}
		}
		if pa != nil {
			info.Verb, a, run = VerbEdit, pa, w.verbs[VerbEdit].run
		}
	}
	info.Args, info.Paths = a.m, a.paths()
	if w.before != nil {
		if err := w.before(ctx, info); err != nil {
			info.Refused = err.Error()
			return Result{Text: fmt.Sprintf("%s: %v; nothing was changed", tool, err), IsError: true}
		}
	}
	text, err := run(w, ctx, a)
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			// A failure the harness reports as a result of its own
			// shape (Claude Code's Bash: "Exit code N" and the output).
			return Result{Text: te.text, IsError: true}
		}
		return Result{Text: err.Error(), IsError: true}
	}
	if info.Verb == VerbEdit && t.verb == VerbShell && t.patchResult != nil {
		text = t.patchResult(text)
	}
	return Result{Text: text, Content: a.content}
}

// toolError is a failed call whose text is the whole result as the
// dialect's harness shows it, not an error message.
type toolError struct{ text string }

func (e *toolError) Error() string { return e.text }

func (w *Workspace) toolNames(d *dialect) []string {
	var names []string
	for _, t := range d.tools {
		if w.verbs[t.verb] != nil && !t.hidden {
			names = append(names, t.name)
		}
	}
	for _, t := range extraToolList {
		if w.verbs[t.verb] != nil {
			names = append(names, t.name)
		}
	}
	return names
}

// Brief states the mount table and the tools in the canonical dialect;
// see [Workspace.BriefFor].
func (w *Workspace) Brief() string { return w.BriefFor("") }

// BriefFor states the mount table and the tools a caller of dialect has,
// by the names it calls them, for workspace.brief, the MCP instructions
// and the start of a session. An unknown dialect gets the canonical
// names.
func (w *Workspace) BriefFor(dialect string) string {
	d, err := lookupDialect(dialect)
	if err != nil {
		d = dialects[DialectCursor]
	}
	var b strings.Builder
	b.WriteString("This workspace is one filesystem namespace rooted at /. Every tool path is an absolute workspace path")
	// The shell is said only when it is among the tools: a runner the
	// allowlist left out is no shell to the model.
	shell := w.verbs[VerbShell] != nil
	if shell {
		fmt.Fprintf(&b, ", and the shell (%s) sees the same tree at the same paths", toolNameIn(d, VerbShell))
	}
	b.WriteString(".\n")
	if len(w.mounts) > 0 {
		b.WriteString("Mounts:\n")
		ms := slices.Clone(w.mounts)
		sort.Slice(ms, func(i, j int) bool { return ms[i].Prefix < ms[j].Prefix })
		width := 0
		for _, m := range ms {
			width = max(width, len(m.Prefix))
		}
		for _, m := range ms {
			// A source that only repeats the type ("memory, memory")
			// says nothing more.
			desc := m.Type
			if m.Source != "" && m.Source != m.Type {
				desc += ", " + m.Source
			}
			if desc == "" {
				desc = "mount"
			}
			fmt.Fprintf(&b, "  %-*s  %s, %s\n", width, m.Prefix, desc, rw(m.Writable))
		}
		if ro := w.readOnlyPrefixes(); len(ro) > 0 && len(ro) < len(ms) {
			fmt.Fprintf(&b, "Writes under %s fail; write under %s instead.\n", strings.Join(ro, ", "), strings.Join(w.writablePrefixes(), ", "))
		}
	}
	if shell {
		if d.name == DialectCodex {
			// Codex starts every command in the session's directory.
			fmt.Fprintf(&b, "Relative paths resolve against the session's directory (%s); every %s starts there, and a cd inside one does not carry to the next.\n", w.defaultDir(), toolNameIn(d, VerbShell))
		} else {
			fmt.Fprintf(&b, "Relative paths resolve against the session's directory (at first %s); cd in the shell moves it.\n", w.defaultDir())
		}
		for _, rs := range w.shell.opts.Remote {
			rest := "the rest of this workspace is not mounted"
			if rs.Rest {
				rest = "the rest of this workspace is at its paths too"
			}
			there := rs.Prefix + " is the same files"
			if rs.Note != "" {
				// Not a peer's namespace: the files are where they are there.
				there = "the same files are at their own path"
			}
			fmt.Fprintf(&b, "A command whose directory is in %s runs on %s (its processes and tools), where %s and %s; commands elsewhere run here.\n", rs.Prefix, rs.Source, there, rest)
		}
		for _, rs := range w.shell.opts.Remote {
			if rs.Note != "" {
				fmt.Fprintf(&b, "%s is %s.\n", rs.Prefix, rs.Note)
			}
		}
		for _, p := range w.shell.opts.RemoteHere {
			fmt.Fprintf(&b, "%s is on another machine, but commands in it run here (path rules bind it), seeing its files through this machine.\n", p)
		}
	}
	fmt.Fprintf(&b, "Tools: %s.\n", strings.Join(w.toolNames(d), ", "))
	return b.String()
}

// toolNameIn is what dialect d calls verb's (listed) tool.
func toolNameIn(d *dialect, verb string) string {
	return toolName(withDialect(context.Background(), d), verb)
}

func rw(writable bool) string {
	if writable {
		return "writable"
	}
	return "read-only"
}

// mountFor returns the mount serving the mount-relative name, if known.
func (w *Workspace) mountFor(name string) (mounts.MountInfo, bool) {
	p := mounts.PathOf(name)
	for _, m := range w.mounts {
		if m.Prefix == "/" || p == m.Prefix || strings.HasPrefix(p, m.Prefix+"/") {
			return m, true
		}
	}
	return mounts.MountInfo{}, false
}

// mountAt returns the mount whose mount point is exactly name.
func (w *Workspace) mountAt(name string) (mounts.MountInfo, bool) {
	p := mounts.PathOf(name)
	for _, m := range w.mounts {
		if p == m.Prefix {
			return m, true
		}
	}
	return mounts.MountInfo{}, false
}

func (w *Workspace) writablePrefixes() []string {
	var out []string
	for _, m := range w.mounts {
		if m.Writable {
			out = append(out, m.Prefix)
		}
	}
	sort.Strings(out)
	return out
}

func (w *Workspace) readOnlyPrefixes() []string {
	var out []string
	for _, m := range w.mounts {
		if !m.Writable {
			out = append(out, m.Prefix)
		}
	}
	sort.Strings(out)
	return out
}

// extraToolList are the tools kept out of the dialects' own lists (their
// golden files describe the harnesses' tools), the same in every dialect:
// readLints and semSearch where the configuration offers them, then the
// checkpoint family where the host does.
var extraToolList = append([]*dialectTool{lintTool, semSearchTool}, checkpointToolList...)

// extraTool returns the extra tool called name, when the workspace offers
// it.
func (w *Workspace) extraTool(name string) *dialectTool {
	for _, t := range extraToolList {
		if t.name == name && w.verbs[t.verb] != nil {
			return t
		}
	}
	return nil
}

// extraDefs are the definitions of the extra tools the workspace offers.
func (w *Workspace) extraDefs() []ToolDef {
	var out []ToolDef
	for _, t := range extraToolList {
		if v := w.verbs[t.verb]; v != nil {
			out = append(out, ToolDef{Name: t.name, Description: t.desc, InputSchema: json.RawMessage(t.schema.text), Annotations: v.ann})
		}
	}
	return out
}
