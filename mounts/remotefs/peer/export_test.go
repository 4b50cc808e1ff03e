package peer

// SetRipgrep makes searches run the ripgrep at path ("": none, the Go
// scan alone) until restore is called.
func SetRipgrep(path string) (restore func()) {
	old := ripgrepPath
	ripgrepPath = func() string { return path }
	return func() { ripgrepPath = old }
}

// RipgrepRuns reports how many searches ripgrep answered, and how many
// it could not (the Go scan then did).
func RipgrepRuns() (ok, fellBack int) {
	ripgrepRuns.Lock()
	defer ripgrepRuns.Unlock()
	return ripgrepRuns.ok, ripgrepRuns.fellBack
}

// RgSyntax is rgSyntax.
var RgSyntax = rgSyntax
