// Package layering checks the import rules of the design (DESIGN.md, "Packages
// and the direction of imports") on every package of the module, so a change
// that crosses a layer fails `make test` instead of being found in review.
package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/vfsmount/vfsmount"

// A rule says which module packages a package (matched by its module-relative
// directory) may import in its non-test files. A pattern ending in "/..." also
// matches the directory's subpackages. Test files may import more (fakes,
// fixtures, other layers for end-to-end checks), but never break [thirdParty].
type rule struct {
	pkg   string
	may   []string
	about string
}

var rules = []rule{
	{"mounts", nil, "the contract imports nothing of the module"},
	{"mounts/mountstest", []string{"mounts"}, "the conformance suite knows the contract only"},
	{"mounts/readpattern", nil, "the read-pattern detector imports nothing of the module"},
	{"mounts/gitfs/internal/gittest", []string{"mounts", "mounts/readpattern", "mounts/gitfs/...", "internal/testutil"}, "gitfs's test fixtures build on the shared test helpers"},
	{"mounts/gitfs/...", []string{"mounts", "mounts/readpattern", "mounts/gitfs/..."}, "a mount imports the contract, the read-pattern detector and itself, never another mount"},
	{"mounts/hostfs/...", []string{"mounts", "mounts/hostfs/..."}, "a mount imports the contract and itself, never another mount"},
	{"mounts/memfs/...", []string{"mounts", "mounts/memfs/..."}, "a mount imports the contract and itself, never another mount"},
	{"mounts/skillsfs/...", []string{"mounts", "mounts/skillsfs/..."}, "a mount imports the contract and itself, never another mount"},
	{"mounts/overlayfs/...", []string{"mounts", "mounts/overlayfs/..."}, "a mount imports the contract and itself, never another mount"},
	{"mounts/remotefs/...", []string{"mounts", "mounts/remotefs/..."}, "a remote mount imports the contract and itself; its peer serves any mounts.FS it is given"},
	{"mounts/writablegit", []string{"mounts", "mounts/gitfs", "mounts/overlayfs"}, "a writable git mount is an overlay over a git mount, and its export back to git"},
	{"mounts/checkpoint", []string{"mounts", "mounts/gitfs"}, "checkpoints freeze what can freeze (mounts.FreezeFS) by capability, never by type; their diffs are git's"},
	{"union/...", []string{"mounts", "union/..."}, "the union composes any mounts.FS, never a concrete one or another layer"},
	{"policy/...", []string{"mounts", "policy/..."}, "policy decorates any mounts.FS, below both faces"},
	{"fusefs/...", []string{"mounts", "fusefs/..."}, "the kernel face serves any mounts.FS"},
	{"agentbridge/...", []string{"mounts", "agentbridge/..."}, "the tool face serves any mounts.FS"},
	{"internal/...", []string{"mounts", "internal/..."}, "test helpers"},
	{"store", []string{"mounts", "mounts/checkpoint", "mounts/memfs"}, "the object store carries checkpoints (memory trees) to S3 and back; it knows no face and no layer"},
	{"workspace", []string{"mounts", "mounts/checkpoint", "mounts/gitfs", "mounts/overlayfs", "mounts/writablegit", "union", "policy", "agentbridge/...", "fusefs", "internal/hostpath", "store"}, "the workspace stacks mounts, union, policy and both faces, and serves the services over the guarded tree"},
	{"examples/...", []string{"mounts", "mounts/...", "union", "policy", "agentbridge/...", "fusefs", "workspace", "internal/..."}, "examples use the library as a user would"},
	{"cmd/...", []string{"..."}, "the CLI stacks everything; nothing imports it"},
	{"bench", []string{"agentbridge/jsonrpc", "workspace", "store"}, "the benchmark drives the built binary (through its control socket too), and times the store's fork as a library call"},
	{"integration", nil, "integration tests are test files only"},
	{"stress", nil, "stress tests are test files only"},
	{"deploy", nil, "deployment checks are test files only"},
}

