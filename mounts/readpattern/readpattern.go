// Package readpattern is the one read-pattern detector of vfsmount: it is
// told what programs do to a mount (a file opened for reading) and says
// when they are scanning, so that a mount which must
// decode content before it can serve it (a git commit) reads ahead of
// them. It is modelled on gcsfuse's read-pattern detector: explicit inputs,
// named thresholds, and nothing else (no goroutines, no I/O, no clock of
// its own), so its decisions are unit-tested with a fake clock.
//
// # Inputs and decisions
//
// A scan is what tar, cp -r, grep -r or a build does: it reads the files of
// a directory one after another. [Detector.Opened] is told of every file
// opened, by its slash-separated name; the [Thresholds.ScanFiles]-th
// distinct file of one directory opened in a row starts a scan there
// ([Pattern.Started]: read ahead the files after this one), and every sign
// of a scan (such a file, or any later one in the same run) keeps the scan
// going for [Thresholds.Window]. A file opened in another directory starts
// that directory's run over, and so does the end of a scan's window; a
// single file read in a directory (an agent looking at one file) is no
// scan, and neither is listing alone (find, ls -R). While a scan is on
// ([Detector.Scan]), the small files of each directory listed are worth
// reading ahead before the scanner reaches them.
//
// Reads within a file are not an input: a whole file is what a mount
// decodes, and the kernel's own read-ahead pipelines the READs of a large
// one. The read-ahead bounds ([Thresholds.FileMax], [Thresholds.DirFiles],
// [Thresholds.DirBytes]) are here so that every reader ahead uses the same.
//
// Each scan has a number ([Pattern.Scan], [Detector.Scan]): a reader ahead
// that offers its pages once per scan (not once for the life of the mount)
// tells by it that a later scan reads again what an earlier one offered,
// after the kernel dropped it.
package readpattern

import (
	"path"
	"sync"
	"time"
)

// Thresholds are the numbers the detector decides by.
type Thresholds struct {
	// ScanFiles is how many distinct files of one directory, opened one
	// after another, make a scan.
	ScanFiles int
	// Window is how long a scan lasts after its last sign.
	Window time.Duration
	// FileMax is the largest file worth reading ahead: a larger one is
	// read in many READs, which the kernel's read-ahead already
	// pipelines.
	FileMax int64
	// DirFiles and DirBytes bound what one directory's scan reads ahead
	// of the file that started it.
	DirFiles int
	DirBytes int64
}

// Default are the thresholds vfsmount uses.
var Default = Thresholds{
	ScanFiles: 2,
	Window:    time.Second,
	FileMax:   1 << 20,
	DirFiles:  256,
	DirBytes:  16 << 20,
}

// Pattern is what the detector makes of one open.
type Pattern struct {
	// Scanning says a scan is on (this open may be its sign, or it may
	// be on from earlier ones).
	Scanning bool
	// Started says this open started a scan of its directory: the files
	// after it there are worth reading ahead.
	Started bool
	// Scan numbers the scan that is on; 0 when none is.
	Scan uint64
}

// Detector is one mount's detector. It is safe for concurrent use.
type Detector struct {
	th  Thresholds
	now func() time.Time

	mu    sync.Mutex
	dir   string // the directory of the run of opens
	last  string // the file opened last
	run   int    // distinct files of dir opened in a row
	until time.Time
	scan  uint64 // the number of the scan on until until
}

// New returns a detector deciding by th, with now as its clock (nil:
// time.Now).
func New(th Thresholds, now func() time.Time) *Detector {
	if now == nil {
		now = time.Now
	}
	return &Detector{th: th, now: now}
}

// Thresholds returns what d decides by.
func (d *Detector) Thresholds() Thresholds { return d.th }

// Opened is told that the file name was opened for reading.
func (d *Detector) Opened(name string) Pattern {
	dir := path.Dir(name)
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case dir != d.dir, d.run >= d.th.ScanFiles && !now.Before(d.until):
		// Another directory, or the scan of this one is over: a new
		// run.
		d.dir, d.run = dir, 1
	case name != d.last:
		d.run++
	}
	d.last = name
	var p Pattern
	if d.run >= d.th.ScanFiles {
		if !now.Before(d.until) {
			d.scan++ // a new scan: the last one's window is over
		}
		d.until = now.Add(d.th.Window)
		p.Started = d.run == d.th.ScanFiles
	}
	p.Scanning = now.Before(d.until)
	if p.Scanning {
		p.Scan = d.scan
	}
	return p
}

// Scan returns the number of the scan that is on, 0 when none is. A reader
// ahead asks it as a directory is listed: during a scan, the listed
// directory's small files are read next.
func (d *Detector) Scan() uint64 {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.until) {
		return d.scan
	}
	return 0
}
