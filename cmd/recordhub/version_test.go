package main

import (
	"os"
	"runtime/debug"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestBuildVersion: what each kind of build says of itself, from the build
// information go build, go run and a Docker build stamp (seen with Go
// 1.26: go build in a git checkout stamps vcs.* and a tag or a
// pseudo-version; go run, -buildvcs=false and a tree without .git stamp
// "(devel)" and no vcs.*).
func TestBuildVersion(t *testing.T) {
	const rev = "e231509c0564b4acda81616a1e866e06c8507453"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-24T02:49:55Z"}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build information", nil, release},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, release},
		{"empty version", &debug.BuildInfo{}, release},
		{"tagged commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}, Settings: vcs("false")}, "0.3.1"},
		{"tagged commit, changed tree", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1+dirty"}, Settings: vcs("true")}, "0.3.1+dirty"},
		{"untagged commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124024955-e231509c0564"}, Settings: vcs("false")}, release + "+e231509c0564"},
		{"untagged commit, changed tree", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124024955-e231509c0564+dirty"}, Settings: vcs("true")}, release + "+e231509c0564.dirty"},
		{"commit after a tag", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.2-0.20261124024955-e231509c0564"}, Settings: vcs("false")}, release + "+e231509c0564"},
		{"commit after a pre-release tag", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0-rc.1.0.20261124024955-e231509c0564"}, Settings: vcs("false")}, release + "+e231509c0564"},
		{"revision without a module version", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")}, release + "+e231509c0564"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildVersion(tc.info); got != tc.want {
				t.Errorf("buildVersion = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAppVersion: a version given at link time wins; without one, this
// test binary says what its build information says, never "dev".
func TestAppVersion(t *testing.T) {
	info, _ := debug.ReadBuildInfo()
	got := appVersion()
	if want := buildVersion(info); got != want {
		t.Errorf("appVersion = %q, want %q", got, want)
	}
	if got == "" || got == "dev" {
		t.Errorf("appVersion = %q, want a release", got)
	}
	old := version
	t.Cleanup(func() { version = old })
	version = "9.9.9"
	if got := appVersion(); got != "9.9.9" {
		t.Errorf("appVersion with -X main.version=9.9.9 = %q", got)
	}
}

// TestOpenAPIVersionIsRelease: the API document describes this release, so
// its info.version is the binary's release. Bump both together.
func TestOpenAPIVersionIsRelease(t *testing.T) {
	b, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info struct {
			Version string `yaml:"version"`
		} `yaml:"info"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse api/openapi.yaml: %v", err)
	}
	if doc.Info.Version != release {
		t.Errorf("api/openapi.yaml info.version = %q, want the release %q (cmd/recordhub/version.go)", doc.Info.Version, release)
	}
}
