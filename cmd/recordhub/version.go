package main

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// release is the version of this source tree, what a build says when it
// knows nothing better: `go run`, a build outside a git checkout (a Docker
// build, whose context leaves .git out) or with -buildvcs=false.
const release = "0.4.0"

// version overrides what the build says of itself, at link time:
//
//	go build -ldflags "-X main.version=1.2.3" ./cmd/recordhub
//
// Empty: see buildVersion.
var version string

// appVersion is the version of this binary, as User-Agent sends it
// (recordhub-webhooks/<version>).
func appVersion() string {
	if version != "" {
		return version
	}
	info, _ := debug.ReadBuildInfo()
	return buildVersion(info)
}

// buildVersion says which source a binary was built from, from what `go
// build` stamped into it: the module's tag when the commit has one
// (v0.3.1 → "0.3.1", "+dirty" kept); otherwise the release and the commit,
// "0.4.0+e231509c0564", with ".dirty" when the tree had uncommitted
// changes (semver build metadata); otherwise the release alone. go build
// stamps the commit only in a git checkout whose .git is a directory (not
// in a git worktree) and unless -buildvcs=false; go run stamps nothing.
func buildVersion(info *debug.BuildInfo) string {
	if info == nil {
		return release
	}
	// Go's pseudo-versions (v0.0.0-20261124024955-e231509c0564,
	// v1.2.4-0.20261124024955-e231509c0564), which go build stamps at an
	// untagged commit, name a commit, not a release.
	pseudo := regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(.+\.)?[0-9]{14}-[0-9a-f]{12}(\+dirty)?$`)
	if v := info.Main.Version; strings.HasPrefix(v, "v") && !pseudo.MatchString(v) {
		return strings.TrimPrefix(v, "v")
	}
	var revision string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision == "" {
		return release
	}
	v := release + "+" + revision[:min(12, len(revision))]
	if modified {
		v += ".dirty"
	}
	return v
}
