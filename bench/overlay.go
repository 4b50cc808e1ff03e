package main

// The writable git mount's rows (issue 15): an overlay over the commit,
// against the read-only git mount, a memory mount and a native checkout, all
// in the same run. The repository is generated (-overlay-files files, about
// 13 000 by default, plus one 50 MiB file for the copy-up row).
//
// Sides:
//
//	overlay:  MNT/repo of `vfsmount mount --mount type=git,...,writable`
//	          (memory upper), its synthesized .git included; a fresh mount
//	          per cold run
//	git:      MNT/repo of the read-only git mount (the read rows)
//	memory:   MNT/memory of the same workspace as the overlay (the write rows)
//	native:   a checkout of the same commit on /dev/shm, made by
//	          git clone --shared (alternates, like the overlay's .git) and
//	          git checkout: the same medium as the memory upper
//
// The read rows leave .git out on both sides (tar --exclude, find -prune):
// they measure the commit's files. The git rows run each command once to
// warm both sides (the first status builds git's untracked cache; on the
// overlay the first answer of the fsmonitor hook after a mount is "/",
// everything), then keep the best of -reps runs; the first status right
// after the mount is reported apart. The edit rows (issue 32) follow: sed
// -i over 500 of the commit's files, git status and git diff --stat after
// those edits, and git checkout of the commit two back, which changes every
// file the two commits after it changed (the generated history: two
// commits that each change some 1,800 files, then one that adds bigFile),
// the size of a checkout 100 commits back in a busy repository.

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// bigFile is the 50 MiB file of the copy-up row.
const (
	bigFile    = "assets/big.bin"
	bigFileMiB = 50
)

