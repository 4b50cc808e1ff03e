package agentbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"regexp/syntax"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/vfsmount/vfsmount/mounts"
)

const (
	grepDefaultHead = 250
	grepMaxContext  = 1000
)

// rgTypes are ripgrep's type definitions for common languages (rg
// --type-list), so type: "go" means what it means to ripgrep.
var rgTypes = map[string][]string{
	"c":          {"*.[chH]", "*.[chH].in", "*.cats"},
	"cpp":        {"*.[ChH]", "*.cc", "*.[ch]pp", "*.[ch]xx", "*.hh", "*.inl", "*.[ChH].in", "*.cc.in", "*.[ch]pp.in", "*.[ch]xx.in", "*.hh.in"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss"},
	"docker":     {"*Dockerfile*"},
	"go":         {"*.go"},
	"h":          {"*.h", "*.hh", "*.hpp"},
	"html":       {"*.htm", "*.html", "*.ejs"},
	"java":       {"*.java", "*.jsp", "*.jspx", "*.properties"},
	"js":         {"*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"},
	"json":       {"*.json", "composer.lock", "*.sarif"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"[Gg][Nn][Uu]makefile", "[Mm]akefile", "[Gg][Nn][Uu]makefile.am", "[Mm]akefile.am", "[Gg][Nn][Uu]makefile.in", "[Mm]akefile.in", "*.mk", "*.mak"},
	"markdown":   {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"md":         {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"php":        {"*.php", "*.php3", "*.php4", "*.php5", "*.php7", "*.php8", "*.pht", "*.phtml"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi"},
	"python":     {"*.py", "*.pyi"},
	"rb":         {"Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"},
	"ruby":       {"Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"},
	"rust":       {"*.rs"},
	"scala":      {"*.scala", "*.sbt"},
	"sh":         {"*.bash", ".bashrc", ".bash_profile", "*.sh", ".zshrc", "*.zsh", ".profile", "*.ksh"},
	"sql":        {"*.sql", "*.psql"},
	"swift":      {"*.swift"},
	"toml":       {"*.toml", "Cargo.lock"},
	"ts":         {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"typescript": {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"txt":        {"*.txt"},
	"xml":        {"*.xml", "*.xml.dist", "*.dtd", "*.xsl", "*.xslt", "*.xsd", "*.xjb", "*.rng", "*.sch", "*.xhtml"},
	"yaml":       {"*.yaml", "*.yml"},
}

type grepQuery struct {
	re          *regexp.Regexp
	literal     []byte // a string every match contains, for the prefilter
	foldLit     []byte // or one every match contains in some ASCII case, lower-cased
	mode        string
	lineNumbers bool
	before      int
	after       int
	multiline   bool
	// onlyMatching prints each non-empty match of a line on a line of
	// its own, as rg -o does (content mode; Claude Code's Grep -o).
	onlyMatching bool
	// mtimes records each hit's modification time, for a dialect that
	// orders the files by it: read from the file the search has open,
	// not looked up again by name after the search.
	mtimes bool
}

type grepFile struct {
	name  string // FS name
	shown string // workspace path
}

type grepResult struct {
	count int
	lines []string  // content mode output
	mtime time.Time // with grepQuery.mtimes
}

// grepHit is a file with at least one match.
type grepHit struct {
	name  string // FS name
	shown string
	r     grepResult
}

// grepRun is one search done: the hits in ripgrep's (path) order and the
// paging the caller asked for, for each dialect to lay out.
type grepRun struct {
	q          grepQuery
	hits       []grepHit
	head, skip int
}

func (w *Workspace) grep(ctx context.Context, a *args) (string, error) {
	g, err := w.grepSearch(ctx, a, "files", nil)
	if err != nil {
		return "", err
	}
	return grepText(a, g)
}

// grepText is the canonical layout of a search: paths, path:count, or
// ripgrep's content lines, paged by offset and headLimit.
func grepText(a *args, g *grepRun) (string, error) {
	var out []string
	for _, h := range g.hits {
		switch g.q.mode {
		case "files":
			out = append(out, h.shown)
		case "count":
			out = append(out, h.shown+":"+strconv.Itoa(h.r.count))
		case "content":
			if (g.q.before > 0 || g.q.after > 0) && len(out) > 0 {
				out = append(out, "--")
			}
			out = append(out, h.r.lines...)
		}
	}
	if len(out) == 0 {
		return "No matches found", nil
	}
	if g.skip >= len(out) {
		return "", fmt.Errorf("%s: offset %d is past the end of the output (%d lines)", a.tool, g.skip, len(out))
	}
	out = out[g.skip:]
	more := 0
	if g.head > 0 && len(out) > g.head {
		more = len(out) - g.head
		out = out[:g.head]
	}
	text := strings.Join(out, "\n") + "\n"
	if more > 0 {
		text += fmt.Sprintf("… %d more lines; %s\n", more, callWith(a, VerbGrep, "offset", g.skip+g.head, "narrow the pattern, path or glob"))
	}
	return text, nil
}

// callWith is the hint that tells the caller how to go on: "call TOOL with
// ARG=N" in the caller's dialect, or other when its tool has no such
// argument.
func callWith(a *args, verb, key string, n int, other string) string {
	ctx := context.Background()
	if a.dialect != nil {
		ctx = withDialect(ctx, a.dialect)
	}
	tool, arg, ok := argName(ctx, verb, key)
	if !ok {
		return other
	}
	return fmt.Sprintf("call %s with %s=%d", tool, arg, n)
}

// grepSearch decodes grep's arguments and searches; defMode is the output
// mode when none is given. byMtime, if not nil, says whether the dialect
// orders the files of the output mode asked for by modification time
// (grepQuery.mtimes).
func (w *Workspace) grepSearch(ctx context.Context, a *args, defMode string, byMtime func(mode string) bool) (*grepRun, error) {
	pattern, err := a.str("pattern", true)
	if err != nil {
		return nil, err
	}
	p, err := a.path(a.tool, "path", false, "/")
	if err != nil {
		return nil, err
	}
	var q grepQuery
	if q.mode, err = a.str("outputMode", false); err != nil {
		return nil, err
	}
	switch q.mode {
	case "":
		q.mode = defMode
	case "content", "files", "count":
	default:
		return nil, a.errf("argument %q must be content, files_with_matches or count, got %q", a.key("outputMode"), q.mode)
	}
	q.mtimes = byMtime != nil && byMtime(q.mode)
	fold, err := a.boolean("caseInsensitive", false)
	if err != nil {
		return nil, err
	}
	if q.lineNumbers, err = a.boolean("lineNumbers", true); err != nil {
		return nil, err
	}
	ctxLines, err := a.integer("context", 0, 0, grepMaxContext)
	if err != nil {
		return nil, err
	}
	if q.before, err = a.integer("before", ctxLines, 0, grepMaxContext); err != nil {
		return nil, err
	}
	if q.after, err = a.integer("after", ctxLines, 0, grepMaxContext); err != nil {
		return nil, err
	}
	if q.multiline, err = a.boolean("multiline", false); err != nil {
		return nil, err
	}
	if q.onlyMatching, err = a.boolean("onlyMatching", false); err != nil {
		return nil, err
	}
	head, err := a.integer("headLimit", grepDefaultHead, 0, maxInt)
	if err != nil {
		return nil, err
	}
	skip, err := a.integer("offset", 0, 0, maxInt)
	if err != nil {
		return nil, err
	}
	noIgnore, err := a.boolean("noIgnore", false)
	if err != nil {
		return nil, err
	}
	glob, err := a.str("glob", false)
	if err != nil {
		return nil, err
	}
	typ, err := a.str("type", false)
	if err != nil {
		return nil, err
	}
	filter, err := newFileFilter(glob, typ)
	if err != nil {
		return nil, a.errf("%v", err)
	}
	// Lines are the unit, as in ripgrep: ^ and $ match at line
	// boundaries; multiline lets . cross them too.
	flags := "(?m)"
	if fold {
		flags += "(?i)"
	}
	if q.multiline {
		flags += "(?s)"
	}
	if q.re, err = regexp.Compile(flags + pattern); err != nil {
		return nil, fmt.Errorf("%s: the pattern does not compile (RE2 syntax): %s; escape literal ( [ { . * + ? | with a backslash", a.tool, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	q.literal = requiredLiteral(flags + pattern)
	if q.literal == nil {
		q.foldLit = requiredFoldLiteral(flags + pattern)
	}

	real, attr, _, err := w.resolve(ctx, p.name, true, false)
	if err != nil {
		return nil, w.explain(ctx, a.tool, p, err)
	}
	var files []grepFile
	if attr.IsDir() {
		// The mounts that can name the files that may match replace
		// their part of the walk: all of it, or those mounted below.
		narrow := func(dir string) ([]grepFile, bool) {
			return w.grepCandidates(ctx, dir, real, p.name, flags+pattern, filter, noIgnore)
		}
		var narrowed bool
		if files, narrowed = narrow(real); !narrowed {
			files, err = w.grepFiles(ctx, real, p.name, filter, noIgnore, narrow)
		}
		if err != nil {
			return nil, w.explain(ctx, a.tool, p, err)
		}
	} else if mounts.IsSpecial(attr.Mode) {
		// Never opened: a FIFO would wait for a writer.
		return nil, notRegular(a.tool, p, attr.Mode)
	} else {
		files = []grepFile{{name: real, shown: p.abs()}}
	}
	hits, err := w.searchAll(ctx, files, &q)
	if err != nil {
		return nil, w.explain(ctx, a.tool, p, err)
	}

	return &grepRun{q: q, hits: hits, head: head, skip: skip}, nil
}

// fileFilter selects files by glob (ripgrep -g: a glob without "/"
// matches the base name anywhere; "!" negates) and by ripgrep type.
type fileFilter struct {
	glob    string
	negate  bool
	base    bool
	typeGlb []string
}

func newFileFilter(glob, typ string) (*fileFilter, error) {
	f := &fileFilter{}
	if glob != "" {
		f.negate = strings.HasPrefix(glob, "!")
		f.glob = strings.TrimPrefix(strings.TrimPrefix(glob, "!"), "/")
		f.base = !strings.Contains(f.glob, "/")
		if !doublestar.ValidatePattern(f.glob) {
			return nil, fmt.Errorf("invalid glob %q", glob)
		}
	}
	if typ != "" {
		g, ok := rgTypes[typ]
		if !ok {
			names := make([]string, 0, len(rgTypes))
			for n := range rgTypes {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("unknown file type %q (known: %s)", typ, strings.Join(names, ", "))
		}
		f.typeGlb = g
	}
	return f, nil
}

func (f *fileFilter) match(base, rel string) bool {
	if f.glob != "" {
		subject := rel
		if f.base {
			subject = base
		}
		ok, _ := doublestar.Match(f.glob, subject)
		if ok == f.negate {
			return false
		}
	}
	if f.typeGlb != nil {
		for _, g := range f.typeGlb {
			if ok, _ := doublestar.Match(g, base); ok {
				return true
			}
		}
		return false
	}
	return true
}

// grepFiles lists the regular files below root in ripgrep's order,
// honouring .gitignore files inside mounts whose description says so
// (host mounts) unless noIgnore. A mount point the walk enters is given to
// narrow, when not nil: what it lists when it can stands for the walk below.
func (w *Workspace) grepFiles(ctx context.Context, root, shownRoot string, filter *fileFilter, noIgnore bool, narrow func(dir string) ([]grepFile, bool)) ([]grepFile, error) {
	var files []grepFile
	// scopes holds the ignore rules in force in each directory walked,
	// each made from its parent's when the walk reaches it.
	scopes := map[string]ignoreScope{}
	enter := func(dir string, ps []gitignore.Pattern) {
		m, _ := w.mountFor(dir)
		ignoring := !noIgnore && m.IgnoreFiles
		var domain []string
		if ignoring {
			if mr := mounts.NameOf(m.Prefix); dir != mr {
				domain = strings.Split(strings.TrimPrefix(dir, mr+"/"), "/")
				if mr == "." {
					domain = strings.Split(dir, "/")
				}
			}
			if _, ok := w.mountAt(dir); ok {
				ps = nil // a mount point starts afresh
			}
			ps = w.loadGitignore(ctx, dir, domain, ps)
		}
		var matcher gitignore.Matcher
		if ignoring && len(ps) > 0 {
			matcher = gitignore.NewMatcher(ps)
		}
		scopes[dir] = ignoreScope{ps: ps, domain: domain, matcher: matcher}
	}
	enter(root, nil)
	err := w.walk(ctx, root, walkOpts{}, func(name, rel string, e mounts.DirEntry) error {
		dir, _ := mounts.Split(name)
		s := scopes[dir]
		if s.matcher != nil && s.matcher.Match(append(s.domain[:len(s.domain):len(s.domain)], e.Name), e.Type.IsDir()) {
			return fs.SkipDir
		}
		switch {
		case e.Type.IsDir():
			if _, isMount := w.mountAt(name); isMount && narrow != nil {
				if more, ok := narrow(name); ok {
					files = append(files, more...)
					return fs.SkipDir
				}
			}
			enter(name, s.ps)
		case e.Type.IsRegular():
			if filter.match(e.Name, rel) {
				files = append(files, grepFile{name: name, shown: mounts.PathOf(mounts.Join(shownRoot, rel))})
			}
		}
		// Symlinks and special files are not searched, as ripgrep
		// does without --follow.
		return nil
	})
	return files, err
}

// grepCandidates lists the files grepFiles would below dir (root, or a
// mount point below it), narrowed to those the mounts say may match
// pattern (mounts.Candidates: an index of an immutable tree); each is
// still searched with the real regexp, so the result is the scan's. ok is
// false when the mounts cannot narrow, or when .gitignore files would
// apply (the walk decides those): grep then walks.
func (w *Workspace) grepCandidates(ctx context.Context, dir, root, shownRoot, pattern string, filter *fileFilter, noIgnore bool) (files []grepFile, ok bool) {
	if !noIgnore {
		// The ignore files of the mount serving dir, and of those below:
		// a mount point starts afresh (grepFiles).
		if m, _ := w.mountFor(dir); m.IgnoreFiles {
			return nil, false
		}
		p := mounts.PathOf(dir)
		for _, m := range w.mounts {
			if m.IgnoreFiles && (p == "/" || strings.HasPrefix(m.Prefix, p+"/")) {
				return nil, false
			}
		}
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	names, complete, err := mounts.Candidates(ctx, w.fsys, dir, re)
	if err != nil || !complete {
		return nil, false
	}
	files = make([]grepFile, 0, len(names))
	for _, name := range names {
		rel := name
		if root != "." {
			rel = strings.TrimPrefix(name, root+"/")
		}
		if strings.Contains("/"+rel+"/", "/.git/") {
			continue // the walk leaves .git directories out
		}
		_, base := mounts.Split(rel)
		if filter.match(base, rel) {
			files = append(files, grepFile{name: name, shown: mounts.PathOf(mounts.Join(shownRoot, rel))})
		}
	}
	return files, true
}

// ignoreScope is what grep ignores in one directory: the .gitignore
// patterns in force there (its own and its parents' up to the mount
// point), the directory's path below the mount point they are relative
// to, and their matcher (nil when nothing is ignored).
type ignoreScope struct {
	ps      []gitignore.Pattern
	domain  []string
	matcher gitignore.Matcher
}

func (w *Workspace) loadGitignore(ctx context.Context, dir string, domain []string, ps []gitignore.Pattern) []gitignore.Pattern {
	data, err := mounts.ReadFile(ctx, w.fsys, mounts.Join(dir, ".gitignore"))
	if err != nil {
		return ps
	}
	out := ps[:len(ps):len(ps)]
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, gitignore.ParsePattern(line, domain))
	}
	return out
}

// grepKeepBuf is the largest read buffer a grep worker keeps for the
// next file: a few large files read on every worker at once would
// otherwise stay on the heap, as many times over, for the rest of the
// search.
const grepKeepBuf = 1 << 20

// searchAll searches files in parallel and returns the files that match,
// in the order of files.
func (w *Workspace) searchAll(ctx context.Context, files []grepFile, q *grepQuery) ([]grepHit, error) {
	results := make([]grepResult, len(files))
	workers := min(len(files), 4*runtime.GOMAXPROCS(0))
	var (
		wg       sync.WaitGroup
		next     int
		mu       sync.Mutex
		firstErr error
	)
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(files) || firstErr != nil {
			return -1
		}
		next++
		return next - 1
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte // reused: results keep copies of what they show
			for i := take(); i >= 0; i = take() {
				if err := ctx.Err(); err != nil {
					mu.Lock()
					firstErr = mounts.PathErr("grep", files[i].name, err)
					mu.Unlock()
					return
				}
				var err error
				buf, err = searchFile(ctx, w.fsys, files[i].name, buf[:0], func(f mounts.File, data []byte) {
					results[i] = q.search(files[i].shown, data)
					if q.mtimes && results[i].count > 0 {
						if a, err := f.Stat(); err == nil {
							results[i].mtime = a.Mtime
						}
					}
				})
				if err != nil {
					continue // vanished or unreadable: skipped, as rg does
				}
				if cap(buf) > grepKeepBuf {
					buf = nil // a large file's: not kept for the next
				}
			}
		}()
	}
	wg.Wait()
	var hits []grepHit
	for i, r := range results {
		if r.count > 0 {
			hits = append(hits, grepHit{name: files[i].name, shown: files[i].shown, r: r})
		}
	}
	return hits, firstErr
}

// searchFile opens name for a search's scan and hands its content to fn
// while it is open: in place where the file holds it in memory
// (mounts.Content: a commit's blob), otherwise read into buf's storage as
// readInto reads it. A file over sniffLen bytes whose first sniffLen bytes
// hold a NUL (binary: search skips it) is handed over that far only. It
// returns buf's storage, grown as needed, for the next file.
func searchFile(ctx context.Context, fsys mounts.FS, name string, buf []byte, fn func(f mounts.File, data []byte)) ([]byte, error) {
	f, err := mounts.OpenWith(ctx, fsys, name, mounts.OpenOptions{Scan: true})
	if err != nil {
		return buf, err
	}
	defer f.Close()
	if data, ok := mounts.Content(f); ok {
		if len(data) > sniffLen && bytes.IndexByte(data[:sniffLen], 0) >= 0 {
			data = data[:sniffLen]
		}
		fn(f, data)
		return buf, nil
	}
	data, err := readOpen(f, buf, true)
	if err != nil {
		return buf, err
	}
	fn(f, data)
	return data, nil
}

// readInto reads a whole file into buf's storage, growing it as needed.
// mounts.ReadFile allocates a fresh 64 KiB chunk per file, which over tens
// of thousands of small files costs more than searching them.
//
// o are the open's options (the search's reads are a scan). With sniff
// set, a file over sniffLen bytes whose first sniffLen bytes
// hold a NUL (binary: search skips it) is read that far only.
func readInto(ctx context.Context, fsys mounts.FS, name string, o mounts.OpenOptions, buf []byte, sniff bool) ([]byte, error) {
	f, err := mounts.OpenWith(ctx, fsys, name, o)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, buf, sniff)
}

// readOpen is readInto of a file already open.
func readOpen(f mounts.File, buf []byte, sniff bool) ([]byte, error) {
	a, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := int(a.Size) + 1 // one more, to see EOF without a second call
	if sniff && size > sniffLen+1 {
		if cap(buf) < sniffLen {
			buf = make([]byte, 0, min(size, 2*sniffLen))
		}
		n, err := f.ReadAt(buf[:sniffLen], 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if bytes.IndexByte(buf[:n], 0) >= 0 {
			return buf[:n], nil
		}
	}
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // the file grew: more room
		}
		n, err := f.ReadAt(buf[len(buf):cap(buf)], int64(len(buf)))
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// search finds the matching lines of one file.
func (q *grepQuery) search(shown string, data []byte) grepResult {
	if bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0 {
		return grepResult{}
	}
	if q.literal != nil && !bytes.Contains(data, q.literal) {
		return grepResult{}
	}
	if q.foldLit != nil && !containsFold(data, q.foldLit) {
		return grepResult{} // Go's regexp is slow under (?i): look first
	}
	if q.mode == "files" && !q.multiline && (q.literal != nil || q.foldLit != nil) {
		// Only the lines with the literal can match: no need to run
		// the regexp over the rest (slow under (?i)).
		return grepResult{count: q.anyLine(data)}
	}
	if !q.re.Match(data) {
		// Every line match is a buffer match: no buffer match, no line.
		return grepResult{}
	}
	if q.mode == "files" && !q.multiline {
		return grepResult{count: q.anyLine(data)}
	}
	var matched []int // 0-based line numbers, ascending, distinct
	starts := lineStarts(data)
	lineOf := func(off int) int { return sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1 }
	lineText := func(l int) []byte {
		end := len(data)
		if l+1 < len(starts) {
			end = starts[l+1] - 1
		}
		return data[starts[l]:end]
	}
	nlines := len(starts)
	if len(data) == 0 || data[len(data)-1] == '\n' {
		nlines-- // the empty tail after a final newline is not a line
	}
	if q.multiline {
		for _, loc := range q.re.FindAllIndex(data, -1) {
			first := lineOf(loc[0])
			last := first
			if loc[1] > loc[0] {
				last = lineOf(loc[1] - 1)
			}
			for l := first; l <= last && l < nlines; l++ {
				if len(matched) == 0 || matched[len(matched)-1] < l {
					matched = append(matched, l)
				}
			}
		}
	} else {
		// Find candidates over the whole buffer, confirm each on its
		// own line: a line match is always a buffer match, so nothing
		// is skipped, and most of the file is scanned by the regexp
		// engine at full speed.
		for off := 0; off <= len(data); {
			loc := q.re.FindIndex(data[off:])
			if loc == nil {
				break
			}
			l := lineOf(off + loc[0])
			if l >= nlines {
				break
			}
			if q.re.Match(lineText(l)) {
				matched = append(matched, l)
				if q.mode == "files" {
					break
				}
			}
			if l+1 >= len(starts) {
				break
			}
			off = starts[l+1]
		}
	}
	r := grepResult{count: len(matched)}
	if q.mode != "content" || len(matched) == 0 {
		return r
	}
	if q.onlyMatching {
		// rg -o: each non-empty match on a line of its own, headed by
		// the line it is on; no context lines.
		for _, l := range matched {
			text := strings.TrimSuffix(string(lineText(l)), "\r")
			for _, m := range q.re.FindAllString(text, -1) {
				if m == "" {
					continue
				}
				if q.lineNumbers {
					r.lines = append(r.lines, shown+":"+strconv.Itoa(l+1)+":"+truncateLine(m))
				} else {
					r.lines = append(r.lines, shown+":"+truncateLine(m))
				}
			}
		}
		return r
	}
	isMatch := make(map[int]bool, len(matched))
	for _, l := range matched {
		isMatch[l] = true
	}
	last := -1
	for _, l := range matched {
		lo, hi := max(0, l-q.before), min(nlines-1, l+q.after)
		if lo <= last {
			lo = last + 1
		} else if last >= 0 && (q.before > 0 || q.after > 0) {
			r.lines = append(r.lines, "--")
		}
		for k := lo; k <= hi; k++ {
			sep := "-"
			if isMatch[k] {
				sep = ":"
			}
			text := truncateLine(strings.TrimSuffix(string(lineText(k)), "\r"))
			if q.lineNumbers {
				r.lines = append(r.lines, shown+sep+strconv.Itoa(k+1)+sep+text)
			} else {
				r.lines = append(r.lines, shown+sep+text)
			}
		}
		last = max(last, hi)
	}
	return r
}

// anyLine is 1 if a line of data matches, else 0: the loop of search for
// one line, with each line's bounds found around a match rather than
// from every line start of the file (files mode stops at the first).
// With a literal every match holds, only the lines holding it are tried:
// a line's match lies in the line, and so does the literal in it.
func (q *grepQuery) anyLine(data []byte) int {
	lit, fold := q.literal, false
	if lit == nil {
		lit, fold = q.foldLit, true
	}
	for off := 0; off <= len(data); {
		var at int
		if lit != nil {
			i := -1
			if fold {
				i = indexFold(data[off:], lit)
			} else {
				i = bytes.Index(data[off:], lit)
			}
			if i < 0 {
				return 0
			}
			at = off + i
		} else {
			loc := q.re.FindIndex(data[off:])
			if loc == nil {
				return 0
			}
			at = off + loc[0]
		}
		start := bytes.LastIndexByte(data[:at], '\n') + 1
		if start == len(data) && (len(data) == 0 || data[len(data)-1] == '\n') {
			return 0 // the empty tail after a final newline is not a line
		}
		end := len(data)
		if i := bytes.IndexByte(data[at:], '\n'); i >= 0 {
			end = at + i
		}
		if q.re.Match(data[start:end]) {
			return 1
		}
		if end == len(data) {
			return 0
		}
		off = end + 1
	}
	return 0
}

func lineStarts(data []byte) []int {
	starts := make([]int, 1, 1+bytes.Count(data, []byte{'\n'}))
	for off := 0; ; {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return starts
		}
		off += i + 1
		starts = append(starts, off)
	}
}

// requiredLiteral returns a string every match of the pattern contains,
// or nil: the longest case-sensitive literal of a top-level concatenation.
func requiredLiteral(pattern string) []byte {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	lit := func(r *syntax.Regexp) string {
		if r.Op == syntax.OpLiteral && r.Flags&syntax.FoldCase == 0 {
			return string(r.Rune)
		}
		return ""
	}
	best := lit(re)
	if re.Op == syntax.OpConcat {
		for _, sub := range re.Sub {
			if s := lit(sub); len(s) > len(best) {
				best = s
			}
		}
	}
	if best == "" {
		return nil
	}
	return []byte(best)
}

// requiredFoldLiteral returns, lower-cased, the longest run of literal
// characters of a top-level concatenation that are all ASCII with only
// ASCII case variants (not k or s, which fold to the Kelvin sign and the
// long s), so that every match contains it in some ASCII case; or nil.
func requiredFoldLiteral(pattern string) []byte {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	var best, cur []byte
	for _, sub := range subs {
		if sub.Op != syntax.OpLiteral {
			cur = nil
			continue
		}
		for _, r := range sub.Rune {
			l := unicode.ToLower(r)
			if r >= utf8.RuneSelf || l == 'k' || l == 's' {
				cur = nil
				continue
			}
			cur = append(cur, byte(l))
			if len(cur) > len(best) {
				best = append(best[:0:0], cur...)
			}
		}
	}
	if len(best) < 2 {
		return nil
	}
	return best
}

// containsFold reports whether data contains lit (lower-case ASCII) in any
// ASCII case.
func containsFold(data, lit []byte) bool { return indexFold(data, lit) >= 0 }

// indexFold is the index of the first instance of lit (lower-case ASCII)
// in data in any ASCII case, or -1. It looks for a byte of lit that has
// no case (a digit, a symbol) with IndexByte, or else compares a
// lower-cased copy.
func indexFold(data, lit []byte) int {
	anchor := -1
	for i, c := range lit {
		if c < 'a' || c > 'z' {
			anchor = i
			break
		}
	}
	if anchor < 0 {
		// ASCII only, so that offsets stay those of data.
		lower := make([]byte, len(data))
		for i, c := range data {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			lower[i] = c
		}
		return bytes.Index(lower, lit)
	}
	for off := anchor; off < len(data); {
		i := bytes.IndexByte(data[off:], lit[anchor])
		if i < 0 {
			return -1
		}
		start := off + i - anchor
		if start >= 0 && start+len(lit) <= len(data) && bytes.EqualFold(data[start:start+len(lit)], lit) {
			return start
		}
		off += i + 1
	}
	return -1
}