// thirdParty confines a library to the packages that own it, in test files
// too. An import matches the first entry whose prefix it has.
var thirdParty = []struct {
	prefix string
	in     []string
}{
	// go-git's gitignore matcher is the one part of go-git other layers
	// use: policy's patterns and grep's ignore files.
	{"github.com/go-git/go-git/v5/plumbing/format/gitignore", []string{"mounts/gitfs/...", "policy/...", "agentbridge/..."}},
	{"github.com/go-git/", []string{"mounts/gitfs/..."}},
	{"github.com/hanwen/go-fuse/", []string{"fusefs/...", "internal/fusetest", "integration"}},
	{"go.etcd.io/bbolt", []string{"mounts/memfs/boltstore"}},
	{"golang.org/x/crypto/ssh", []string{"mounts/remotefs/...", "cmd/...", "integration", "bench"}},
	{"github.com/modelcontextprotocol/go-sdk", []string{"agentbridge/...", "cmd/...", "examples/...", "integration"}},
	{"github.com/aws/", []string{"store", "internal/testutil", "bench"}},
	{"github.com/pkg/sftp", []string{"mounts/remotefs/sftpfs"}},
}

func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func ruleFor(pkg string) (rule, bool) {
	for _, r := range rules {
		if matches(r.pkg, pkg) {
			return r, true
		}
	}
	return rule{}, false
}

// imports lists, per module-relative package directory, the imports of its
// non-test and of its test files.
func imports(t *testing.T, root string) (code, tests map[string][]string) {
	t.Helper()
	code, tests = map[string][]string{}, map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "mnt" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		into := code
		if strings.HasSuffix(p, "_test.go") {
			into = tests
		}
		for _, s := range f.Imports {
			path, _ := strconv.Unquote(s.Path.Value)
			into[rel] = append(into[rel], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return code, tests
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(b), "module "+module+"\n") {
		t.Fatalf("%s is not the module root (%v)", dir, err)
	}
	return dir
}

func TestImportRules(t *testing.T) {
	code, tests := imports(t, moduleRoot(t))
	if len(code) < 10 {
		t.Fatalf("found only %d packages: the walk is broken", len(code))
	}
	for _, pkg := range sortedKeys(code) {
		r, ok := ruleFor(pkg)
		if !ok {
			t.Errorf("package %s has no import rule: add it to rules", pkg)
			continue
		}
		for _, imp := range code[pkg] {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if !slices.ContainsFunc(r.may, func(m string) bool { return matches(m, dep) }) {
				t.Errorf("%s imports %s: %s", pkg, dep, r.about)
			}
		}
	}
	for _, files := range []map[string][]string{code, tests} {
		for _, pkg := range sortedKeys(files) {
			for _, imp := range files[pkg] {
				if strings.HasPrefix(imp, module+"/cmd/") {
					t.Errorf("%s imports %s: nothing imports the CLI", pkg, imp)
				}
				for _, tp := range thirdParty {
					if !strings.HasPrefix(imp, tp.prefix) {
						continue
					}
					if !slices.ContainsFunc(tp.in, func(m string) bool { return matches(m, pkg) }) {
						t.Errorf("%s imports %s: only %s may", pkg, imp, strings.Join(tp.in, ", "))
					}
					break
				}
			}
		}
	}
}

// TestRulesBite checks the checker: a rule it cannot break checks nothing.
func TestRulesBite(t *testing.T) {
	for _, tt := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"mounts/skillsfs", "mounts/hostfs", false},
		{"mounts/overlayfs", "mounts/memfs", false},
		{"mounts/skillsfs", "mounts", true},
		{"mounts/memfs/boltstore", "mounts/memfs", true},
		{"union", "policy", false},
		{"agentbridge", "mounts/memfs", false},
		{"agentbridge/mcpserver", "agentbridge", true},
		{"fusefs", "union", false},
		{"cmd/vfsmount", "fusefs", true},
		{"workspace", "mounts/memfs", false},
		{"mounts/checkpoint", "mounts/memfs", false},
		{"mounts/gitfs/internal/gittest", "internal/testutil", true},
		{"mounts/gitfs/internal/objstore", "internal/testutil", false},
		{"mounts/gitfs", "internal/testutil", false},
	} {
		r, found := ruleFor(tt.pkg)
		if !found {
			t.Fatalf("no rule for %s", tt.pkg)
		}
		got := slices.ContainsFunc(r.may, func(m string) bool { return matches(m, tt.dep) })
		if got != tt.ok {
			t.Errorf("%s importing %s allowed = %v, want %v", tt.pkg, tt.dep, got, tt.ok)
		}
	}
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
