package agentbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
)

// tinyPNG is a 2x1 PNG.
func tinyPNG(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 1))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// twoPagePDF is the smallest PDF poppler renders: two blank pages.
const twoPagePDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R 4 0 R]/Count 2>>endobj\n" +
	"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]>>endobj\n4 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]>>endobj\n" +
	"trailer<</Root 1 0 R>>\n%%EOF\n"

const notebookJSON = `{"metadata":{"language_info":{"name":"python"}},"cells":[
 {"cell_type":"markdown","id":"intro","source":["# Title\n","text"]},
 {"cell_type":"code","source":"print(1)","outputs":[{"output_type":"stream","text":["1\n"]}]},
 {"cell_type":"code","id":"img","source":"plot()","outputs":[{"output_type":"display_data","data":{"text/plain":"<Figure>","image/png":"iVBORw0KGgo="}}]}
]}`

func TestClaudeRead(t *testing.T) {
	pngData := tinyPNG(t)
	w := fixture(t, map[string]string{
		"/memory/a.txt":     "alpha\n\tbeta\n",
		"/memory/pic.png":   string(pngData),
		"/memory/fake.png":  "not an image at all\n",
		"/memory/doc.pdf":   twoPagePDF,
		"/memory/nb.ipynb":  notebookJSON,
		"/memory/bad.ipynb": "{",
		"/memory/empty.txt": "",
		"/memory/sub/r.txt": "rel\n",
	}, Options{})
	t.Run("text is numbered N<tab>line", func(t *testing.T) {
		assert.Equal(t, Result{Text: "1\talpha\n2\t\tbeta\n"}, call(t, w, "claude", "Read", obj{"file_path": "/memory/a.txt"}))
		assert.Equal(t, Result{Text: "2\t\tbeta\n"}, call(t, w, "claude", "Read", obj{"file_path": "a.txt", "offset": 2}), "relative to the session's directory")
		assert.Equal(t, Result{Text: "1\talpha\n… 1 more lines; call Read with offset=2\n"}, call(t, w, "claude", "Read", obj{"file_path": "/memory/a.txt", "length": 1}), "length is the limit Claude Code coerces")
		assert.Equal(t, Result{Text: "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"}, call(t, w, "claude", "Read", obj{"file_path": "/memory/empty.txt"}))
	})
	t.Run("an image is image content", func(t *testing.T) {
		r := call(t, w, "claude", "Read", obj{"file_path": "/memory/pic.png"})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, []Content{{Type: "image", Data: pngData, MIMEType: "image/png"}}, r.Content)
		assert.Equal(t, "Read image /memory/pic.png ("+humanSize(len(pngData))+", image/png)", r.Text)
		r = call(t, w, "claude", "Read", obj{"file_path": "/memory/fake.png"})
		assert.True(t, r.IsError)
		assert.Equal(t, "Read /memory/fake.png: not an image (text/plain; charset=utf-8), though its name says image/png", r.Text)
	})
	t.Run("codex's view_image is the image as content", func(t *testing.T) {
		r := call(t, w, "codex", "view_image", obj{"path": "/memory/pic.png"})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, []Content{{Type: "image", Data: pngData, MIMEType: "image/png"}}, r.Content)
		r = call(t, w, "codex", "view_image", obj{"path": "/memory/pic.png", "detail": "original"})
		assert.Equal(t, []Content{{Type: "image", Data: pngData, MIMEType: "image/png"}}, r.Content)
		r = call(t, w, "codex", "view_image", obj{"path": "/memory/pic.png", "detail": "low"})
		assert.Equal(t, Result{Text: "view_image.detail only supports `high` or `original`; omit `detail` for default high resized behavior, got `low`", IsError: true}, r)
		r = call(t, w, "codex", "view_image", obj{"path": "/memory/fake.png"})
		assert.True(t, r.IsError)
		assert.Contains(t, r.Text, "not an image")
	})
	t.Run("a notebook is its cells", func(t *testing.T) {
		r := call(t, w, "claude", "Read", obj{"file_path": "/memory/nb.ipynb"})
		require.False(t, r.IsError, r.Text)
		want := "<cell id=\"intro\"><cell_type>markdown</cell_type># Title\ntext</cell id=\"intro\">\n" +
			"<cell id=\"cell-1\">print(1)</cell id=\"cell-1\">\n\n1\n\n" +
			"<cell id=\"img\">plot()</cell id=\"img\">\n\n<Figure>"
		assert.Equal(t, want, r.Text)
		require.Len(t, r.Content, 2, "text, then the output's image")
		assert.Equal(t, Content{Type: "image", Data: []byte("\x89PNG\r\n\x1a\n"), MIMEType: "image/png"}, r.Content[1])
		r = call(t, w, "claude", "Read", obj{"file_path": "/memory/bad.ipynb"})
		assert.True(t, r.IsError)
		assert.Contains(t, r.Text, "Notebook file is not valid JSON")
	})
	t.Run("PDF pages are images", func(t *testing.T) {
		if _, err := exec.LookPath("pdftoppm"); err != nil {
			if fusetest.Required() {
				t.Fatal("pdftoppm (poppler-utils) is required in CI")
			}
			t.Skip("pdftoppm not installed")
		}
		r := call(t, w, "claude", "Read", obj{"file_path": "/memory/doc.pdf"})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, "PDF pages extracted: 2 page(s) from /memory/doc.pdf ("+humanSize(len(twoPagePDF))+")", r.Text)
		require.Len(t, r.Content, 3)
		for _, c := range r.Content[1:] {
			assert.Equal(t, "image/png", c.MIMEType)
			assert.True(t, bytes.HasPrefix(c.Data, []byte("\x89PNG")))
		}
		r = call(t, w, "claude", "Read", obj{"file_path": "/memory/doc.pdf", "pages": "2"})
		assert.Len(t, r.Content, 2)
		r = call(t, w, "claude", "Read", obj{"file_path": "/memory/doc.pdf", "pages": "1-30"})
		assert.Equal(t, Result{Text: `Read: argument "pages": "1-30" is 30 pages; read at most 20 per request`, IsError: true}, r)
		r = call(t, w, "claude", "Read", obj{"file_path": "/memory/doc.pdf", "pages": "5"})
		assert.True(t, r.IsError)
		assert.True(t, strings.HasPrefix(r.Text, "Read /memory/doc.pdf: PDF extraction failed: "), r.Text)
	})
	t.Run("bad input", func(t *testing.T) {
		assert.Equal(t, Result{Text: `Read: argument "pages" applies to PDF files only; /memory/a.txt is not one`, IsError: true},
			call(t, w, "claude", "Read", obj{"file_path": "/memory/a.txt", "pages": "1"}))
		assert.Equal(t, Result{Text: `Read: argument "offset" must be an integer, got true`, IsError: true},
			call(t, w, "claude", "Read", obj{"file_path": "/memory/a.txt", "offset": true}))
		assert.Equal(t, Result{Text: `Read: argument "file_path" must be a string, got 7`, IsError: true},
			call(t, w, "claude", "Read", obj{"file_path": 7}))
	})
}

