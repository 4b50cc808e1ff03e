package overlayfs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Journal records which names of the merged tree changed, each with the
// sequence number of its last change, so that a client can ask what changed
// since it last looked: git's fsmonitor hook does (see [Journal.Since]).
// Every change through the overlay is recorded after it is made, writes
// through open files included, so a name is never reported before its
// change can be seen. It is safe for concurrent use.
//
// A token is "vfsmount:ID:SEQ", ID naming this journal (random, new with
// every overlay: a token from an earlier run is unknown) and SEQ the last
// change it covers. The journal keeps at most maxJournal names; when it
// would hold more it forgets them all, and a token older than what it
// forgot is answered with "everything may have changed".
type Journal struct {
	mu    sync.Mutex
	id    string
	seq   uint64
	floor uint64            // tokens older than this are not answerable
	names map[string]uint64 // name (with a trailing "/" for a directory) → seq
}

// maxJournal bounds the names a journal remembers.
const maxJournal = 1 << 16

func newJournal() *Journal {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Journal{id: hex.EncodeToString(b[:]), names: map[string]uint64{}}
}

// note records a change of each name; dir names are recorded with a
// trailing "/" as well, which git's fsmonitor reads as "this directory and
// everything below it".
func (j *Journal) note(dir bool, names ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.names)+2*len(names) > maxJournal {
		j.forget()
	}
	j.seq++
	for _, n := range names {
		j.names[n] = j.seq
		if dir {
			if n == "." {
				j.forget()
				return
			}
			j.names[n+"/"] = j.seq
		}
	}
}

// Changed records names of the merged tree changed below the overlay, in
// its upper layer directly: a checkpoint's restore. Each may be a
// directory, so each is recorded as one too (for a file the "name/" form
// matches nothing).
func (f *FS) Changed(names ...string) {
	if len(names) > 0 {
		f.j.note(true, names...)
	}
}

// forget drops every name: older tokens become unanswerable. The caller
// holds mu.
func (j *Journal) forget() {
	j.seq++
	j.floor = j.seq
	clear(j.names)
}

// Token is the token of the journal's state now: Since(Token()) lists what
// changes after this call.
func (j *Journal) Token() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.token()
}

func (j *Journal) token() string { return "vfsmount:" + j.id + ":" + strconv.FormatUint(j.seq, 10) }

// Since returns a new token and the names changed after token was issued,
// sorted, directories with a trailing "/". all reports that the journal
// cannot tell (a token of another journal or run, malformed, or older than
// what the journal forgot): then everything may have changed.
func (j *Journal) Since(token string) (next string, names []string, all bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	next = j.token()
	seq, ok := j.parse(token)
	if !ok || seq < j.floor || seq > j.seq {
		return next, nil, true
	}
	for n, s := range j.names {
		if s > seq {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return next, names, false
}

func (j *Journal) parse(token string) (uint64, bool) {
	rest, ok := strings.CutPrefix(token, "vfsmount:"+j.id+":")
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	return seq, err == nil
}

// Journal is the overlay's change journal.
func (f *FS) Journal() *Journal { return f.j }

func (j *Journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return fmt.Sprintf("journal %s: %d names, seq %d", j.id, len(j.names), j.seq)
}
