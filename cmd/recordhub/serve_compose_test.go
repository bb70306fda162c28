package main

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// composeService is the part of a docker-compose.yml service that
// TestComposeFile checks. Ports, environment and build each come in a short
// and a long syntax, hence any.
type composeService struct {
	Build       any    `yaml:"build"`
	Ports       []any  `yaml:"ports"`
	Environment any    `yaml:"environment"`
	NetworkMode string `yaml:"network_mode"`
}

var (
	// secretName matches the environment variables that hold a secret.
	secretName = regexp.MustCompile(`(?i)KEY|SECRET|PASSWORD|PWD|TOKEN`)
	// requiredVar is a whole value that compose takes from the environment
	// and refuses to start without: ${NAME:?message}.
	requiredVar = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*:\?[^}]+\}$`)
	// defaultedVar is a reference with a fallback: ${NAME:-x} or ${NAME-x}.
	defaultedVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*):?-`)
	// urlPassword is the password of a URL's user info.
	urlPassword = regexp.MustCompile(`://[^/@:]*:([^@]*)@`)
	// innermostDefault is a reference with a fallback that holds no other.
	innermostDefault = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^${}]*)\}`)
)

// portSettings are the variables that move the published ports, each
// service's, and their defaults: a port taken on the machine must not
// mean editing the file.
var portSettings = map[string]string{
	"api":         "${RECORDHUB_PORT:-8080}",
	"temporal-ui": "${RECORDHUB_TEMPORAL_UI_PORT:-8233}",
}

// withDefaults is s as compose reads it when no variable with a fallback
// is set: each ${NAME:-x} replaced by x, innermost first.
func withDefaults(s string) string {
	for {
		next := innermostDefault.ReplaceAllString(s, "$1")
		if next == s {
			return s
		}
		s = next
	}
}

// TestComposeFile checks docker-compose.yml: every published port
// binds 127.0.0.1 only and is a variable with a default (portSettings),
// no environment value holds a literal secret or a default for one, and
// each build points at a Dockerfile that exists.
func TestComposeFile(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if len(file.Services) == 0 {
		t.Fatal("docker-compose.yml has no services")
	}

	var published []string
	for _, name := range slices.Sorted(maps.Keys(file.Services)) {
		svc := file.Services[name]
		if svc.NetworkMode == "host" {
			t.Errorf("service %s: network_mode host publishes every port it listens on", name)
		}
		for _, p := range svc.Ports {
			if raw, ok := p.(string); ok {
				if setting := portSettings[name]; setting == "" || !strings.Contains(raw, ":"+setting+":") {
					t.Errorf("service %s publishes %q, want its host port as %s", name, raw, cmp.Or(setting, "a variable listed in portSettings"))
				}
				p = withDefaults(raw)
			}
			hostIP, port, err := publishedPort(p)
			if err != nil {
				t.Errorf("service %s: %v", name, err)
				continue
			}
			if hostIP != "127.0.0.1" {
				t.Errorf("service %s publishes %v on %q, want 127.0.0.1 only", name, p, hostIP)
			}
			published = append(published, name+":"+port)
		}

		env, err := environment(svc.Environment)
		if err != nil {
			t.Errorf("service %s: %v", name, err)
		}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			v := env[k]
			if strings.Count(v, "${") != strings.Count(v, "}") {
				t.Errorf("service %s: %s = %q has unbalanced ${…}", name, k, v)
			}
			if secretName.MatchString(k) && !requiredVar.MatchString(v) {
				t.Errorf("service %s: %s = %q, want a ${VAR:?message} reference, not a literal or default", name, k, v)
				continue
			}
			if m := urlPassword.FindStringSubmatch(v); m != nil && !requiredVar.MatchString(m[1]) {
				t.Errorf("service %s: %s holds the password %q, want a ${VAR:?message} reference", name, k, m[1])
			}
			for _, m := range defaultedVar.FindAllStringSubmatch(v, -1) {
				if secretName.MatchString(m[1]) {
					t.Errorf("service %s: %s gives the secret %s a default: %q", name, k, m[1], v)
				}
			}
		}

		if svc.Build != nil {
			dockerfile, err := dockerfilePath(svc.Build)
			if err != nil {
				t.Errorf("service %s: %v", name, err)
			} else if _, err := os.Stat(filepath.Join(root, dockerfile)); err != nil {
				t.Errorf("service %s builds with %s: %v", name, dockerfile, err)
			}
		}
	}
	for _, want := range []string{"api:8080", "temporal-ui:8233"} {
		if !slices.Contains(published, want) {
			t.Errorf("published ports %v, want %s among them", published, want)
		}
	}
	// What follows the ports: the Web UI's allowed origins and the
	// default public URL name the same variables.
	uiEnv, _ := environment(file.Services["temporal-ui"].Environment)
	if got := uiEnv["TEMPORAL_CORS_ORIGINS"]; strings.Count(got, portSettings["temporal-ui"]) != 2 {
		t.Errorf("temporal-ui TEMPORAL_CORS_ORIGINS = %q, want both origins on %s", got, portSettings["temporal-ui"])
	}
	apiEnv, _ := environment(file.Services["api"].Environment)
	if got, want := apiEnv["RECORDHUB_PUBLIC_URL"], "${RECORDHUB_PUBLIC_URL:-http://localhost:"+portSettings["api"]+"}"; got != want {
		t.Errorf("api RECORDHUB_PUBLIC_URL = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(root, "Dockerfile")); err == nil {
		t.Error("a Dockerfile at the repository's top level, which holds only the fixed set of top-level names; it lives in cmd/recordhub")
	}
}

// publishedPort returns the host address and host port of a ports entry:
// "[HOST_IP:]PUBLISHED:TARGET[/PROTO]", a bare "TARGET" (a random host port
// on every address), or the long syntax's host_ip and published.
func publishedPort(p any) (hostIP, port string, err error) {
	switch p := p.(type) {
	case string:
		spec, _, _ := strings.Cut(p, "/")
		i := strings.LastIndex(spec, ":")
		if i < 0 {
			return "", "", nil // a random port on every address
		}
		rest := spec[:i] // [HOST_IP:]PUBLISHED
		j := strings.LastIndex(rest, ":")
		if j < 0 {
			return "", rest, nil
		}
		return strings.Trim(rest[:j], "[]"), rest[j+1:], nil
	case int:
		return "", "", nil
	case map[string]any:
		hostIP, _ := p["host_ip"].(string)
		return hostIP, fmt.Sprint(p["published"]), nil
	}
	return "", "", fmt.Errorf("ports entry %v (%T) of an unknown form", p, p)
}

// environment returns a service's environment, a map or a list of
// "NAME=value".
func environment(env any) (map[string]string, error) {
	out := map[string]string{}
	switch env := env.(type) {
	case nil:
	case map[string]any:
		for k, v := range env {
			if v != nil {
				out[k] = fmt.Sprint(v)
			}
		}
	case []any:
		for _, e := range env {
			k, v, _ := strings.Cut(fmt.Sprint(e), "=")
			out[k] = v
		}
	default:
		return nil, fmt.Errorf("environment of an unknown form %T", env)
	}
	return out, nil
}

// dockerfilePath returns the Dockerfile a build entry uses, relative to the
// compose file.
func dockerfilePath(build any) (string, error) {
	switch b := build.(type) {
	case string:
		return filepath.Join(b, "Dockerfile"), nil
	case map[string]any:
		dir, _ := b["context"].(string)
		dockerfile, _ := b["dockerfile"].(string)
		if dockerfile == "" {
			dockerfile = "Dockerfile"
		}
		return filepath.Join(dir, dockerfile), nil // dockerfile is relative to the context
	}
	return "", fmt.Errorf("build entry of an unknown form %T", build)
}
