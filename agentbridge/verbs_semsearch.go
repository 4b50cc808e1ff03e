package agentbridge

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/vfsmount/vfsmount/agentbridge/semsearch"
	"github.com/vfsmount/vfsmount/mounts"
)

// semSearch finds code by meaning: the Cursor SDK's tool of that name
// (SemSearchArgs {query, targetDirectories?, explanation?}), offered only
// when the host gives the workspace an engine (Options.SemSearch: an
// embeddings endpoint is configured), never as a stub. Like the
// checkpoint family it is the same tool in every dialect and kept out of
// the dialects' own lists.
//
// The files are those grep would search (no .git, no binary files, a host
// mount's .gitignore honoured), under targetDirectories (workspace paths,
// default the whole workspace). A git mount of immutable content is listed
// once per commit, its blob ids read from the mount (user.git.oid); any
// other file is hashed as git would, again only when its size or time
// changes; the engine embeds each blob once (package semsearch).
//
// The answer is the text of SemSearchSuccess.results: per hit, best
// first, a line "path:start-end (score 0.83)" and the chunk's lines as
// read numbers them, hits separated by a blank line.

// VerbSemSearch is the semantic search verb's (and tool's) name.
const VerbSemSearch = "semSearch"

// semSearchK is the number of chunks an answer shows.
const semSearchK = 10

// semSearchMaxLine cuts a long line of a chunk shown.
const semSearchMaxLine = 500

const descSemSearch = "Semantic search: find the code and text that mean what the query says, even without its words " +
	"(\"where is the config file parsed\", \"how are retries bounded\"). " +
	"Returns the 10 best-matching chunks (Go declarations, paragraphs), each as path:startLine-endLine with its score and its numbered lines. " +
	"Use grep for an exact name or string."

var semSearchTool = &dialectTool{name: VerbSemSearch, verb: VerbSemSearch, desc: descSemSearch, schema: schema(
	prop{"query", "string", "What to find, in words: a question or a description of the code", true},
	prop{"targetDirectories", strList, "Workspace directories (or files) to search in; default the whole workspace", false},
	prop{"explanation", "string", "Why this search is made (not used to search)", false},
)}

// semSearchVerb is the verb over engine e. It reads (through the
// endpoint, an outside service, which sees the files' text).
func semSearchVerb(e *semsearch.Engine) *verb {
	return &verb{name: VerbSemSearch, ann: Annotations{ReadOnly: true, Idempotent: true, OpenWorld: true},
		run: func(w *Workspace, ctx context.Context, a *args) (string, error) { return w.semSearch(ctx, e, a) }}
}

func (w *Workspace) semSearch(ctx context.Context, e *semsearch.Engine, a *args) (string, error) {
	query, err := a.str("query", true)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(query) == "" {
		return "", a.errf("argument %q is empty: say what to find", a.key("query"))
	}
	dirs, err := a.strs("targetDirectories")
	if err != nil {
		return "", err
	}
	if len(dirs) == 0 {
		dirs = []string{"/"}
	}
	var docs []semsearch.Doc
	seen := map[string]bool{}
	for _, d := range dirs {
		p := wpath{given: d, rel: !strings.HasPrefix(d, "/"), name: clean(a.base(), d)}
		if err := mounts.CheckPath(a.tool, p.name); err != nil {
			return "", fmt.Errorf("%s %s: invalid path (control characters or an over-long name)", a.tool, d)
		}
		more, err := w.semDocs(ctx, a, p)
		if err != nil {
			return "", err
		}
		for _, doc := range more {
			if !seen[doc.Path] {
				seen[doc.Path] = true
				docs = append(docs, doc)
			}
		}
	}
	hits, st, err := e.Search(ctx, query, docs, semSearchK)
	if err != nil {
		return "", fmt.Errorf("%s: %v", a.tool, err)
	}
	w.log.Debug("agentbridge: semSearch", "files", st.Files, "chunks", st.Chunks, "embeddedBlobs", st.EmbeddedBlobs, "embeddedChunks", st.EmbeddedText)
	if len(hits) == 0 {
		if st.Chunks == 0 {
			return fmt.Sprintf("No results: no text files under %s", strings.Join(dirs, ", ")), nil
		}
		return "No results found", nil
	}
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s:%d-%d (score %.2f)\n", h.Path, h.Start, h.End, h.Score)
		for j, line := range strings.Split(h.Text, "\n") {
			if len(line) > semSearchMaxLine {
				line = line[:semSearchMaxLine] + " … [line truncated]"
			}
			fmt.Fprintf(&b, "%6d\t%s\n", h.Start+j, line)
		}
	}
	return b.String(), nil
}

