package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocListsEveryCommand holds the usage list of the package doc (main.go)
// to the command tree: a command added without its line, or a line left for
// a command that is gone, fails here.
func TestDocListsEveryCommand(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^//\tvfsmount ([a-z|]+)`).FindAllStringSubmatch(string(src), -1) {
		for _, name := range strings.Split(m[1], "|") {
			documented[name] = true
		}
	}
	for _, c := range newApp(io.Discard, io.Discard).commands() {
		if !documented[c.Name()] {
			t.Errorf("the package doc's usage list lacks %q", c.Name())
		}
		delete(documented, c.Name())
	}
	for name := range documented {
		t.Errorf("the package doc's usage list has %q, which is no command", name)
	}
}
