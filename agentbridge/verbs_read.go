package agentbridge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of TOOLS.md.
const (
	readDefaultLimit = 2000
	readMaxLineChars = 2000
	sniffLen         = 8 << 10 // binary detection window: a NUL here means binary
)

func (w *Workspace) read(ctx context.Context, a *args) (string, error) {
	p, err := a.path(a.tool, "path", true, "")
	if err != nil {
		return "", err
	}
	offset, err := a.integer("offset", 1, 0, maxInt)
	if err != nil {
		return "", err
	}
	offset = max(offset, 1) // some harnesses count from 0; both mean the first line
	limit, err := a.integer("limit", readDefaultLimit, 1, maxInt)
	if err != nil {
		return "", err
	}
	if out, ok, err := taskOutputFile(a, p.abs()); ok {
		// A task's output (jobs a command left running), numbered as a
		// file is.
		if err != nil {
			return "", err
		}
		var b []byte
		for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if i+1 >= offset && i+1 < offset+limit {
				b = appendNumbered(b, i+1, []byte(l))
			}
		}
		if len(b) == 0 {
			return fmt.Sprintf("(%s is empty)", p.abs()), nil
		}
		return string(b), nil
	}
	real, attr, _, err := w.resolve(ctx, p.name, true, false)
	if err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	if attr.IsDir() {
		return "", fmt.Errorf("%s %s: is a directory; %s", a.tool, p.abs(), listHint(ctx))
	}
	if !attr.Mode.IsRegular() {
		return "", notRegular(a.tool, p, attr.Mode)
	}
	f, err := w.fsys.Open(ctx, real)
	if err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		attr = st
	}
	sr := io.NewSectionReader(f, 0, attr.Size)
	head := make([]byte, min(int64(sniffLen), attr.Size))
	n, err := io.ReadFull(sr, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", w.explain(ctx, a.tool, p, err)
	}
	head = head[:n]
	if bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("%s %s: binary file (%d bytes, %s); %s shows text only, use the shell to inspect it",
			a.tool, p.abs(), attr.Size, http.DetectContentType(head), a.tool)
	}
	if attr.Size == 0 {
		return fmt.Sprintf("(%s is empty)", p.abs()), nil
	}
	if _, err := sr.Seek(0, io.SeekStart); err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	br := bufio.NewReaderSize(sr, 64<<10)
	out := make([]byte, 0, min(attr.Size+attr.Size/4, 8<<20))
	line, shown := 0, 0
	var long []byte // a line longer than the buffer, assembled
	for {
		chunk, rerr := br.ReadSlice('\n')
		if errors.Is(rerr, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		if long != nil {
			chunk = append(long, chunk...)
			long = nil
		}
		if len(chunk) == 0 && rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				return "", w.explain(ctx, a.tool, p, rerr)
			}
			break
		}
		line++
		if line < offset {
			if rerr != nil {
				break
			}
			continue
		}
		if shown == limit {
			// Count what is left without keeping it.
			more, cerr := countLines(br)
			if cerr != nil {
				return "", w.explain(ctx, a.tool, p, cerr)
			}
			out = fmt.Appendf(out, "… %d more lines; %s\n", 1+more, callWith(a, VerbRead, "offset", line, "the rest is not shown"))
			return string(out), nil
		}
		text := bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte{'\n'}), []byte{'\r'})
		mark := len(out)
		out = appendNumbered(out, line, text)
		if shown > 0 && len(out) > w.limits.MaxReadBytes {
			// Over the byte limit: drop this line and say where to go on.
			out = fmt.Appendf(out[:mark], "… output capped at %d bytes; %s\n", w.limits.MaxReadBytes, callWith(a, VerbRead, "offset", line, "the rest is not shown"))
			return string(out), nil
		}
		shown++
		if rerr != nil {
			break
		}
	}
	if offset > line {
		return "", fmt.Errorf("%s %s: offset %d is past the end of the file (%d lines)", a.tool, p.abs(), offset, line)
	}
	return string(out), nil
}

// appendNumbered appends one cat -n line ("%6d\t%s\n"), truncating text
// over readMaxLineChars characters, without fmt: read formats every line.
func appendNumbered(out []byte, n int, text []byte) []byte {
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(digits); i < 6; i++ {
		out = append(out, ' ')
	}
	out = append(out, digits...)
	out = append(out, '\t')
	if len(text) > readMaxLineChars {
		return append(append(out, truncateLine(string(text))...), '\n')
	}
	out = append(out, text...)
	return append(out, '\n')
}

// countLines counts the lines left in r: newlines, plus one for a final
// line without one.
func countLines(r *bufio.Reader) (int, error) {
	n := 0
	last := byte('\n')
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

func truncateLine(s string) string {
	if len(s) <= readMaxLineChars || utf8.RuneCountInString(s) <= readMaxLineChars {
		return s
	}
	total := utf8.RuneCountInString(s)
	i, count := 0, 0
	for i < len(s) && count < readMaxLineChars {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return fmt.Sprintf("%s… [line truncated: %d of %d chars shown]", s[:i], readMaxLineChars, total)
}