// semDocs lists the files to search under p: grep's files, with the blob
// ids an unchanging git mount knows.
func (w *Workspace) semDocs(ctx context.Context, a *args, p wpath) ([]semsearch.Doc, error) {
	real, attr, _, err := w.resolve(ctx, p.name, true, false)
	if err != nil {
		return nil, w.explain(ctx, a.tool, p, err)
	}
	if !attr.IsDir() {
		if !attr.Mode.IsRegular() {
			return nil, notRegular(a.tool, p, attr.Mode)
		}
		return w.statDocs(ctx, []grepFile{{name: real, shown: p.abs()}}), nil
	}
	// Inside a git mount: its list, narrowed to real.
	if files, ok := w.gitDocs(ctx, real, p.abs()); ok {
		return files, nil
	}
	var docs []semsearch.Doc
	narrow := func(dir string) ([]grepFile, bool) {
		if dir == real {
			return nil, false
		}
		more, ok := w.gitDocs(ctx, dir, mounts.PathOf(mounts.Join(p.name, mounts.Rel(dir, real))))
		if ok {
			docs = append(docs, more...)
		}
		return nil, ok
	}
	files, err := w.grepFiles(ctx, real, p.name, &fileFilter{}, false, narrow)
	if err != nil {
		return nil, w.explain(ctx, a.tool, p, err)
	}
	return append(docs, w.statDocs(ctx, files)...), nil
}

// statDocs are files of a mount that may change: hashed by the engine
// when their size or time changed.
func (w *Workspace) statDocs(ctx context.Context, files []grepFile) []semsearch.Doc {
	out := make([]semsearch.Doc, 0, len(files))
	for _, f := range files {
		at, err := w.fsys.Stat(ctx, f.name)
		if err != nil || !at.Mode.IsRegular() {
			continue
		}
		out = append(out, semsearch.Doc{Path: f.shown, Key: f.name, ModTime: at.Mtime, Size: at.Size, Read: w.reader(f.name)})
	}
	return out
}

func (w *Workspace) reader(name string) func(ctx context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		return readInto(ctx, w.fsys, name, mounts.OpenOptions{}, nil, false)
	}
}

// Extended attributes of a git mount (mounts/gitfs).
const (
	xattrGitCommit = "user.git.commit"
	xattrGitOID    = "user.git.oid"
)

// gitDocs lists the files below dir (shown as shown) when dir is in a git
// mount of immutable content (mounts.Description.Immutable) and no other
// mount is below dir: the mount's files at its commit, listed once per
// commit (semsearch.Engine.Tree), with the blob ids the mount gives. ok is
// false otherwise. A writable git mount is not one, even one a path rule
// makes read-only: a file copied up keeps the blob id of the file it was.
func (w *Workspace) gitDocs(ctx context.Context, dir, shown string) ([]semsearch.Doc, bool) {
	e := w.semEngine
	if e == nil {
		return nil, false
	}
	root := "."
	if len(w.mounts) == 0 {
		if !mounts.Describe(w.fsys).Immutable {
			return nil, false
		}
	} else {
		m, ok := w.mountFor(dir)
		if !ok || !m.Immutable {
			return nil, false
		}
		root = mounts.NameOf(m.Prefix)
		for _, o := range w.mounts {
			if o.Prefix != m.Prefix && isBelow(mounts.NameOf(o.Prefix), dir) {
				return nil, false // the walk lists it and this one's files
			}
		}
	}
	commit, err := mounts.GetXattr(ctx, w.fsys, root, xattrGitCommit)
	if err != nil {
		return nil, false
	}
	tree, err := mounts.GetXattr(ctx, w.fsys, root, xattrGitOID)
	if err != nil {
		return nil, false
	}
	files, err := e.Tree(ctx, string(commit), string(tree), func(ctx context.Context) ([]semsearch.TreeFile, bool, error) {
		// What cannot be read now (a path rule denies it) is left out,
		// and the list is not kept for the next search.
		var out []semsearch.TreeFile
		complete := true
		o := walkOpts{unlisted: func(string, error) { complete = false }}
		err := w.walk(ctx, root, o, func(name, rel string, de mounts.DirEntry) error {
			if de.Type.IsDir() {
				if _, other := w.mountAt(name); other {
					return fs.SkipDir // another mount's: not this commit's
				}
			}
			if !de.Type.IsRegular() {
				return nil
			}
			oid, err := mounts.GetXattr(ctx, w.fsys, name, xattrGitOID)
			if err != nil {
				complete = false
				return nil
			}
			at, err := w.fsys.Stat(ctx, name)
			if err != nil {
				complete = false
				return nil
			}
			out = append(out, semsearch.TreeFile{Path: rel, OID: string(oid), Size: at.Size})
			return nil
		})
		return out, complete, err
	})
	if err != nil {
		return nil, false
	}
	// The files below dir, shown below shown.
	below := ""
	if dir != root {
		below = mounts.Rel(dir, root)
	}
	out := make([]semsearch.Doc, 0, len(files))
	for _, f := range files {
		rel := f.Path
		if below != "" {
			r, ok := strings.CutPrefix(f.Path, below+"/")
			if !ok {
				continue
			}
			rel = r
		}
		name := mounts.Join(root, f.Path)
		out = append(out, semsearch.Doc{Path: mounts.PathOf(mounts.Join(mounts.NameOf(shown), rel)), OID: f.OID, Size: f.Size, Read: w.reader(name)})
	}
	return out, true
}

// isBelow reports whether name is strictly below dir (FS names).
func isBelow(name, dir string) bool {
	if dir == "." {
		return name != "."
	}
	return strings.HasPrefix(name, dir+"/")
}
