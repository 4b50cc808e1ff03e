package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGitRepo(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "d/e/b.txt": "b\n"}
	dir, commit := GitRepo(t, files)
	_, again := GitRepo(t, files)
	if commit != again {
		t.Errorf("the same files committed twice: %s, then %s; want one id", commit, again)
	}
	if got := Git(t, dir, "log", "--format=%an <%ae> %ad %cn <%ce> %cd %s", "--date=unix"); got != "Test <test@example.com> 1709294400 Test <test@example.com> 1709294400 one" {
		t.Errorf("log: %q", got)
	}
	if got := Git(t, dir, "branch", "--show-current"); got != "main" {
		t.Errorf("branch %q, want main", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, "d", "e", "b.txt"))
	if err != nil || string(b) != "b\n" {
		t.Errorf("d/e/b.txt: %q, %v", b, err)
	}

	next := GitCommit(t, dir, map[string]string{"c.txt": "c\n"}, "two")
	if got := Git(t, dir, "rev-parse", "HEAD^"); got != commit {
		t.Errorf("HEAD^ = %s, want %s", got, commit)
	}
	if got := Git(t, dir, "ls-tree", "-r", "--name-only", next); got != "a.txt\nc.txt\nd/e/b.txt" {
		t.Errorf("tree of the second commit: %q", got)
	}
}
