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

// OnWatchesPlaced calls fn once each peer started from now on has placed
// its watches on its tree, until restore is called.
func OnWatchesPlaced(fn func()) (restore func()) {
	watchesPlaced = fn
	return func() { watchesPlaced = nil }
}

// Subdirs is subdirs: the names of dir's directories.
var Subdirs = subdirs
