//go:build !noembedtemporal

package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recordhub/recordhub/cmd/recordhub/devtemporal"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestReadmeWalkthrough runs the README's walkthrough blocks, the text a
// newcomer pastes, with bash -euo pipefail against a real service started
// as the README starts it (loopback receivers allowed, a fresh ./data),
// with the admin key it printed, and with `recordhub` on PATH as the
// README puts it there. The walkthrough ends with a record change arriving
// at `recordhub webhooks listen`; the test asserts that it arrives at the
// first attempt with both signatures verified.
func TestReadmeWalkthrough(t *testing.T) {
	skipShort(t)
	blocks := walkthroughBlocks(t, readReadme(t))
	if len(blocks) == 0 {
		t.Fatalf("README.md has no %s block", walkthroughMarker)
	}
	// Like PostgreSQL and Redis, the walkthrough's tools are not Go: a
	// machine without them skips it, CI (RECORDHUB_TEST_REQUIRE_SERVICES=1)
	// fails.
	for _, tool := range []string{"bash", "curl", "jq", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			if storetest.Required() {
				t.Fatalf("the README's walkthrough needs %s on PATH: %v", tool, err)
			}
			t.Skipf("the README's walkthrough needs %s on PATH (RECORDHUB_TEST_REQUIRE_SERVICES=1 makes this a failure): %v", tool, err)
		}
	}
	bin := buildRecordhub(t)

	// The reader's terminal: the repository's directory, where make run
	// keeps ./data; the service below runs on that data directory.
	work := t.TempDir()
	env := map[string]string{
		"RECORDHUB_HTTP_ADDR":           "127.0.0.1:0",
		"RECORDHUB_DATA_DIR":            filepath.Join(work, "data"),
		"RECORDHUB_TEMPORAL_PORT":       fmt.Sprint(receiverPort(t)),
		"RECORDHUB_TEMPORAL_UI_ADDR":    "",
		"RECORDHUB_WEBHOOK_ALLOW_CIDRS": "127.0.0.1/32", // as the README starts make run
	}
	cfg, err := configFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if want := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}; fmt.Sprint(cfg.WebhookAllowCIDRs) != fmt.Sprint(want) {
		t.Fatalf("allowed CIDRs %v, want %v", cfg.WebhookAllowCIDRs, want)
	}
	// A missed first attempt is then retried at once, and fails the
	// "attempt: 1" check below with the delivery shown, instead of after a
	// minute.
	cfg.WebhookRetryInitial = 200 * time.Millisecond
	cfg.WebhookRetryMaxInterval = time.Second
	var serviceOut syncBuffer
	base, stop := startService(t, cfg, &serviceOut)
	printed := regexp.MustCompile(`Its admin key, shown once:\n\n    (rh_\S+)\n`).FindStringSubmatch(serviceOut.String())
	if printed == nil {
		t.Fatalf("the service printed no admin key as the README shows; its stdout:\n%s", serviceOut.String())
	}

	script := filepath.Join(work, "walkthrough.sh")
	if err := os.WriteFile(script, []byte(strings.Join(blocks, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	outPath := filepath.Join(work, "terminal.out")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command("bash", "-euo", "pipefail", script)
	cmd.Dir = work
	cmd.Env = append(readerEnv(),
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"API="+base,
		"RECV_PORT="+fmt.Sprint(receiverPort(t)),
		"ADMIN="+printed[1],
	)
	// Both streams go to one file, as in a terminal; a file rather than a
	// pipe, since the background receiver keeps it open after bash exits.
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: the receiver started with & outlives the
	// script and is stopped with the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	terminal := func() string {
		b, err := os.ReadFile(outPath)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the walkthrough failed (%v); its terminal:\n%s", err, terminal())
	}

	// What the blocks' comments promise along the way.
	for _, want := range []string{
		`"error":"forbidden"`,
		` 429 `,
		`"error":"rate_limited"`,
	} {
		if !strings.Contains(terminal(), want) {
			t.Errorf("the walkthrough's terminal does not show %s:\n%s", want, terminal())
		}
	}

	// The last step: the change to "shipped" arrives at the receiver as a
	// record_updated and a status_change, each verified.
	deliveries := map[string]string{}
	storetest.Eventually(t, 30*time.Second, "the record_updated and status_change deliveries in the receiver's output", func() bool {
		for block := range strings.SplitSeq(terminal(), "\n--- ") {
			for _, event := range []string{"record_updated", "status_change"} {
				if strings.Contains(block, "event:               "+event+"\n") && strings.Contains(block, `"shipped"`) {
					deliveries[event] = block
				}
			}
		}
		return len(deliveries) == 2
	})
	for event, delivery := range deliveries {
		for _, want := range []string{
			"attempt:             1\n",
			"X-Webhook-Signature: ok\n",
			"webhook-signature:   ok\n",
			"answered 204\n",
		} {
			if !strings.Contains(delivery, want) {
				t.Errorf("the %s delivery does not show %q:\n%s", event, want, delivery)
			}
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// buildRecordhub builds the command line into a fresh directory and
// returns its path, named recordhub as make build names it. The tag leaves
// the embedded Temporal server out, which the walkthrough's commands
// (tenant, webhooks listen) never start: the link is quicker.
func buildRecordhub(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "recordhub")
	cmd := exec.Command("go", "build", "-tags", "noembedtemporal", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// readerEnv is this process's environment without recordhub's settings,
// which would point the walkthrough's commands at another service or
// database than the one the test started.
func readerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "RECORDHUB_"), strings.HasPrefix(name, "TEMPORAL_"),
			name == "DATABASE_URL", name == "REDIS_URL",
			name == "API", name == "RECV_PORT", name == "ADMIN", name == "PATH":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// receiverPort is a free port for the walkthrough's receiver, which the
// walkthrough binds only later, in `webhooks listen`: from below the
// ephemeral range (devtemporal.FreePort), so that another test's port-0
// listener cannot take it meanwhile, and its wait and its deliveries.
func receiverPort(t *testing.T) int {
	t.Helper()
	port, err := devtemporal.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
