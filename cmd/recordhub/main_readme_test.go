package main

import (
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
