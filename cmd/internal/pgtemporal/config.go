package pgtemporal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// ports are the loopback ports of one server; they stay the same across
// Restart so that clients and the cluster metadata in the database still
// point at the server.
type ports struct {
	FrontendGRPC, FrontendHTTP, FrontendMembership int
	HistoryGRPC, HistoryMembership                 int
	MatchingGRPC, MatchingMembership               int
	WorkerGRPC, WorkerMembership                   int
}

// The server's ports are drawn from [minPort, maxPort]: Temporal's
// PostgreSQL schema keeps membership ports in a SMALLINT (at most 32767), and
// below Linux's ephemeral range (from 32768) no outgoing connection can take
// a port while a killed server is down before Restart.
const (
	minPort = 10000
	maxPort = 32767
)

// freePorts picks distinct loopback ports that nothing listens on, and holds
// them until release is called (just before the server starts), so that a
// concurrent Start elsewhere cannot pick them too.
func freePorts() (p ports, release func(), err error) {
	var ls []net.Listener
	release = func() {
		for _, l := range ls {
			l.Close()
		}
	}
	for _, dst := range []*int{
		&p.FrontendGRPC, &p.FrontendHTTP, &p.FrontendMembership,
		&p.HistoryGRPC, &p.HistoryMembership,
		&p.MatchingGRPC, &p.MatchingMembership,
		&p.WorkerGRPC, &p.WorkerMembership,
	} {
		for try := 0; *dst == 0; try++ {
			if try == 100 {
				release()
				return ports{}, nil, fmt.Errorf("pgtemporal: no free port in [%d, %d] after %d tries", minPort, maxPort, try)
			}
			port := minPort + rand.IntN(maxPort-minPort+1)
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				continue
			}
			ls = append(ls, l)
			*dst = port
		}
	}
	return p, release, nil
}

// NumHistoryShards is the server's number of history shards: a workflow
// can be started once the shard its id hashes to is loaded.
const NumHistoryShards = 4

// serverConfig is what the config template needs.
type serverConfig struct {
	Ports             ports
	LogLevel          string
	PostgresAddr      string // host:port
	User, Password    string
	DB, VisibilityDB  string
	DynamicConfigFile string
	// MaxConns and VisibilityMaxConns size each service's pools.
	MaxConns, VisibilityMaxConns int
	Shards                       int
	PprofPort                    int // 0: no profiler
}

// configTemplate has the shape of the server module's
// config/development-postgres12.yaml, minus what a test server must not
// have: fixed ports, pprof, a metrics listener and archival. Strings go
// through q (JSON quoting, which YAML reads as a double-quoted scalar).
var configTemplate = template.Must(template.New("config").Funcs(template.FuncMap{"q": quote}).Parse(`log:
  stdout: true
  level: {{q .LogLevel}}
  format: console

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: {{.Shards}}
  datastores:
    postgres-default:
      sql:
        pluginName: postgres12
        databaseName: {{q .DB}}
        connectAddr: {{q .PostgresAddr}}
        connectProtocol: tcp
        user: {{q .User}}
        password: {{q .Password}}
        maxConns: {{.MaxConns}}
        maxIdleConns: {{.MaxConns}}
        maxConnLifetime: 1h
    postgres-visibility:
      sql:
        pluginName: postgres12
        databaseName: {{q .VisibilityDB}}
        connectAddr: {{q .PostgresAddr}}
        connectProtocol: tcp
        user: {{q .User}}
        password: {{q .Password}}
        maxConns: {{.VisibilityMaxConns}}
        maxIdleConns: {{.VisibilityMaxConns}}
        maxConnLifetime: 1h

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
{{- if .PprofPort}}
  pprof:
    port: {{.PprofPort}}
    host: 127.0.0.1
{{- end}}

services:
  frontend:
    rpc:
      grpcPort: {{.Ports.FrontendGRPC}}
      membershipPort: {{.Ports.FrontendMembership}}
      httpPort: {{.Ports.FrontendHTTP}}
      bindOnLocalHost: true
  history:
    rpc:
      grpcPort: {{.Ports.HistoryGRPC}}
      membershipPort: {{.Ports.HistoryMembership}}
      bindOnLocalHost: true
  matching:
    rpc:
      grpcPort: {{.Ports.MatchingGRPC}}
      membershipPort: {{.Ports.MatchingMembership}}
      bindOnLocalHost: true
  worker:
    rpc:
      grpcPort: {{.Ports.WorkerGRPC}}
      membershipPort: {{.Ports.WorkerMembership}}
      bindOnLocalHost: true

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{.Ports.FrontendGRPC}}"

dcRedirectionPolicy:
  policy: noop

archival:
  history:
    state: disabled
  visibility:
    state: disabled

dynamicConfigClient:
  filepath: {{q .DynamicConfigFile}}
  pollInterval: 10s
`))

func writeConfig(path string, c serverConfig) error {
	var b bytes.Buffer
	if err := configTemplate.Execute(&b, c); err != nil {
		return fmt.Errorf("pgtemporal: config: %w", err)
	}
	// 0600: it holds the database password.
	return os.WriteFile(path, b.Bytes(), 0o600)
}

// writeDynamicConfig writes Temporal's dynamic config file: fairness on, then
// the caller's keys (which may turn it off again), each as one
// constraint-free value.
func writeDynamicConfig(path string, extra map[string]any) error {
	values := map[string]any{"matching.enableFairness": true}
	maps.Copy(values, extra)
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(values)) {
		// JSON is YAML's flow style, so any value JSON can hold is written
		// as the server will read it.
		v, err := json.Marshal(values[k])
		if err != nil {
			return fmt.Errorf("pgtemporal: dynamic config %s: %w", k, err)
		}
		fmt.Fprintf(&b, "%s:\n  - value: %s\n", quote(k), v)
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}

// checkDynamicConfig has the server check the file, so that a misspelt key
// or a value of the wrong type fails Start; the server itself only logs them
// and runs on defaults.
func checkDynamicConfig(ctx context.Context, serverBin, path string) error {
	out, err := exec.CommandContext(ctx, serverBin, "validate-dynamic-config", path).CombinedOutput()
	var problems []string
	for l := range strings.Lines(string(out)) {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "warning:") {
			problems = append(problems, l)
		}
	}
	if err != nil && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("%v: %s", err, bytes.TrimSpace(out)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("pgtemporal: dynamic config: %s", strings.Join(problems, "; "))
	}
	return nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
