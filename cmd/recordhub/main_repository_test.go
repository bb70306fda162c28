package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideRefs match a citation of a document the repository does not hold:
// design notes and a product specification that lived beside the code while
// it was written. A newcomer cannot follow them, so a comment or the README
// states the rule itself where it is used. Each pattern is written so that
// this file's own text does not match it (escaped dots, a bracketed letter).
var outsideRefs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bspec[\s\x{a0}]*§`),         // a section citation
	regexp.MustCompile(`(?i)\b(spec|notes|style)\.md\b`), // the documents by name
	regexp.MustCompile(`\.\./shared\b`),                  // the folder beside the repository
	regexp.MustCompile(`(?i)\bthe\s+seed\b`),             // the product's first description
	regexp.MustCompile(`\bS[P]EC\b`),                     // the specification, in capitals
}

// mayCite is a cheap filter before the patterns: every one of them needs
// one of these words, and few lines hold any.
func mayCite(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "spec") || strings.Contains(l, "seed") ||
		strings.Contains(l, ".md") || strings.Contains(l, "shared")
}

// TestSelfContained fails, naming file:line, where a text file of the
// repository (tracked, or new and not ignored) cites a document that is
// not in it.
func TestSelfContained(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	files := repoFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found %d files under %s, want the repository's", len(files), root)
	}
	for _, name := range files {
		if name == "go.sum" { // hashes, where any letters may meet
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) { // deleted, not yet committed
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 { // binary
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !mayCite(line) {
				continue
			}
			for _, re := range outsideRefs {
				if m := re.FindString(line); m != "" {
					t.Errorf("%s:%d: %q cites a document outside the repository; state the rule itself: %s",
						name, i+1, m, strings.TrimSpace(line))
					break // one report a line
				}
			}
		}
	}
}

// repoFiles lists the repository's files relative to root: what git tracks
// or would track (ignored files left out) when root is a git work tree,
// else every file below root except .git, node_modules and the local state
// directories that .gitignore names.
func repoFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var names []string
		for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			names = append(names, filepath.FromSlash(name))
		}
		return names
	}
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case d.Name() == ".git", d.Name() == "node_modules", rel == "data", rel == "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// sharedTestFiles are the test files a package may have that test no one
// source file: its test helpers (one file a package), export_test.go,
// which opens unexported names to the package's external tests, and
// example_test.go, the package's examples as go doc shows them.
var sharedTestFiles = map[string]bool{"helpers_test.go": true, "export_test.go": true, "example_test.go": true}

// TestTestFilesNamedAfterSources fails, naming the file, where a test file
// is not named after the source file it tests: foo_test.go, or
// foo_topic_test.go for one part of foo.go, beside a foo.go. A reader
// looking for the tests of foo.go then finds them by name.
func TestTestFilesNamedAfterSources(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	sources := map[string][]string{} // directory → base names of its non-test Go files
	var tests []string
	for _, name := range repoFiles(t, root) {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil || !strings.HasSuffix(name, ".go") {
			continue
		}
		dir, base := filepath.Split(name)
		if strings.Contains(dir, "node_modules") {
			continue
		}
		if strings.HasSuffix(base, "_test.go") {
			tests = append(tests, name)
			continue
		}
		sources[dir] = append(sources[dir], strings.TrimSuffix(base, ".go"))
	}
	if len(tests) < 10 {
		t.Fatalf("found %d test files under %s, want the repository's", len(tests), root)
	}
	for _, name := range tests {
		dir, base := filepath.Split(name)
		if sharedTestFiles[base] {
			continue
		}
		stem := strings.TrimSuffix(base, "_test.go")
		found := false
		for _, src := range sources[dir] {
			if stem == src || strings.HasPrefix(stem, src+"_") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s is named after no source file of its package: name it foo_test.go or foo_topic_test.go after the foo.go it tests, or put helpers in helpers_test.go", name)
		}
	}
}

// mdLink is a Markdown link's target; fence a fenced code block.
var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fence   = regexp.MustCompile("(?s)```.*?```")
	heading = regexp.MustCompile(`(?m)^#+[ \t]+(.+)$`)
	notSlug = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// TestDocLinks fails, naming the document and the link, where a relative
// link of the repository's Markdown documents names a file that is not
// there, or a heading (#anchor, as GitHub makes them) that the document it
// names does not have: the documents link each other instead of repeating
// a rule, so a moved file or a renamed section must not leave a reader at
// a dead end.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	anchors := func(name string) map[string]bool {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(data), ""), -1) {
			slug := notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
			out[strings.ReplaceAll(slug, " ", "-")] = true
		}
		return out
	}
	docs := 0
	for _, name := range repoFiles(t, root) {
		if !strings.HasSuffix(name, ".md") || strings.Contains(name, "node_modules") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		docs++
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(string(data), ""), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := name
			if path != "" {
				target = filepath.Join(filepath.Dir(name), filepath.FromSlash(path))
			}
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				t.Errorf("%s: link %q: %s is not in the repository", name, link, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !anchors(target)[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", name, link, target, anchor)
			}
		}
	}
	if docs < 5 {
		t.Fatalf("found %d Markdown documents under %s, want the repository's", docs, root)
	}
}
