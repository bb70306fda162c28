package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMaxBytes bounds the top README: a newcomer reads it to the end, and
// the rest lives in the documents its "Where to read next" table links.
const readmeMaxBytes = 12_000

// walkthroughMarker is the line, invisible on GitHub, just before each
// ```sh block of the README that TestReadmeWalkthrough runs.
const walkthroughMarker = "<!-- walkthrough -->"

// readReadme returns the repository's top README.
func readReadme(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// walkthroughBlocks returns the body of every ```sh block that follows a
// walkthroughMarker line, in order. A marker not followed by a ```sh fence,
// or a block left open, is an error: the test must run what the reader sees.
func walkthroughBlocks(t *testing.T, readme []byte) []string {
	t.Helper()
	var blocks []string
	sc := bufio.NewScanner(bytes.NewReader(readme))
	line := 0
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) != walkthroughMarker {
			continue
		}
		if !sc.Scan() || strings.TrimSpace(sc.Text()) != "```sh" {
			t.Fatalf("README.md:%d: %s is not followed by a ```sh fence", line, walkthroughMarker)
		}
		line++
		start := line
		var b strings.Builder
		closed := false
		for sc.Scan() {
			line++
			if strings.TrimSpace(sc.Text()) == "```" {
				closed = true
				break
			}
			b.WriteString(sc.Text())
			b.WriteByte('\n')
		}
		if !closed {
			t.Fatalf("README.md:%d: the walkthrough block is not closed", start)
		}
		blocks = append(blocks, b.String())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// TestReadmeSize keeps the top README short enough to be read to the end.
func TestReadmeSize(t *testing.T) {
	t.Parallel()
	if n := len(readReadme(t)); n > readmeMaxBytes {
		t.Errorf("README.md is %d bytes, more than %d: move detail to the documents it links", n, readmeMaxBytes)
	}
}

// hardPort matches an address or port the walkthrough must take from its
// variables (API, RECV_PORT) rather than spell out.
var hardPort = regexp.MustCompile(`127\.0\.0\.1:\d|localhost|\b80[89]\d\b`)

// TestReadmeWalkthroughPorts checks that every line of the walkthrough
// reaches the service and the receiver through API and RECV_PORT, so that
// it runs on any ports; only the two lines giving their defaults name one.
func TestReadmeWalkthroughPorts(t *testing.T) {
	t.Parallel()
	blocks := walkthroughBlocks(t, readReadme(t))
	if len(blocks) == 0 {
		t.Fatalf("README.md has no %s block", walkthroughMarker)
	}
	defaults := map[string]bool{}
	for i, block := range blocks {
		for line := range strings.SplitSeq(block, "\n") {
			code, _, _ := strings.Cut(line, " #")
			if strings.HasPrefix(code, "#") || !hardPort.MatchString(code) {
				continue
			}
			switch {
			case strings.HasPrefix(code, "API=${API:-"):
				defaults["API"] = true
			case strings.HasPrefix(code, "RECV_PORT=${RECV_PORT:-"):
				defaults["RECV_PORT"] = true
			default:
				t.Errorf("walkthrough block %d names an address or port instead of $API or $RECV_PORT: %s", i+1, line)
			}
		}
	}
	for _, v := range []string{"API", "RECV_PORT"} {
		if !defaults[v] {
			t.Errorf("the walkthrough does not give %s a default (%s=${%s:-…})", v, v, v)
		}
	}
}
