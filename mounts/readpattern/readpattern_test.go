package readpattern

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// clock is a fake clock the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestDetector(t *testing.T) {
	type open struct {
		name    string
		after   time.Duration // clock moved before the open
		want    Pattern
		comment string
	}
	for _, tc := range []struct {
		name  string
		opens []open
	}{
		{"one file is no scan", []open{
			{"src/a.go", 0, Pattern{}, "a lone read"},
			{"src/a.go", 0, Pattern{}, "the same file again"},
		}},
		{"a second file of the directory starts a scan", []open{
			{"src/a.go", 0, Pattern{}, ""},
			{"src/b.go", 0, Pattern{Scanning: true, Started: true, Scan: 1}, "the second file"},
			{"src/c.go", 0, Pattern{Scanning: true, Scan: 1}, "a later file keeps it going"},
		}},
		{"files of different directories are no scan", []open{
			{"a/x", 0, Pattern{}, ""},
			{"b/x", 0, Pattern{}, ""},
			{"c/x", 0, Pattern{}, ""},
		}},
		{"a scan outlives a directory change within the window", []open{
			{"a/1", 0, Pattern{}, ""},
			{"a/2", 0, Pattern{Scanning: true, Started: true, Scan: 1}, ""},
			{"b/1", 500 * time.Millisecond, Pattern{Scanning: true, Scan: 1}, "first of b: still the scan"},
			{"b/2", 0, Pattern{Scanning: true, Started: true, Scan: 1}, "b's run starts its read-ahead"},
		}},
		{"the window ends a scan; the next is another", []open{
			{"a/1", 0, Pattern{}, ""},
			{"a/2", 0, Pattern{Scanning: true, Started: true, Scan: 1}, ""},
			{"z/1", time.Second, Pattern{}, "the window is over"},
			{"z/2", 0, Pattern{Scanning: true, Started: true, Scan: 2}, "a new scan"},
		}},
		{"after the window, the same directory starts over", []open{
			{"a/1", 0, Pattern{}, ""},
			{"a/2", 0, Pattern{Scanning: true, Started: true, Scan: 1}, ""},
			{"a/3", time.Second, Pattern{}, "the window is over: a new run"},
			{"a/4", 0, Pattern{Scanning: true, Started: true, Scan: 2}, "whose second file starts a new scan"},
		}},
		{"each sign extends the window", []open{
			{"a/1", 0, Pattern{}, ""},
			{"a/2", 0, Pattern{Scanning: true, Started: true, Scan: 1}, ""},
			{"a/3", 900 * time.Millisecond, Pattern{Scanning: true, Scan: 1}, ""},
			{"a/4", 900 * time.Millisecond, Pattern{Scanning: true, Scan: 1}, "1.8 s after the start, 0.9 s after the last sign"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1000, 0)}
			d := New(Default, c.now)
			for i, o := range tc.opens {
				c.advance(o.after)
				assert.Equal(t, o.want, d.Opened(o.name), "open %d (%s) %s", i, o.name, o.comment)
				assert.Equal(t, o.want.Scan, d.Scan(), "Scan after open %d", i)
			}
		})
	}
}

func TestScanFilesThreshold(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	th := Default
	th.ScanFiles = 3
	d := New(th, c.now)
	assert.False(t, d.Opened("d/1").Scanning)
	assert.False(t, d.Opened("d/2").Scanning, "two files are not three")
	assert.Equal(t, Pattern{Scanning: true, Started: true, Scan: 1}, d.Opened("d/3"))
	assert.Equal(t, th, d.Thresholds())
}

func TestScanEndsWithoutOpens(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	d := New(Default, c.now)
	d.Opened("d/1")
	d.Opened("d/2")
	c.advance(Default.Window - time.Nanosecond)
	assert.Equal(t, uint64(1), d.Scan(), "on until the window is over")
	c.advance(time.Nanosecond)
	assert.Zero(t, d.Scan(), "over")
}
