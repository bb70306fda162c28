package activities_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/accesslog"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// These tests deliver through the real attempt code to a real receiver and
// hand what arrived to the receivers' own libraries, with each secret
// exactly as the admin API answered it: the Go module of Standard Webhooks,
// the npm packages standardwebhooks and svix (driven by node, see
// testdata/receivers), a plain hex HMAC and the openssl binary.

// receiversDir is the npm project of the receivers' libraries.
const receiversDir = "testdata/receivers"

var loopbackOnly = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// generatedSecret is the form of a secret recordhub generates: "whsec_" and
// the padded standard base64 of 32 bytes.
var generatedSecret = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`)

// stack is a tenant's admin API over a store, a receiver, and a Deliverer
// whose attempts reach the receiver.
type stack struct {
	t        *testing.T
	db       *storetest.DB
	store    *models.Store
	clock    *storetest.Clock
	base     string
	admin    string
	tenantID string
	deliver  *activities.Deliverer
	recv     *httptest.Server

	mu  sync.Mutex
	got []delivery
}

// delivery is one request as the receiver got it.
type delivery struct {
	header http.Header
	body   []byte
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := t.Context()
	s := &stack{t: t, db: storetest.NewDB(t, models.SQLite), clock: storetest.NewClock()}
	// The store's clock crosses a rotation's grace; the Deliverer keeps the
	// real time, which the libraries check webhook-timestamp against.
	s.store = s.db.Open(t, models.Options{Now: s.clock.Now})
	tenant, _, admin, err := s.store.CreateTenant(ctx, "acme", 600)
	if err != nil {
		t.Fatalf("create tenant: %v", err)
	}
	s.tenantID, s.admin = tenant.ID, admin
	logs := accesslog.New(s.store, accesslog.Options{Interval: 20 * time.Millisecond})
	logCtx, stopLogs := context.WithCancel(context.Background())
	go logs.Run(logCtx)
	srv := api.New(api.Deps{
		Store: s.store, Limiter: ratelimit.NewMemory(nil), Logs: logs, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), DefaultRateLimit: 600,
		CheckURL: func(ctx context.Context, rawURL string) error { return activities.CheckURL(ctx, rawURL, loopbackOnly) },
	})
	hs := httptest.NewServer(srv.Handler())
	s.base = hs.URL
	s.recv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, delivery{header: r.Header.Clone(), body: body})
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		s.recv.Close()
		hs.Close()
		logs.Close(context.Background())
		stopLogs()
	})
	if s.deliver, err = activities.NewDeliverer(s.store, activities.Config{AllowCIDRs: loopbackOnly, Version: "1.2.3"}); err != nil {
		t.Fatalf("NewDeliverer: %v", err)
	}
	return s
}

// call sends an admin API request and decodes its JSON answer, which must
// have status want.
func (s *stack) call(method, path string, body any, want int) map[string]any {
	s.t.Helper()
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.base+path, in)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		s.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
	return out
}

// endpointWithEvent creates an endpoint for the receiver through the admin
// API, and a record whose record_created event it is to get. It returns
// the endpoint's id, its secret as answered, and the attempt's input.
func (s *stack) endpointWithEvent() (string, string, activities.AttemptInput) {
	s.t.Helper()
	mod := s.call("POST", "/api/admin/modules", map[string]any{"slug": "orders", "name": "Orders",
		"fields": []any{map[string]any{"name": "title", "type": "string"}}}, http.StatusCreated)
	ep := s.call("POST", "/api/admin/webhook-endpoints", map[string]any{"url": s.recv.URL + "/hooks", "events": []string{"record_created"}}, http.StatusCreated)
	// Non-ASCII text: the body must be signed and arrive byte for byte.
	s.call("POST", "/api/modules/"+mod["id"].(string)+"/records", map[string]any{"fields": map[string]any{"title": "Ada — «engine» <&> ü"}}, http.StatusCreated)
	events, err := s.store.PendingEvents(s.t.Context(), 10)
	if err != nil || len(events) != 1 {
		s.t.Fatalf("pending events: %d, %v; want 1", len(events), err)
	}
	id := ep["id"].(string)
	return id, ep["secret"].(string), activities.AttemptInput{TenantID: s.tenantID, EventID: events[0].ID, EndpointID: id}
}

// rotate rotates the endpoint's secret through the admin API with an hour
// of grace and returns the new secret as answered.
func (s *stack) rotate(id string) string {
	s.t.Helper()
	return s.call("POST", "/api/admin/webhook-endpoints/"+id+"/rotate-secret", map[string]any{"grace_seconds": 3600}, http.StatusOK)["secret"].(string)
}

// attempt makes one delivery attempt and returns what the receiver got.
func (s *stack) attempt(in activities.AttemptInput) delivery {
	s.t.Helper()
	s.mu.Lock()
	before := len(s.got)
	s.mu.Unlock()
	out, err := s.deliver.Attempt(s.t.Context(), in)
	if err != nil || out.StatusCode != http.StatusNoContent {
		s.t.Fatalf("Attempt = %+v, %v; want a 204", out, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) != before+1 {
		s.t.Fatalf("receiver got %d requests, want %d", len(s.got), before+1)
	}
	return s.got[before]
}

// holder is a receiver holding one secret, checking one delivery.
type holder struct {
	name   string
	got    delivery
	secret string
	// raw: the receiver hands its library the secret's UTF-8 bytes, as
	// receivers of endpoints made before the whsec_<base64> form do.
	raw bool
	// verifies: the libraries accept the delivery.
	verifies bool
	// hexHeader is the header whose sha256=<hex> equals the HMAC of the
	// body keyed with the secret string; "" for none.
	hexHeader string
}

// checkHolders verifies every holder's delivery with each verifier and
// compares the verdicts with what they want.
func checkHolders(t *testing.T, holders []holder) {
	t.Helper()
	wantVerifies, wantHex := map[string]bool{}, map[string]string{}
	for _, h := range holders {
		wantVerifies[h.name], wantHex[h.name] = h.verifies, h.hexHeader
	}

	t.Run("Go standard-webhooks library", func(t *testing.T) {
		got := map[string]bool{}
		for _, h := range holders {
			wh, err := standardwebhooks.NewWebhook(h.secret)
			if h.raw {
				wh, err = standardwebhooks.NewWebhookRaw([]byte(h.secret))
			}
			if err == nil {
				err = wh.Verify(h.got.body, h.got.header)
			}
			got[h.name] = err == nil
			if got[h.name] != h.verifies {
				t.Logf("%s: %v", h.name, err)
			}
		}
		if diff := cmp.Diff(got, wantVerifies); diff != "" {
			t.Errorf("verified (-got +want):\n%s", diff)
		}
	})

	t.Run("hex HMAC", func(t *testing.T) {
		got := map[string]string{}
		for _, h := range holders {
			mac := hmac.New(sha256.New, []byte(h.secret))
			mac.Write(h.got.body)
			got[h.name] = matchingHeader(h.got.header, hex.EncodeToString(mac.Sum(nil)))
		}
		if diff := cmp.Diff(got, wantHex); diff != "" {
			t.Errorf("header matching the digest (-got +want):\n%s", diff)
		}
	})

	t.Run("openssl dgst", func(t *testing.T) {
		openssl, err := exec.LookPath("openssl")
		if err != nil {
			t.Skip("skipping the openssl recipe: no openssl binary")
		}
		got := map[string]string{}
		for _, h := range holders {
			// The README's recipe: printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET"
			cmd := exec.CommandContext(t.Context(), openssl, "dgst", "-sha256", "-hmac", h.secret)
			cmd.Stdin = bytes.NewReader(h.got.body)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("openssl: %v", err)
			}
			fields := strings.Fields(string(out)) // "SHA2-256(stdin)= <hex>"
			got[h.name] = matchingHeader(h.got.header, fields[len(fields)-1])
		}
		if diff := cmp.Diff(got, wantHex); diff != "" {
			t.Errorf("header matching openssl's digest (-got +want):\n%s", diff)
		}
	})

	t.Run("npm standardwebhooks and svix", func(t *testing.T) {
		cases := make([]npmCase, len(holders))
		for i, h := range holders {
			headers := map[string]string{}
			for name := range h.got.header {
				headers[name] = h.got.header.Get(name)
			}
			cases[i] = npmCase{Secret: h.secret, Raw: h.raw, Headers: headers, BodyBase64: base64.StdEncoding.EncodeToString(h.got.body)}
		}
		verdicts := npmVerify(t, cases)
		for _, lib := range []string{"standardwebhooks", "svix"} {
			got := map[string]bool{}
			for i, h := range holders {
				v := verdicts[i][lib]
				got[h.name] = v == "ok"
				if got[h.name] != h.verifies {
					t.Logf("%s %s: %s", lib, h.name, v)
				}
			}
			if diff := cmp.Diff(got, wantVerifies); diff != "" {
				t.Errorf("%s verified (-got +want):\n%s", lib, diff)
			}
		}
	})
}

// matchingHeader names the signature header whose value is sha256=<digest>,
// compared in constant time; "" when neither is.
func matchingHeader(h http.Header, digest string) string {
	for _, name := range []string{activities.HeaderSignature, activities.HeaderSignaturePrevious} {
		if v := h.Get(name); v != "" && hmac.Equal([]byte(v), []byte("sha256="+digest)) {
			return name
		}
	}
	return ""
}

// npmCase is one delivery for testdata/receivers/verify.mjs.
type npmCase struct {
	Secret     string            `json:"secret"`
	Raw        bool              `json:"raw"`
	Headers    map[string]string `json:"headers"`
	BodyBase64 string            `json:"body_base64"`
}

// npmVerify runs the npm libraries on cases and returns each case's
// verdicts by library: "ok" or the library's error. It skips the test when
// node or the packages are missing, unless RECORDHUB_TEST_REQUIRE_NODE=1,
// and under -short.
func npmVerify(t *testing.T, cases []npmCase) []map[string]string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Node and the npm receivers' libraries; skipped by -short")
	}
	node, err := exec.LookPath("node")
	if err == nil {
		for _, pkg := range []string{"standardwebhooks", "svix"} {
			if _, statErr := os.Stat(filepath.Join(receiversDir, "node_modules", pkg, "package.json")); statErr != nil {
				err = fmt.Errorf("npm package %s is not installed (npm ci --prefix activities/%s): %w", pkg, receiversDir, statErr)
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("RECORDHUB_TEST_REQUIRE_NODE") == "1" {
			t.Fatalf("RECORDHUB_TEST_REQUIRE_NODE=1 but the npm receivers' libraries cannot run: %v", err)
		}
		t.Skipf("skipping the npm receivers' libraries: %v", err)
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, "verify.mjs")
	cmd.Dir = receiversDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.mjs: %v\n%s", err, stderr.Bytes())
	}
	var verdicts []map[string]string
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(cases) {
		t.Fatalf("node verify.mjs answered %d verdicts (%v) for %d cases: %s", len(verdicts), err, len(cases), out)
	}
	return verdicts
}

// TestReceiversVerifyDeliveries: with the secrets as the admin API answers
// them, a receiver holding the endpoint's secret verifies every delivery
// with the libraries and with the hex recipe; during a rotation's grace
// period receivers holding the old and the new secret both do; after it,
// only the new one.
func TestReceiversVerifyDeliveries(t *testing.T) {
	s := newStack(t)
	id, old, in := s.endpointWithEvent()
	before := s.attempt(in)
	current := s.rotate(id)
	grace := s.attempt(in)
	s.clock.Advance(time.Hour + time.Second)
	after := s.attempt(in)

	unrelated := models.NewWebhookSecret()
	for _, secret := range []string{old, current, unrelated} {
		if !generatedSecret.MatchString(secret) {
			t.Errorf("secret %q: want whsec_ and the padded standard base64 of 32 bytes", secret)
		}
	}
	type shape struct{ Previous, Signatures int }
	count := func(d delivery) shape {
		return shape{len(d.header.Values(activities.HeaderSignaturePrevious)), len(strings.Fields(d.header.Get(activities.HeaderStdSignature)))}
	}
	if diff := cmp.Diff([]shape{count(before), count(grace), count(after)}, []shape{{0, 1}, {1, 2}, {0, 1}}); diff != "" {
		t.Errorf("X-Webhook-Signature-Previous headers and webhook-signature entries before, during and after the grace (-got +want):\n%s", diff)
	}

	checkHolders(t, []holder{
		{name: "before rotation, old secret", got: before, secret: old, verifies: true, hexHeader: activities.HeaderSignature},
		{name: "before rotation, unrelated secret", got: before, secret: unrelated},
		{name: "in grace, old secret", got: grace, secret: old, verifies: true, hexHeader: activities.HeaderSignaturePrevious},
		{name: "in grace, new secret", got: grace, secret: current, verifies: true, hexHeader: activities.HeaderSignature},
		{name: "in grace, unrelated secret", got: grace, secret: unrelated},
		{name: "after grace, old secret", got: after, secret: old},
		{name: "after grace, new secret", got: after, secret: current, verifies: true, hexHeader: activities.HeaderSignature},
	})
}

// TestReceiversPreexistingEndpoint: an endpoint whose secret was generated
// before the whsec_<standard base64> form ("whsec_" and 43 characters of
// unpadded base64url) is signed exactly as before, so its receivers keep
// verifying; once rotated, the new secret is in the libraries' form while
// the old one still signs the old way through the grace period.
func TestReceiversPreexistingEndpoint(t *testing.T) {
	s := newStack(t)
	id, _, in := s.endpointWithEvent()
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(0xf0 + i%16) // 0xfb..0xff: '-' and '_' in base64url
	}
	legacy := "whsec_" + base64.RawURLEncoding.EncodeToString(key)
	if len(legacy) != 49 || !strings.ContainsAny(legacy, "-") || !strings.ContainsAny(legacy, "_") {
		t.Fatalf("legacy secret %q: want whsec_ and 43 base64url characters with - and _", legacy)
	}
	// Stored as recordhub stored it then: sealed under the endpoint's id.
	db := s.db.SQL(t)
	if _, err := db.ExecContext(t.Context(), s.db.Rebind("UPDATE webhook_endpoints SET secret = ? WHERE id = ?"),
		storetest.SecretBox(t).Seal(legacy, "webhook-secret:"+id), id); err != nil {
		t.Fatalf("store the legacy secret: %v", err)
	}
	if got := s.call("GET", "/api/admin/webhook-endpoints/"+id+"/secret", nil, http.StatusOK)["secret"]; got != legacy {
		t.Fatalf("the endpoint's secret reads %q, want the legacy %q", got, legacy)
	}

	sent := s.attempt(in)
	// Byte for byte what recordhub sent for this secret before: both
	// schemes keyed with the secret string's UTF-8 bytes.
	mac := hmac.New(sha256.New, []byte(legacy))
	mac.Write(sent.body)
	wantHex := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	raw, err := standardwebhooks.NewWebhookRaw([]byte(legacy))
	if err != nil {
		t.Fatal(err)
	}
	sec, err := strconv.ParseInt(sent.header.Get(activities.HeaderStdTimestamp), 10, 64)
	if err != nil {
		t.Fatalf("webhook-timestamp: %v", err)
	}
	wantStd, err := raw.Sign(sent.header.Get(activities.HeaderStdID), time.Unix(sec, 0), sent.body)
	if err != nil {
		t.Fatal(err)
	}
	gotHeaders := [2]string{sent.header.Get(activities.HeaderSignature), sent.header.Get(activities.HeaderStdSignature)}
	if diff := cmp.Diff(gotHeaders, [2]string{wantHex, wantStd}); diff != "" {
		t.Errorf("X-Webhook-Signature and webhook-signature of a pre-existing endpoint (-got +want):\n%s", diff)
	}
	if _, err := standardwebhooks.NewWebhook(legacy); err == nil {
		t.Errorf("the Go library decodes the legacy secret %q: the README's advice to rotate would be needless", legacy)
	}

	current := s.rotate(id)
	grace := s.attempt(in)
	checkHolders(t, []holder{
		{name: "legacy secret, raw key", got: sent, secret: legacy, raw: true, verifies: true, hexHeader: activities.HeaderSignature},
		{name: "in grace, legacy secret, raw key", got: grace, secret: legacy, raw: true, verifies: true, hexHeader: activities.HeaderSignaturePrevious},
		{name: "in grace, new secret", got: grace, secret: current, verifies: true, hexHeader: activities.HeaderSignature},
		{name: "in grace, new secret as raw key", got: grace, secret: current, raw: true, hexHeader: activities.HeaderSignature},
	})
}

// TestReceiversGivenSecret: a secret an admin gives on create, in the
// libraries' form, is answered and signs as given.
func TestReceiversGivenSecret(t *testing.T) {
	s := newStack(t)
	_, _, in := s.endpointWithEvent()
	key := bytes.Repeat([]byte{0xfb}, 24) // "+" and "/" in standard base64
	given := "whsec_" + base64.StdEncoding.EncodeToString(key)
	ep := s.call("POST", "/api/admin/webhook-endpoints", map[string]any{"url": s.recv.URL, "events": []string{"record_created"}, "secret": given}, http.StatusCreated)
	if ep["secret"] != given {
		t.Fatalf("create answered secret %v, want %q", ep["secret"], given)
	}
	in.EndpointID = ep["id"].(string)
	sent := s.attempt(in)
	checkHolders(t, []holder{{name: "given secret", got: sent, secret: given, verifies: true, hexHeader: activities.HeaderSignature}})
}
