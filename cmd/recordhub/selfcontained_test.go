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

// moduleRoot is the directory holding go.mod, found from the test's
// working directory upwards.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
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