// runOverlay measures the overlay rows on a generated repository.
func runOverlay(o *options, bin string, verbose bool) error {
	root, err := os.MkdirTemp("/var/tmp", "vfsmount-bench-overlay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	src := filepath.Join(root, "repo")
	top := max(1, (o.overlayFiles+250)/500)
	start := time.Now()
	if _, err := genGitRepo(src, top, 50, 10, 2); err != nil {
		return fmt.Errorf("generate the repository: %w", err)
	}
	if err := addBigFile(src); err != nil {
		return err
	}
	sha, err := gitOut(src, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	files := top*50*10 + 1
	fmt.Printf("\ngenerated repository: %d files, 3 commits (%v)\n", files, time.Since(start).Round(time.Second))

	native, err := os.MkdirTemp("/dev/shm", "vfsmount-bench-native-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(native)
	if _, err := gitOut(root, "clone", "-q", "--shared", "--no-checkout", src, native); err != nil {
		return err
	}
	if _, err := gitOut(native, "checkout", "-q", "--detach", sha); err != nil {
		return err
	}

	writable := "type=git,src=" + src + ",rev=" + sha + ",dst=/repo,writable"
	plain := "type=git,src=" + src + ",rev=" + sha + ",dst=/repo"
	var r overlayResults
	best := func(dst *float64, i int, v float64) {
		if i == 0 || v < *dst {
			*dst = v
		}
	}
	for i := 0; i < o.reps; i++ {
		// Reads: cold and warm full read, RSS, cold find; each side on
		// fresh mounts.
		for _, side := range []struct {
			spec             string
			cold, warm, find *float64
			rss              *int64
			ready            *float64
		}{
			{writable, &r.cold, &r.warm, &r.find, &r.rss, &r.ready},
			{plain, &r.coldGit, &r.warmGit, &r.findGit, &r.rssGit, &r.readyGit},
		} {
			var cold, warm, find float64
			var rss int64
			ready, err := withMount(bin, verbose, []string{side.spec}, "repo", func(mnt string, pid int) error {
				dropCaches(o)
				var err error
				if cold, err = timeTar(filepath.Join(mnt, "repo"), ".git"); err != nil {
					return err
				}
				if warm, err = timeTar(filepath.Join(mnt, "repo"), ".git"); err != nil {
					return err
				}
				rss, err = vmRSS(pid)
				return err
			})
			if err != nil {
				return err
			}
			if _, err := withMount(bin, verbose, []string{side.spec}, "repo", func(mnt string, _ int) error {
				dropCaches(o)
				var err error
				find, err = timeFind(filepath.Join(mnt, "repo"), files, ".git")
				return err
			}); err != nil {
				return err
			}
			best(side.cold, i, cold)
			best(side.warm, i, warm)
			best(side.find, i, find)
			best(side.ready, i, ready)
			if i == 0 || rss < *side.rss {
				*side.rss = rss
			}
		}

		// Writes and git, in one workspace: the overlay and a memory
		// mount side by side.
		if _, err := withMount(bin, verbose, []string{writable, "type=memory,dst=/memory"}, "repo", func(mnt string, _ int) error {
			repo := filepath.Join(mnt, "repo")
			v, err := timeSmallFiles(filepath.Join(repo, fmt.Sprintf("new%d", i)))
			if err != nil {
				return err
			}
			best(&r.small, i, v)
			if v, err = timeSmallFiles(filepath.Join(mnt, "memory", fmt.Sprintf("new%d", i))); err != nil {
				return err
			}
			best(&r.smallMem, i, v)
			if v, err = timeCopyUp(filepath.Join(repo, bigFile)); err != nil {
				return err
			}
			best(&r.copyUp, i, v)
			if v, err = timeBigWrite(filepath.Join(mnt, "memory", fmt.Sprintf("big%d.bin", i))); err != nil {
				return err
			}
			best(&r.copyUpMem, i, v)
			// The writes above are not the git rows' changes.
			if err := os.RemoveAll(filepath.Join(repo, fmt.Sprintf("new%d", i))); err != nil {
				return err
			}
			if _, err := gitOut(repo, "checkout", "-q", "--", bigFile); err != nil {
				return err
			}
			if err := gitRows(&r, i, repo, native, best); err != nil {
				return err
			}
			return editRows(&r, i, repo, native, sha, best)
		}); err != nil {
			return err
		}
	}
	// The first status in a new daemon, where the shell tool runs git
	// (/repo in its namespace): vfsmount exec mounts the workspace for
	// itself and runs the command there.
	for i := range o.reps {
		for _, c := range []struct {
			dst     *float64
			changes int
		}{{&r.newClean, 0}, {&r.newDirty, 10}} {
			v, err := timeFirstStatus(bin, writable, c.changes)
			if err != nil {
				return err
			}
			best(c.dst, i, v)
		}
	}
	r.print(files, o)
	return nil
}

// timeFirstStatus runs `git status` once in /repo of a new vfsmount exec of
// the writable mount spec, after changing the given number of files, and
// returns its time in ms, measured in the namespace around git alone.
func timeFirstStatus(bin, spec string, changes int) (float64, error) {
	script := `cd /repo
n=0
for f in $(git ls-files | head -n ` + fmt.Sprint(changes*97) + ` | awk 'NR % 97 == 1'); do echo changed >> "$f"; n=$((n+1)); done
s=$(date +%s%N); out=$(git status --porcelain); e=$(date +%s%N)
[ "$(printf '%s\n' "$out" | grep -c '^ M ')" = "$n" ] || { echo "status does not show the $n changes: $out" >&2; exit 1; }
echo $(( (e - s) / 1000 ))`
	out, err := exec.Command(bin, "exec", "--mount", spec, "--", "sh", "-c", script).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("first git status in a new daemon: %w: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var us float64
	if _, err := fmt.Sscan(lines[len(lines)-1], &us); err != nil {
		return 0, fmt.Errorf("first git status in a new daemon: %q: %w", out, err)
	}
	return us / 1000, nil
}

// gitRows times the git commands on the overlay and on the native
// checkout, leaving both as they were.
func gitRows(r *overlayResults, i int, repo, native string, best func(*float64, int, float64)) error {
	first, err := timeGit(repo, "status", "--porcelain")
	if err != nil {
		return err
	}
	best(&r.statusFirst, i, first)
	for _, side := range []struct {
		dir                        string
		clean, dirty, diff, commit *float64
	}{
		{repo, &r.statusClean, &r.statusDirty, &r.diff, &r.commit},
		{native, &r.statusCleanN, &r.statusDirtyN, &r.diffN, &r.commitN},
	} {
		if _, err := timeGit(side.dir, "status", "--porcelain"); err != nil { // warm
			return err
		}
		v, err := timeGit(side.dir, "status", "--porcelain")
		if err != nil {
			return err
		}
		best(side.clean, i, v)
		changed, err := changeTen(side.dir)
		if err != nil {
			return err
		}
		if _, err := timeGit(side.dir, "status", "--porcelain"); err != nil { // warm
			return err
		}
		if v, err = timeGitCheck(side.dir, changed, "status", "--porcelain"); err != nil {
			return err
		}
		best(side.dirty, i, v)
		if v, err = timeGit(side.dir, "diff"); err != nil {
			return err
		}
		best(side.diff, i, v)
		if v, err = timeGit(side.dir, "-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-qam", "ten"); err != nil {
			return err
		}
		best(side.commit, i, v)
		// Back to the commit: the next run starts clean.
		if _, err := gitOut(side.dir, "reset", "-q", "--hard", "HEAD~1"); err != nil {
			return err
		}
	}
	return nil
}

// editFiles is how many files of the commit editRows edits with sed -i.
const editFiles = 500

// editRows times small-file work over many files of the commit (issue 32)
// on the overlay and on the native checkout, leaving both at sha: sed -i
// over editFiles files, git status and git diff --stat after those edits,
// and git checkout of the parent commit (which changes every file the
// last commit changed) and back.
func editRows(r *overlayResults, i int, repo, native, sha string, best func(*float64, int, float64)) error {
	out, err := gitOut(native, "ls-files", "--", "*.go")
	if err != nil {
		return err
	}
	all := strings.Fields(out)
	if len(all) < editFiles {
		return fmt.Errorf("sed -i row: the commit has %d Go files, want %d", len(all), editFiles)
	}
	step := len(all) / editFiles
	var edit []string
	for k := range editFiles {
		edit = append(edit, all[k*step])
	}
	for _, side := range []struct {
		dir                    string
		sed, status, diff, out *float64
	}{
		{repo, &r.sed, &r.sedStatus, &r.sedDiff, &r.checkout},
		{native, &r.sedN, &r.sedStatusN, &r.sedDiffN, &r.checkoutN},
	} {
		sed := exec.Command("sed", append([]string{"-i", "-e", "s/a/A/"}, edit...)...)
		sed.Dir = side.dir
		start := time.Now()
		if b, err := sed.CombinedOutput(); err != nil {
			return fmt.Errorf("sed -i in %s: %w: %s", side.dir, err, b)
		}
		best(side.sed, i, ms(time.Since(start)))
		if _, err := timeGit(side.dir, "status", "--porcelain"); err != nil { // warm
			return err
		}
		v, err := timeGitCheck(side.dir, edit, "status", "--porcelain")
		if err != nil {
			return err
		}
		best(side.status, i, v)
		if v, err = timeGit(side.dir, "diff", "--stat"); err != nil {
			return err
		}
		best(side.diff, i, v)
		if _, err := gitOut(side.dir, "checkout", "-q", "--", "."); err != nil {
			return err
		}
		if v, err = timeGit(side.dir, "checkout", "-q", "--detach", sha+"~2"); err != nil {
			return err
		}
		best(side.out, i, v)
		if _, err := gitOut(side.dir, "checkout", "-q", "--detach", sha); err != nil {
			return err
		}
	}
	if i == 0 {
		changed, err := gitOut(native, "diff", "--name-only", sha+"~2", sha)
		if err != nil {
			return err
		}
		r.checkoutFiles = len(strings.Fields(changed))
	}
	return nil
}

type overlayResults struct {
	ready, readyGit              float64
	cold, coldGit, warm, warmGit float64
	find, findGit                float64
	rss, rssGit                  int64
	small, smallMem              float64
	copyUp, copyUpMem            float64
	statusFirst                  float64
	newClean, newDirty           float64 // first status in a new daemon, in the shell's namespace
	statusClean, statusCleanN    float64
	statusDirty, statusDirtyN    float64
	diff, diffN, commit, commitN float64
	sed, sedN                    float64 // sed -i over editFiles files of the commit
	sedStatus, sedStatusN        float64 // git status after those edits
	sedDiff, sedDiffN            float64 // git diff --stat after them
	checkout, checkoutN          float64 // git checkout of the commit two back
	checkoutFiles                int     // the files that checkout changes
}

func (r *overlayResults) print(files int, o *options) {
	fmt.Printf("\nwritable git mount (overlay, memory upper) of a %d-file commit; best of %d\n\n", files, o.reps)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "workload\t overlay\t baseline\t ratio")
	fmt.Fprintln(tw, "--------\t -------\t --------\t -----")
	row := func(w workload, v, b float64, base string) {
		cell, _ := ratioCell(w, v/b)
		if w.Unit == "MiB" {
			cell = strings.Replace(cell, "throughput", "memory", 1)
		}
		fmt.Fprintf(tw, "%s\t %s\t %s %s\t %s\n", w.Name, value(v, w.Unit), value(b, w.Unit), base, cell)
	}
	row(workload{Name: "overlay: mount ready (+ .git)", Unit: "ms"}, r.ready, r.readyGit, "(git mount)")
	row(workload{Name: "overlay: cold full read (tar -c)", Unit: "ms", Target: 1.2}, r.cold, r.coldGit, "(git mount)")
	row(workload{Name: "overlay: warm full read (tar -c)", Unit: "ms", Target: 1.2}, r.warm, r.warmGit, "(git mount)")
	row(workload{Name: "overlay: cold find -type f", Unit: "ms", Target: 1.2}, r.find, r.findGit, "(git mount)")
	row(workload{Name: "overlay: RSS after a full read", Unit: "MiB", Target: 1.2}, float64(r.rss)/(1<<20), float64(r.rssGit)/(1<<20), "(git mount)")
	row(workload{Name: "overlay: write 1,000 4 KiB files", Unit: "ms"}, r.small, r.smallMem, "(memory mount)")
	row(workload{Name: "overlay: 50 MiB copy-up (append 1 byte)", Unit: "ms"}, r.copyUp, r.copyUpMem, "(memory: write 50 MiB)")
	row(workload{Name: "overlay: git status, first after mount (host path)", Unit: "ms"}, r.statusFirst, r.statusCleanN, "(native, clean)")
	row(workload{Name: "overlay: git status, first in a new daemon, /repo", Unit: "ms", Target: 2}, r.newClean, r.statusCleanN, "(native, clean)")
	row(workload{Name: "overlay: same, after 10 changes", Unit: "ms", Target: 2}, r.newDirty, r.statusDirtyN, "(native, 10 changes)")
	row(workload{Name: "overlay: git status, clean", Unit: "ms", Target: 1.2}, r.statusClean, r.statusCleanN, "(native)")
	row(workload{Name: "overlay: git status, 10 changes", Unit: "ms", Target: 1.5}, r.statusDirty, r.statusDirtyN, "(native)")
	row(workload{Name: "overlay: git diff, 10 changes", Unit: "ms"}, r.diff, r.diffN, "(native)")
	row(workload{Name: "overlay: git commit -a, 10 changes", Unit: "ms"}, r.commit, r.commitN, "(native)")
	row(workload{Name: fmt.Sprintf("overlay: sed -i over %d files of the commit", editFiles), Unit: "ms", Target: 4}, r.sed, r.sedN, "(native)")
	row(workload{Name: fmt.Sprintf("overlay: git status after %d edits", editFiles), Unit: "ms", Target: 1.5}, r.sedStatus, r.sedStatusN, "(native)")
	row(workload{Name: fmt.Sprintf("overlay: git diff --stat after %d edits", editFiles), Unit: "ms", Target: 1.5}, r.sedDiff, r.sedDiffN, "(native)")
	row(workload{Name: fmt.Sprintf("overlay: git checkout two commits back (%d files)", r.checkoutFiles), Unit: "ms", Target: 2}, r.checkout, r.checkoutN, "(native)")
	tw.Flush()
	verdict := "ok"
	if r.statusDirty > 100 {
		verdict = "MISSED"
	}
	fmt.Printf("\ngit status with 10 changes: %.1f ms (target <= 100 ms: %s)\n", r.statusDirty, verdict)
	switch {
	case o.dropped:
		fmt.Println("page cache dropped before each cold phase (echo 3 > /proc/sys/vm/drop_caches)")
	case o.dropErr != nil:
		fmt.Printf("page cache NOT dropped (%v): cold rows are warm for the kernel\n", o.dropErr)
	}
}

// timeSmallFiles times writing 1,000 files of 4 KiB into a new directory.
func timeSmallFiles(dir string) (float64, error) {
	data := bytes.Repeat([]byte("x"), 4096)
	start := time.Now()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return 0, err
	}
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), data, 0o644); err != nil {
			return 0, err
		}
	}
	return ms(time.Since(start)), nil
}