func TestClaudeGlobAndEdit(t *testing.T) {
	w := fixture(t, nil, Options{})
	for _, f := range []string{"b.go", "a.go", "sub/c.go"} { // oldest first
		ok(t, w, "write", obj{"path": "/memory/" + f, "fileText": "package x\nvar v = 1\nvar v = 1\n"})
	}
	assert.Equal(t, Result{Text: "b.go\na.go\nsub/c.go"}, call(t, w, "claude", "Glob", obj{"pattern": "**/*.go"}), "oldest first, relative to the session's directory")
	assert.Equal(t, Result{Text: "No files found"}, call(t, w, "claude", "Glob", obj{"pattern": "*.rs"}))
	r := call(t, w, "claude", "Edit", obj{"file_path": "/memory/a.go", "old_string": "var v = 1", "new_string": "var v = 2"})
	assert.Equal(t, Result{Text: "Edit /memory/a.go: old_string occurs 2 times (lines 2, 3); include more surrounding lines to make it unique, or pass replace_all: true", IsError: true}, r)
	r = call(t, w, "claude", "Edit", obj{"file_path": "/memory/a.go", "old_string": "nope", "new_string": "x"})
	assert.Equal(t, Result{Text: "Edit /memory/a.go: old_string not found in the file; Read the file and copy the text exactly", IsError: true}, r)
	r = call(t, w, "claude", "Edit", obj{"path": "/memory/a.go", "old_str": "var v = 1", "new_str": "var v = 3", "replace_name": true})
	require.False(t, r.IsError, r.Text)
	assert.Contains(t, r.Text, "edited /memory/a.go (2 changes)", "Claude Code's path/old_str/new_str/replace_name aliases")
	r = call(t, w, "claude", "Edit", obj{"file_path": "/memory/a.go", "old_string": "x", "new_string": "y", "patchContent": "*** Begin Patch"})
	assert.Equal(t, Result{Text: `Edit: unknown argument "patchContent"; Edit takes file_path, new_string, old_string, replace_all`, IsError: true}, r)
	r = call(t, w, "claude", "Edit", obj{"file_path": "/memory/a.go", "old_string": 3, "new_string": "y"})
	assert.Equal(t, Result{Text: `Edit: argument "old_string" must be a string, got 3`, IsError: true}, r)
	// Every error names the tool as the caller called it.
	assert.Equal(t, "Read /memory/nope.txt: no such file or directory", call(t, w, "claude", "Read", obj{"file_path": "/memory/nope.txt"}).Text)
	assert.Equal(t, "read_file /memory/nope.txt: no such file or directory", call(t, w, "codex", "read_file", obj{"file_path": "/memory/nope.txt"}).Text)
	assert.Equal(t, "Read /memory/sub: is a directory; list it with ls in Bash", call(t, w, "claude", "Read", obj{"file_path": "/memory/sub"}).Text, "Claude Code has no LS")
	assert.Equal(t, "read_file /memory/sub: is a directory; use list_dir to list it", call(t, w, "codex", "read_file", obj{"file_path": "/memory/sub"}).Text)
	assert.Equal(t, "Grep: the pattern does not compile (RE2 syntax): missing closing ): `(?m)(x`; escape literal ( [ { . * + ? | with a backslash", call(t, w, "claude", "Grep", obj{"pattern": "(x"}).Text)
	assert.Equal(t, "Write /repo/x: read-only mount /repo (git@1a2b3c4); writable: /memory", call(t, w, "claude", "Write", obj{"file_path": "/repo/x", "content": "x"}).Text)
	r = call(t, w, "", "edit", obj{"path": "/memory/a.go", "oldText": "nope", "newText": "x"})
	assert.Equal(t, "edit /memory/a.go: oldText not found in the file; read the file and copy the text exactly", r.Text)
}

