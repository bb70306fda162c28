package pgtemporal

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// logTail passes the server's output on to the caller's writer and keeps its
// last lines, which go into the errors of a failed start.
type logTail struct {
	mu      sync.Mutex
	w       io.Writer
	lines   []string // a ring of the last len(lines) complete lines
	next    int      // where the next line goes in lines
	partial []byte   // the current line, until its newline arrives
}

func newLogTail(w io.Writer, n int) *logTail {
	if w == nil {
		w = io.Discard
	}
	return &logTail{w: w, lines: make([]string, n)}
}

// Write never fails: a broken caller's writer must not make the server die
// of a closed pipe.
func (t *logTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.Write(p)
	rest := p
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.partial = append(t.partial, rest...)
			return len(p), nil
		}
		t.lines[t.next] = string(append(t.partial, rest[:i]...))
		t.next = (t.next + 1) % len(t.lines)
		t.partial = t.partial[:0]
		rest = rest[i+1:]
	}
}

// String returns the kept lines, oldest first, and the unfinished one.
func (t *logTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for i := range t.lines {
		if l := t.lines[(t.next+i)%len(t.lines)]; l != "" {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	b.Write(t.partial)
	return b.String()
}