// timeCopyUp times the first change of a lower file: an append of one
// byte, which copies it up whole.
func timeCopyUp(name string) (float64, error) {
	start := time.Now()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 0, err
	}
	_, werr := f.Write([]byte{'\n'})
	if err := errors.Join(werr, f.Close()); err != nil {
		return 0, err
	}
	return ms(time.Since(start)), nil
}

// timeBigWrite times writing a 50 MiB file: what the copy-up writes.
func timeBigWrite(name string) (float64, error) {
	start := time.Now()
	if err := writeBig(name, bigFileMiB); err != nil {
		return 0, err
	}
	return ms(time.Since(start)), nil
}

// changeTen appends a line to ten files spread over the tree and returns
// their names.
func changeTen(dir string) ([]string, error) {
	var names []string
	for i := range 10 {
		n := fmt.Sprintf("pkg%02d/mod%02d/file%02d.go", i*2%max(1, countTop(dir)), i*5, i)
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, err
		}
		_, werr := f.WriteString("// changed\n")
		if err := errors.Join(werr, f.Close()); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}

// countTop counts the generated top directories (pkgNN) of a tree.
func countTop(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "pkg*"))
	return len(m)
}

// timeGit times one git command in dir.
func timeGit(dir string, args ...string) (float64, error) {
	return timeGitCheck(dir, nil, args...)
}

// timeGitCheck times a git command and, with want, checks that its output
// names exactly those files as modified (status --porcelain).
func timeGitCheck(dir string, want []string, args ...string) (float64, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, errb.String())
	}
	if want != nil {
		var b strings.Builder
		want = slices.Sorted(slices.Values(want))
		for _, n := range want {
			b.WriteString(" M " + n + "\n")
		}
		if out.String() != b.String() {
			return 0, fmt.Errorf("git %s in %s: got\n%swant\n%s", strings.Join(args, " "), dir, out.String(), b.String())
		}
	}
	return ms(elapsed), nil
}

// addBigFile commits a 50 MiB file (random, so no compression helps) on
// top of the repository's HEAD.
func addBigFile(src string) error {
	p := filepath.Join(src, bigFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	data := make([]byte, bigFileMiB<<20)
	_, _ = rand.Read(data)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	// The repository has no checkout: the index starts as HEAD.
	if _, err := gitOut(src, "read-tree", "HEAD"); err != nil {
		return err
	}
	if _, err := gitOut(src, "add", bigFile); err != nil {
		return err
	}
	_, err := gitOut(src, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", "big file")
	return err
}