// TestClaudeReadSizeLimit: without a limit Claude Code's Read reads the
// whole file, and refuses one over the read limit in its own words unless
// allow_large is set.
func TestClaudeReadSizeLimit(t *testing.T) {
	big := strings.Repeat("line\n", 600) // 3000 bytes
	w := fixture(t, map[string]string{"/memory/big.txt": big}, Options{Limits: Limits{MaxReadBytes: 2048}})
	r := call(t, w, "claude", "Read", obj{"file_path": "/memory/big.txt"})
	assert.Equal(t, Result{Text: "File content (2.9KB) exceeds maximum allowed size (2KB). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file. To read it anyway, up to what still fits in your context, call Read again with allow_large: true — only if you genuinely need all of it or the user asked for the whole file.", IsError: true}, r)
	r = call(t, w, "claude", "Read", obj{"file_path": "/memory/big.txt", "allow_large": true})
	require.False(t, r.IsError, r.Text)
	assert.True(t, strings.HasPrefix(r.Text, "1\tline\n"), r.Text)
	r = call(t, w, "claude", "Read", obj{"file_path": "/memory/big.txt", "offset": 599, "limit": 2})
	assert.Equal(t, Result{Text: "599\tline\n600\tline\n"}, r)
}

// TestClaudeNotebookEdit: NotebookEdit writes each notebook as Claude Code
// 2.1.332 writes it: testdata/notebook/expected.json is what that release's
// own code (edit.js) makes of fixture.ipynb, case by case, and errors with
// its words.
func TestClaudeNotebookEdit(t *testing.T) {
	fixtureNB, err := os.ReadFile("testdata/notebook/fixture.ipynb")
	require.NoError(t, err)
	raw, err := os.ReadFile("testdata/notebook/expected.json")
	require.NoError(t, err)
	var cases []struct {
		Args map[string]any `json:"args"`
		Out  string         `json:"out"`
	}
	require.NoError(t, json.Unmarshal(raw, &cases))
	newID := regexp.MustCompile(`"id": "[0-9a-f]{8}"`)
	require.True(t, strings.HasSuffix(string(fixtureNB), "\n"), "edit.js's cases end in a newline")
	for _, variant := range []struct {
		name string
		wrap func(string) string
	}{
		{"final newline", func(s string) string { return s + "\n" }},
		{"none", func(s string) string { return s }},
		{"BOM, final newline, CRLF", func(s string) string { return strings.ReplaceAll("\uFEFF"+s+"\n", "\n", "\r\n") }},
	} {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", variant.name, i), func(t *testing.T) {
				w := fixture(t, map[string]string{"/memory/n.ipynb": variant.wrap(strings.TrimSuffix(string(fixtureNB), "\n"))}, Options{})
				args := map[string]any{"notebook_path": "/memory/n.ipynb"}
				maps.Copy(args, c.Args)
				r := call(t, w, "claude", "NotebookEdit", args)
				if msg, bad := strings.CutPrefix(c.Out, "ERR "); bad {
					require.True(t, r.IsError, r.Text)
					if msg != "attachments" {
						assert.Equal(t, msg, r.Text)
					}
					assert.Equal(t, variant.wrap(strings.TrimSuffix(string(fixtureNB), "\n")), readMem(t, w, "n.ipynb"), "unchanged")
					return
				}
				require.False(t, r.IsError, r.Text)
				got := newID.ReplaceAllString(readMem(t, w, "n.ipynb"), `"id": "NEWID123"`)
				assert.Equal(t, variant.wrap(strings.TrimSuffix(c.Out, "\n")), got)
				id, _ := c.Args["cell_id"].(string)
				switch c.Args["edit_mode"] {
				case "insert":
					assert.Regexp(t, `^Inserted cell [0-9a-f]{8} with `+regexp.QuoteMeta(c.Args["new_source"].(string))+`$`, r.Text)
				case "delete":
					assert.Equal(t, "Deleted cell "+id, r.Text)
				default:
					assert.Equal(t, "Updated cell "+id+" with "+c.Args["new_source"].(string), r.Text)
				}
			})
		}
	}

	w := fixture(t, map[string]string{"/memory/n.ipynb": string(fixtureNB), "/memory/n.txt": "{}", "/memory/bad.ipynb": "{\"cells\": [{}]}", "/memory/broken.ipynb": "{"}, Options{})
	for args, want := range map[string]string{
		`{"notebook_path":"/memory/n.txt","new_source":"x","cell_id":"c1"}`:                     "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.",
		`{"notebook_path":"/memory/n.ipynb","new_source":"x","edit_mode":"insert"}`:             "Cell type is required when using edit_mode=insert.",
		`{"notebook_path":"/memory/none.ipynb","new_source":"x","cell_id":"c1"}`:                "Notebook file does not exist.",
		`{"notebook_path":"/memory/bad.ipynb","new_source":"x","cell_id":"c1"}`:                 notebookInvalid,
		`{"notebook_path":"/memory/broken.ipynb","new_source":"x","cell_id":"c1"}`:              "Notebook is not valid JSON.",
		`{"notebook_path":"/memory/n.ipynb","cell_id":"c1"}`:                                    `NotebookEdit: missing required argument "new_source"`,
		`{"notebook_path":"/memory/n.ipynb","new_source":"x","edit_mode":"move"}`:               `NotebookEdit: argument "edit_mode" must be replace, insert or delete, got "move"`,
		`{"notebook_path":"/repo/n.ipynb","new_source":"x","cell_id":"c1"}`:                     "read-only mount",
		`{"notebook_path":"/memory/n.ipynb","new_source":"x","cell_id":"c1","cell_type":"raw"}`: `NotebookEdit: argument "cell_type" must be code or markdown, got "raw"`,
	} {
		r := w.Call(context.Background(), "claude", "NotebookEdit", json.RawMessage(args))
		require.True(t, r.IsError, "%s: %s", args, r.Text)
		assert.Contains(t, r.Text, want, args)
	}
}

func readMem(t *testing.T, w *Workspace, name string) string {
	t.Helper()
	b, err := mounts.ReadFile(context.Background(), w.fsys, mounts.Join("memory", name))
	require.NoError(t, err)
	return string(b)
}
