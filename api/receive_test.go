package api_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/inbound"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// inboundHook is a module with a configured inbound webhook.
type inboundHook struct {
	moduleID string
	path     string // /api/webhooks/<slug>/<token>
	token    string
}

// shopOrderFields is the module the inbound tests map into.
var shopOrderFields = []map[string]any{
	{"name": "order_id", "type": "string", "required": true},
	{"name": "total", "type": "integer"},
	{"name": "email", "type": "email"},
	{"name": "state", "type": "status", "states": []string{"new", "paid"}, "initial": "new"},
}

// configureInbound creates a module with slug and configures its inbound
// webhook with cfg.
func (e *env) configureInbound(slug string, cfg map[string]any) inboundHook {
	e.t.Helper()
	mod := e.createModule(slug, shopOrderFields...)
	got := e.call("PUT", "/api/admin/modules/"+mod+"/inbound-webhook", e.admin, cfg).want(201).json()
	token, _ := got["token"].(string)
	u, err := url.Parse(got["url"].(string))
	if err != nil || token == "" || u.Path != "/api/webhooks/"+slug+"/"+token {
		e.t.Fatalf("url %v, token %q: want …/api/webhooks/%s/<token>", got["url"], token, slug)
	}
	return inboundHook{moduleID: mod, path: u.Path, token: token}
}

// inboundEvent is an inbound event as the admin API lists it.
type inboundEvent struct {
	ID            string                 `json:"id"`
	RequestID     string                 `json:"request_id"`
	Status        int                    `json:"status"`
	Action        *string                `json:"action"`
	RecordID      *string                `json:"record_id"`
	Error         *struct{ Code string } `json:"error"`
	Headers       map[string][]string    `json:"headers"`
	Body          string                 `json:"body"`
	BodySize      int                    `json:"body_size"`
	BodyTruncated bool                   `json:"body_truncated"`
	DeliveryID    *string                `json:"delivery_id"`
	DuplicateOf   *string                `json:"duplicate_of"`
	ReplayOf      *string                `json:"replay_of"`
	Replayable    bool                   `json:"replayable"`
}

func (e *env) inboundEvents(moduleID string) []inboundEvent {
	e.t.Helper()
	var page struct {
		Data  []inboundEvent `json:"data"`
		Total int            `json:"total"`
	}
	e.call("GET", "/api/admin/modules/"+moduleID+"/inbound-events?limit=100", e.admin, nil).want(200).decode(&page)
	if page.Total != len(page.Data) {
		e.t.Fatalf("total %d, %d rows", page.Total, len(page.Data))
	}
	return page.Data
}

func hexMAC(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

const inboundSecret = "in-secret-0123456789abcdef"

func TestInboundCreatesThenUpdates(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		h := e.configureInbound("orders", orderConfig(map[string]any{"secret": inboundSecret}))

		got := e.call("GET", "/api/admin/modules/"+h.moduleID+"/inbound-webhook", e.admin, nil).want(200).json()
		if got["token"] != h.token || got["secret_set"] != true || got["signature_scheme"] != "sha256" || got["secret"] != nil {
			t.Errorf("GET inbound-webhook = %v: want the same token, secret_set and no secret", got)
		}

		send := func(body string) *resp {
			t.Helper()
			return e.call("POST", h.path, "", body, "X-Webhook-Signature", "sha256="+hexMAC(inboundSecret, body), "User-Agent", "shop/1.0")
		}
		first := `{"order":{"id":"A-1","total":40,"customer":{"email":"ann@example.com"}},"source system":"shop"}`
		created := send(first).want(202).json()
		recID, _ := created["recordId"].(string)
		if created["action"] != "created" || !strings.HasPrefix(recID, "rec_") {
			t.Fatalf("first call answered %v, want created rec_…", created)
		}
		updated := send(`{"order":{"id":"A-1","total":42,"state":"paid"}}`).want(202).json()
		if diff := cmp.Diff(map[string]any{"recordId": recID, "action": "updated"}, updated); diff != "" {
			t.Errorf("second call (-want +got):\n%s", diff)
		}

		rec := e.call("GET", "/api/modules/"+h.moduleID+"/records/"+recID, e.admin, nil).want(200).json()
		wantFields := map[string]any{"order_id": "A-1", "total": float64(42), "email": "ann@example.com", "state": "paid"}
		if diff := cmp.Diff(wantFields, rec["fields"]); diff != "" {
			t.Errorf("record fields (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"source": "shop"}, rec["custom_data"]); diff != "" {
			t.Errorf("record custom_data (-want +got):\n%s", diff)
		}
		if total := e.call("GET", "/api/modules/"+h.moduleID+"/records", e.admin, nil).want(200).json()["total"]; total != float64(1) {
			t.Errorf("module holds %v records, want 1", total)
		}

		// The writes raised the same outbound events as REST writes do.
		events, err := e.store.PendingEvents(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, ev := range events {
			if ev.RecordID == recID {
				types = append(types, ev.Type)
			}
		}
		if diff := cmp.Diff([]string{"record_created", "record_updated", "status_change"}, types); diff != "" {
			t.Errorf("outbound events of the record (-want +got):\n%s", diff)
		}

		kept := e.inboundEvents(h.moduleID)
		if len(kept) != 2 {
			t.Fatalf("%d inbound events, want 2", len(kept))
		}
		newest, oldest := kept[0], kept[1]
		if oldest.Status != 202 || deref(oldest.Action) != "created" || deref(oldest.RecordID) != recID || oldest.Body != first || oldest.BodySize != len(first) {
			t.Errorf("first inbound event %+v: want 202 created %s with the raw body", oldest, recID)
		}
		if deref(newest.Action) != "updated" || newest.Error != nil || newest.Headers["User-Agent"][0] != "shop/1.0" || len(newest.Headers["X-Webhook-Signature"]) != 1 {
			t.Errorf("second inbound event %+v: want updated with the sender's headers", newest)
		}

		// The calls are in the access log, attributed to the tenant and module.
		e.flushLogs()
		logs := e.waitForLogs(url.Values{"method": {"POST"}, "status": {"202"}}, 2)
		for _, l := range logs.Data {
			if l.Route != "/api/webhooks/:moduleSlug/:token" || deref(l.TenantID) != e.tenantID || deref(l.ModuleID) != h.moduleID || l.KeyID != nil {
				t.Errorf("access-log row %+v: want the inbound route, tenant and module, no key", l)
			}
			// The token is a credential: the log keeps only its start.
			if want := "/api/webhooks/orders/" + h.token[:6] + "…"; l.Path != want {
				t.Errorf("logged path %q, want %q", l.Path, want)
			}
		}
	})
}

func TestInboundUnknownURLsAnswerAlike(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		a := e.configureInbound("alpha", orderConfig(nil))
		b := e.configureInbound("beta", orderConfig(nil))
		other := newEnvOn(t, e.store)
		c := other.configureInbound("gamma", orderConfig(nil))

		body := `{"order":{"id":"X"}}`
		for _, path := range []string{
			"/api/webhooks/nosuch/" + a.token,                 // unknown slug
			"/api/webhooks/alpha/" + strings.Repeat("x", 43),  // unknown token
			"/api/webhooks/alpha/" + b.token,                  // another module's token
			"/api/webhooks/alpha/" + c.token,                  // another tenant's token
			"/api/webhooks/gamma/" + a.token,                  // another tenant's slug
			"/api/webhooks/alpha/" + a.token[:len(a.token)-1], // a prefix of the right token
		} {
			r := e.call("POST", path, "", body, "X-Request-Id", "same-id")
			r.want(404)
			if string(r.body) != `{"error":"not_found","message":"no inbound webhook at this URL","request_id":"same-id"}` {
				t.Errorf("POST %s answered %s", path, r.body)
			}
		}
		for _, h := range []inboundHook{a, b} {
			if n := len(e.inboundEvents(h.moduleID)); n != 0 {
				t.Errorf("%d inbound events kept for calls that named no webhook", n)
			}
		}
		// The right pair still works.
		e.call("POST", a.path, "", body).want(202)
	})
}

func TestInboundSignatureSchemes(t *testing.T) {
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	body := `{"order":{"id":"S-1"}}`
	standard := func(secret, id, ts string) string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(id + "." + ts + "." + body))
		return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	tests := []struct {
		scheme  string
		headers []string
		want    int
	}{
		{"sha256", []string{"X-Webhook-Signature", "sha256=" + hexMAC(inboundSecret, body)}, 202},
		{"sha256", []string{"X-Webhook-Signature", "sha256=" + strings.ToUpper(hexMAC(inboundSecret, body))}, 202},
		{"sha256", nil, 401},
		{"sha256", []string{"X-Webhook-Signature", "sha256=" + hexMAC("another-secret-0123456789", body)}, 401},
		{"sha256", []string{"X-Webhook-Signature", hexMAC(inboundSecret, body)}, 401},
		{"sha256", []string{"X-Hub-Signature-256", "sha256=" + hexMAC(inboundSecret, body)}, 401},
		// A recordhub sender in a rotation's grace: its new secret signs
		// X-Webhook-Signature, the one this webhook holds X-Webhook-Signature-Previous.
		{"sha256", []string{"X-Webhook-Signature", "sha256=" + hexMAC("the-senders-new-secret-0123", body), "X-Webhook-Signature-Previous", "sha256=" + hexMAC(inboundSecret, body)}, 202},
		{"sha256", []string{"X-Webhook-Signature-Previous", "sha256=" + hexMAC(inboundSecret, body)}, 401},
		{"github", []string{"X-Hub-Signature-256", "sha256=" + hexMAC(inboundSecret, body)}, 202},
		{"github", []string{"X-Hub-Signature-256", "sha256=" + hexMAC("the-senders-new-secret-0123", body), "X-Webhook-Signature-Previous", "sha256=" + hexMAC(inboundSecret, body)}, 401},
		{"github", []string{"X-Webhook-Signature", "sha256=" + hexMAC(inboundSecret, body)}, 401},
		{"standard_webhooks", []string{"webhook-id", "msg_1", "webhook-timestamp", ts, "webhook-signature", standard(inboundSecret, "msg_1", ts)}, 202},
		{"standard_webhooks", []string{"webhook-id", "msg_1", "webhook-timestamp", ts, "webhook-signature", "v1,AAAA " + standard(inboundSecret, "msg_1", ts)}, 202},
		{"standard_webhooks", []string{"webhook-id", "msg_2", "webhook-timestamp", ts, "webhook-signature", standard(inboundSecret, "msg_1", ts)}, 401},
		{"standard_webhooks", func() []string {
			old := strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10)
			return []string{"webhook-id", "msg_1", "webhook-timestamp", old, "webhook-signature", standard(inboundSecret, "msg_1", old)}
		}(), 401},
	}
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		hooks := map[string]inboundHook{}
		for _, scheme := range []string{"sha256", "github", "standard_webhooks"} {
			hooks[scheme] = e.configureInbound(strings.ReplaceAll(scheme, "_", "-"), orderConfig(map[string]any{"secret": inboundSecret, "signature_scheme": scheme}))
		}
		for i, tt := range tests {
			r := e.call("POST", hooks[tt.scheme].path, "", body, tt.headers...)
			if r.status != tt.want {
				t.Errorf("%d: %s with %v → %d %s, want %d", i, tt.scheme, tt.headers, r.status, r.body, tt.want)
				continue
			}
			if tt.want == 401 && r.errorCode() != "invalid_signature" {
				t.Errorf("%d: error %q, want invalid_signature", i, r.errorCode())
			}
		}
		// Refused calls are kept with their outcome, and made nothing.
		for scheme, h := range hooks {
			var refused int
			for _, ev := range e.inboundEvents(h.moduleID) {
				if ev.Status == 401 {
					refused++
					if ev.Error == nil || ev.Error.Code != "invalid_signature" || ev.RecordID != nil || ev.Body != body {
						t.Errorf("%s: refused event %+v", scheme, ev)
					}
				}
			}
			if refused == 0 {
				t.Errorf("%s: no refused call kept", scheme)
			}
		}
	})
}

func TestInboundRefusesBadBodies(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		h := e.configureInbound("orders", orderConfig(nil))
		big := `{"pad":"` + strings.Repeat("a", api1MiB) + `"}`
		tests := []struct {
			name    string
			body    string
			headers []string
			status  int
			code    string
			details []string
		}{
			{"too large", big, nil, 413, "payload_too_large", nil},
			{"not json", "order_id=1", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", nil},
			{"malformed", `{"order":`, nil, 400, "invalid_request", nil},
			{"scalar", `42`, nil, 400, "invalid_request", nil},
			{"two values", `{} {}`, nil, 400, "invalid_request", nil},
			{"empty", ``, nil, 400, "invalid_request", nil},
			{"wrong type", `{"order":{"id":"B-1","total":"lots"}}`, nil, 422, "mapping_failed", []string{"fields.total"}},
			{"bad state", `{"order":{"id":"B-1","state":"lost","customer":{"email":"nope"}}}`, nil, 422, "mapping_failed", []string{"fields.email", "fields.state"}},
			{"no match value", `{"order":{"total":1}}`, nil, 422, "mapping_failed", []string{"fields.order_id"}},
			{"object match value", `{"order":{"id":{"a":1}}}`, nil, 422, "mapping_failed", []string{"fields.order_id"}},
			{"NUL in a match value", `{"order":{"id":"a\u0000b"}}`, nil, 422, "mapping_failed", []string{"fields.order_id"}},
			{"NUL in custom data", `{"order":{"id":"N-1"},"source system":"a\u0000"}`, nil, 422, "mapping_failed", []string{"custom_data.source"}},
			{"huge number in custom data", `{"order":{"id":"N-1"},"source system":1e999999}`, nil, 422, "mapping_failed", []string{"custom_data.source"}},
			{"match value underflows", `{"order":{"id":1e-20000}}`, nil, 422, "mapping_failed", []string{"fields.order_id"}},
		}
		for _, tt := range tests {
			r := e.call("POST", h.path, "", tt.body, tt.headers...)
			if r.status != tt.status || r.errorCode() != tt.code {
				t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, truncateBody(r.body), tt.status, tt.code)
				continue
			}
			if tt.details == nil {
				continue
			}
			var got struct {
				Details []models.FieldError `json:"details"`
			}
			r.decode(&got)
			var fields []string
			for _, dt := range got.Details {
				fields = append(fields, dt.Field)
				if dt.Rule == nil || dt.Source == "" {
					t.Errorf("%s: detail %+v names no rule", tt.name, dt)
				}
			}
			if diff := cmp.Diff(tt.details, fields); diff != "" {
				t.Errorf("%s: detail fields (-want +got):\n%s", tt.name, diff)
			}
		}
		if total := e.call("GET", "/api/modules/"+h.moduleID+"/records", e.admin, nil).want(200).json()["total"]; total != float64(0) {
			t.Errorf("refused calls made %v records", total)
		}
		kept := e.inboundEvents(h.moduleID)
		if len(kept) != len(tests) {
			t.Fatalf("%d inbound events kept, want %d", len(kept), len(tests))
		}
		for i, ev := range kept {
			tt := tests[len(tests)-1-i]
			if ev.Status != tt.status || ev.Error == nil || ev.Error.Code != tt.code {
				t.Errorf("%s: kept %d %+v, want %d %s", tt.name, ev.Status, ev.Error, tt.status, tt.code)
			}
			if tt.status != 413 && ev.Body != tt.body {
				t.Errorf("%s: kept body %q, want the raw body", tt.name, ev.Body)
			}
			if tt.status == 413 && (!ev.BodyTruncated || ev.BodySize < api1MiB) {
				t.Errorf("too large: kept size %d truncated %v", ev.BodySize, ev.BodyTruncated)
			}
		}
	})
}

const api1MiB = 1 << 20

func truncateBody(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func TestInboundConcurrentSamePayloadMakesOneRecord(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		h := e.configureInbound("orders", orderConfig(nil))
		const n = 12
		actions := make(chan string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.call("POST", h.path, "", fmt.Sprintf(`{"order":{"id":"C-1","total":%d}}`, i))
				if r.status != 202 {
					t.Errorf("call %d: %d %s", i, r.status, r.body)
					return
				}
				actions <- r.json()["action"].(string)
			}()
		}
		wg.Wait()
		close(actions)
		count := map[string]int{}
		for a := range actions {
			count[a]++
		}
		if diff := cmp.Diff(map[string]int{"created": 1, "updated": n - 1}, count); diff != "" {
			t.Errorf("actions (-want +got):\n%s", diff)
		}
		if total := e.call("GET", "/api/modules/"+h.moduleID+"/records", e.admin, nil).want(200).json()["total"]; total != float64(1) {
			t.Errorf("%d concurrent calls with one order id made %v records, want 1", n, total)
		}
	})
}

func TestInboundRateLimit(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		// Two replicas share the webhook's budget through Redis.
		prefix := limiterPrefix()
		db := storetest.NewDB(t, d)
		a := newEnvOn(t, db.Open(t, models.Options{}), withLimiter(redisLimiter(t, prefix)))
		b := replicaOf(t, a, db.Open(t, models.Options{}), withLimiter(redisLimiter(t, prefix)))
		cfg := orderConfig(nil)
		cfg["match_fields"] = []string{}
		h := a.configureInbound("orders", cfg)
		statuses := map[int]int{}
		var last *resp
		start := time.Now()
		for i := 0; statuses[429] < 2 && i < 2*models.InboundRateLimit; i++ {
			e := a
			if i%2 == 1 {
				e = b
			}
			last = e.call("POST", h.path, "", `{"order":{"id":"R"}}`)
			statuses[last.status]++
		}
		// The budget refills a call a second (Redis keeps the time): a slow
		// run sees as many more calls pass.
		refills := int(time.Since(start) / (time.Minute / models.InboundRateLimit))
		if accepted := statuses[202]; accepted < models.InboundRateLimit || accepted > models.InboundRateLimit+refills || len(statuses) != 2 {
			t.Errorf("statuses %v, want %d to %d calls accepted, then 429", statuses, models.InboundRateLimit, models.InboundRateLimit+refills)
		}
		var body struct {
			Error      string `json:"error"`
			Limit      int    `json:"limit"`
			RetryAfter int    `json:"retry_after"`
		}
		last.decode(&body)
		if body.Error != "rate_limited" || body.Limit != 60 || body.RetryAfter < 1 || last.header.Get("Retry-After") != strconv.Itoa(body.RetryAfter) || last.header.Get("X-RateLimit-Limit") != "60" {
			t.Errorf("429 answer %s, headers %v", last.body, last.header)
		}
		// The refused calls are kept, without their bodies.
		var limited int
		for _, ev := range a.inboundEvents(h.moduleID) {
			if ev.Status == 429 {
				limited++
				if ev.Body != "" || ev.Error == nil || ev.Error.Code != "rate_limited" {
					t.Errorf("rate-limited event %+v", ev)
				}
			}
		}
		if limited != 2 {
			t.Errorf("%d rate-limited calls kept, want 2", limited)
		}
	})
}

func TestInboundAdmin(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", shopOrderFields...)
		base := "/api/admin/modules/" + mod + "/inbound-webhook"
		e.call("GET", base, e.admin, nil).want(404)

		bad := map[string]any{
			"mapping": []map[string]any{
				{"source": "$.payload.order.id", "field": "order_id"},
				{"source": "$.payload.items[*].sku", "field": "total"},
				{"source": "$.payload.x", "field": "nosuch"},
				{"source": "$.other", "field": "custom_data.x"},
				{"source": "$.payload.y", "field": "order_id"},
			},
			"match_fields": []string{"email"},
			"secret":       "short",
		}
		wantDetails(t, e.call("PUT", base, e.admin, bad), "mapping[1].source", "mapping[2].field", "mapping[3].source", "mapping[4].field", "match_fields[0]", "secret")
		wantDetails(t, e.call("PUT", base, e.admin, map[string]any{"signature_scheme": "md5", "mapping": []any{}}), "mapping", "signature_scheme")
		wantDetails(t, e.call("PUT", base, e.admin, map[string]any{"signature_scheme": "", "secret": 5}), "secret")
		e.call("PUT", base, e.admin, map[string]any{"mapping": []any{}, "extra": 1}).want(400)
		e.call("PUT", "/api/admin/modules/mod_nosuch/inbound-webhook", e.admin, orderConfig(nil)).want(404)

		first := e.call("PUT", base, e.admin, orderConfig(map[string]any{"secret": inboundSecret})).want(201).json()
		path := mustPath(t, first["url"])
		// A second PUT replaces the configuration and keeps token and secret.
		second := e.call("PUT", base, e.admin, orderConfig(map[string]any{"enabled": false})).want(200).json()
		if second["token"] != first["token"] || second["secret_set"] != true || second["enabled"] != false {
			t.Errorf("after a PUT without secret: %v", second)
		}
		r := e.call("POST", path, "", `{"order":{"id":"D"}}`)
		if r.status != 404 || !strings.Contains(string(r.body), "disabled") {
			t.Errorf("disabled webhook answered %d %s", r.status, r.body)
		}
		third := e.call("PUT", base, e.admin, orderConfig(map[string]any{"secret": nil})).want(200).json()
		if third["secret_set"] != false || third["enabled"] != true {
			t.Errorf("after secret null: %v", third)
		}
		e.call("POST", path, "", `{"order":{"id":"D"}}`).want(202)

		// Rotation: the old URL stops at once.
		rotated := e.call("POST", base+"/rotate-token", e.admin, nil).want(200).json()
		newPath := mustPath(t, rotated["url"])
		if rotated["token"] == first["token"] || newPath == path {
			t.Fatalf("rotate-token kept the token")
		}
		e.call("POST", path, "", `{"order":{"id":"D"}}`).want(404)
		e.call("POST", newPath, "", `{"order":{"id":"D"}}`).want(202)

		// The URL follows the module's slug.
		e.call("PATCH", "/api/admin/modules/"+mod, e.admin, map[string]any{"slug": "purchases"}).want(200)
		e.call("POST", newPath, "", `{"order":{"id":"D"}}`).want(404)
		moved := e.call("GET", base, e.admin, nil).want(200).json()
		newPath = mustPath(t, moved["url"])
		if !strings.HasPrefix(newPath, "/api/webhooks/purchases/") {
			t.Errorf("url after the slug changed: %v", moved["url"])
		}
		e.call("POST", newPath, "", `{"order":{"id":"D"}}`).want(202)

		// Another tenant sees none of it.
		other := newEnvOn(t, e.store)
		other.call("GET", base, other.admin, nil).want(404)
		other.call("GET", "/api/admin/modules/"+mod+"/inbound-events", other.admin, nil).want(404)
		other.call("POST", base+"/rotate-token", other.admin, nil).want(404)
		other.call("DELETE", base, other.admin, nil).want(404)

		deleted := e.call("DELETE", base, e.admin, nil).want(200).json()
		if deleted["id"] != first["id"] {
			t.Errorf("DELETE answered %v, want the webhook's id %v", deleted, first["id"])
		}
		e.call("POST", newPath, "", `{"order":{"id":"D"}}`).want(404)
		e.call("GET", base, e.admin, nil).want(404)
		// Kept: the call to the disabled webhook and the three accepted;
		// the calls to URLs that named no webhook are in the access log only.
		if n := len(e.inboundEvents(mod)); n != 4 {
			t.Errorf("%d inbound events after delete, want the 4 calls kept", n)
		}
	})
}

func mustPath(t *testing.T, raw any) string {
	t.Helper()
	s, _ := raw.(string)
	u, err := url.Parse(s)
	if err != nil || !strings.HasPrefix(u.Path, "/api/webhooks/") {
		t.Fatalf("url %v", raw)
	}
	return u.Path
}

func TestInboundPublicURL(t *testing.T) {
	e := newEnv(t, models.SQLite, func(d *api.Deps) { d.PublicURL = "https://records.example.com/" })
	mod := e.createModule("orders", shopOrderFields...)
	got := e.call("PUT", "/api/admin/modules/"+mod+"/inbound-webhook", e.admin, orderConfig(nil)).want(201).json()
	if want := "https://records.example.com/api/webhooks/orders/" + got["token"].(string); got["url"] != want {
		t.Errorf("url %v, want %s", got["url"], want)
	}
}

// The store keeps scheme names that api/inbound must verify.
func TestInboundSchemesAgree(t *testing.T) {
	var verified []string
	for _, s := range inbound.Schemes {
		verified = append(verified, string(s))
	}
	if diff := cmp.Diff(models.InboundSchemes, verified); diff != "" {
		t.Errorf("schemes the store accepts vs. those verified (-store +verified):\n%s", diff)
	}
}

func TestInboundRetriesAreAppliedOnce(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		cfg := orderConfig(nil)
		cfg["match_fields"] = []string{} // every applied call creates
		h := e.configureInbound("orders", cfg)
		records := func() float64 {
			t.Helper()
			return e.call("GET", "/api/modules/"+h.moduleID+"/records", e.admin, nil).want(200).json()["total"].(float64)
		}

		first := e.call("POST", h.path, "", `{"order":{"id":"I-1"}}`, "Idempotency-Key", "delivery-1").want(202)
		again := e.call("POST", h.path, "", `{"order":{"id":"I-1"}}`, "Idempotency-Key", "delivery-1").want(202)
		if diff := cmp.Diff(first.json(), again.json()); diff != "" || again.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("retry answered differently (-first +retry):\n%s; Idempotent-Replayed %q then %q", diff, first.header.Get("Idempotent-Replayed"), again.header.Get("Idempotent-Replayed"))
		}
		// GitHub's and Standard Webhooks' delivery ids count too; other ids apply.
		e.call("POST", h.path, "", `{"order":{"id":"I-2"}}`, "X-GitHub-Delivery", "gh-1").want(202)
		e.call("POST", h.path, "", `{"order":{"id":"I-2"}}`, "X-GitHub-Delivery", "gh-1").want(202)
		e.call("POST", h.path, "", `{"order":{"id":"I-3"}}`, "webhook-id", "msg_1").want(202)
		e.call("POST", h.path, "", `{"order":{"id":"I-3"}}`, "webhook-id", "msg_1").want(202)
		e.call("POST", h.path, "", `{"order":{"id":"I-1"}}`, "Idempotency-Key", "delivery-2").want(202)
		// A failed call does not count: its retry is processed anew.
		e.call("POST", h.path, "", `{"order":{"id":"I-4","total":"x"}}`, "Idempotency-Key", "delivery-3").want(422)
		e.call("POST", h.path, "", `{"order":{"id":"I-4","total":4}}`, "Idempotency-Key", "delivery-3").want(202)
		if got := records(); got != 5 {
			t.Errorf("%v records, want 5 (I-1 twice under two ids, I-2, I-3, I-4)", got)
		}

		// Concurrent repeats of one delivery make one record.
		const n = 8
		var wg sync.WaitGroup
		ids := make(chan string, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.call("POST", h.path, "", `{"order":{"id":"I-5"}}`, "Idempotency-Key", "delivery-5")
				if r.status != 202 {
					t.Errorf("concurrent repeat: %d %s", r.status, r.body)
					return
				}
				ids <- r.json()["recordId"].(string)
			}()
		}
		wg.Wait()
		close(ids)
		seen := map[string]bool{}
		for id := range ids {
			seen[id] = true
		}
		if len(seen) != 1 || records() != 6 {
			t.Errorf("%d concurrent repeats answered records %v and left %v records, want one new record", n, seen, records())
		}

		var dups int
		for _, ev := range e.inboundEvents(h.moduleID) {
			if ev.DuplicateOf != nil {
				dups++
				if ev.Status != 202 || ev.RecordID == nil || ev.DeliveryID == nil {
					t.Errorf("duplicate event %+v", ev)
				}
			}
		}
		if dups != 3+n-1 {
			t.Errorf("%d calls kept as duplicates, want %d", dups, 3+n-1)
		}
	})
}

func TestInboundReplayAfterTheMappingIsFixed(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		// A mapping that sends the order total to the email field: every
		// call with a total is refused.
		cfg := orderConfig(map[string]any{"secret": inboundSecret})
		rules := cfg["mapping"].([]map[string]any)
		rules[1]["field"] = "email"
		rules[2]["field"] = "total"
		h := e.configureInbound("orders", cfg)
		body := `{"order":{"id":"F-1","total":7}}`
		e.call("POST", h.path, "", body, "X-Webhook-Signature", "sha256=0000000000000000000000000000000000000000000000000000000000000000").want(401)
		e.call("POST", h.path, "", body, "X-Webhook-Signature", "sha256="+hexMAC(inboundSecret, body)).want(422)
		kept := e.inboundEvents(h.moduleID)
		refused, unsigned := kept[0], kept[1]
		base := "/api/admin/modules/" + h.moduleID + "/inbound-events/"

		// Replaying before the fix fails the same way, and is kept too.
		if r := e.call("POST", base+refused.ID+"/replay", e.admin, nil); r.status != 422 || r.errorCode() != "mapping_failed" {
			t.Errorf("replay before the fix: %d %s", r.status, r.body)
		}
		// A call whose signature failed is not replayed, and is listed so.
		if r := e.call("POST", base+unsigned.ID+"/replay", e.admin, nil); r.status != 409 {
			t.Errorf("replay of an unsigned call: %d %s, want 409", r.status, r.body)
		}
		if !refused.Replayable || unsigned.Replayable {
			t.Errorf("replayable: the 422 call %v, the 401 call %v; want true, false", refused.Replayable, unsigned.Replayable)
		}
		// The list names its module.
		listed := e.call("GET", "/api/admin/modules/"+h.moduleID+"/inbound-events", e.admin, nil).want(200).json()
		if diff := cmp.Diff(map[string]any{"id": h.moduleID, "slug": "orders", "name": "ORDERS"}, listed["module"]); diff != "" {
			t.Errorf("the list's module (-want +got):\n%s", diff)
		}
		e.call("PUT", "/api/admin/modules/"+h.moduleID+"/inbound-webhook", e.admin, orderConfig(nil)).want(200)
		var replay inboundEvent
		e.call("POST", base+refused.ID+"/replay", e.admin, nil).want(202).decode(&replay)
		if replay.Status != 202 || deref(replay.Action) != "created" || replay.RecordID == nil || deref(replay.ReplayOf) != refused.ID || replay.Body != body {
			t.Fatalf("replay %+v", replay)
		}
		rec := e.call("GET", "/api/modules/"+h.moduleID+"/records/"+*replay.RecordID, e.admin, nil).want(200).json()
		if diff := cmp.Diff(map[string]any{"order_id": "F-1", "total": float64(7), "state": "new"}, rec["fields"]); diff != "" {
			t.Errorf("replayed record (-want +got):\n%s", diff)
		}
		if n := len(e.inboundEvents(h.moduleID)); n != 4 {
			t.Errorf("%d inbound events, want 2 calls and 2 replays", n)
		}
		e.call("POST", base+"ibe_nosuch/replay", e.admin, nil).want(404)
		other := newEnvOn(t, e.store)
		other.call("POST", base+refused.ID+"/replay", other.admin, nil).want(404)
	})
}

// A signed call's delivery id comes from what its signature covers
// (Standard Webhooks' webhook-id, else the signed body): a captured call
// sent again with fresh unsigned ids is a duplicate, and a new signed call
// carrying an earlier call's unsigned ids is applied.
func TestInboundSignedCallsDedupeOnSignedMaterial(t *testing.T) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	schemes := []struct {
		scheme string
		sign   func(id, body string) []string
	}{
		{"sha256", func(_, body string) []string {
			return []string{"X-Webhook-Signature", "sha256=" + hexMAC(inboundSecret, body)}
		}},
		{"github", func(_, body string) []string {
			return []string{"X-Hub-Signature-256", "sha256=" + hexMAC(inboundSecret, body)}
		}},
		{"standard_webhooks", func(id, body string) []string {
			mac := hmac.New(sha256.New, []byte(inboundSecret))
			mac.Write([]byte(id + "." + ts + "." + body))
			return []string{"webhook-id", id, "webhook-timestamp", ts, "webhook-signature", "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))}
		}},
	}
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		for _, sc := range schemes {
			t.Run(sc.scheme, func(t *testing.T) {
				e := e.on(t)
				cfg := orderConfig(map[string]any{"secret": inboundSecret, "signature_scheme": sc.scheme})
				cfg["match_fields"] = []string{} // every applied call creates
				h := e.configureInbound(strings.ReplaceAll(sc.scheme, "_", "-"), cfg)
				send := func(id, body string, unsigned ...string) *resp {
					t.Helper()
					return e.call("POST", h.path, "", body, append(sc.sign(id, body), unsigned...)...)
				}
				records := func() float64 {
					t.Helper()
					return e.call("GET", "/api/modules/"+h.moduleID+"/records", e.admin, nil).want(200).json()["total"].(float64)
				}

				first := send("msg_1", `{"order":{"id":"S-1"}}`, "Idempotency-Key", "key-1", "X-GitHub-Delivery", "gh-1").want(202)
				for _, unsigned := range [][]string{
					{"Idempotency-Key", "key-2"},
					{"X-GitHub-Delivery", "gh-2"},
					{"Idempotency-Key", "key-3", "X-GitHub-Delivery", "gh-3"},
					nil,
				} {
					replay := send("msg_1", `{"order":{"id":"S-1"}}`, unsigned...).want(202)
					if diff := cmp.Diff(first.json(), replay.json()); diff != "" || replay.header.Get("Idempotent-Replayed") != "true" {
						t.Errorf("captured call replayed with %v (-first +replay):\n%s; Idempotent-Replayed %q", unsigned, diff, replay.header.Get("Idempotent-Replayed"))
					}
				}
				if sc.scheme == "sha256" {
					// The same body from a sender in a rotation's grace,
					// verified by X-Webhook-Signature-Previous: still one message.
					replay := e.call("POST", h.path, "", `{"order":{"id":"S-1"}}`,
						"X-Webhook-Signature", "sha256="+hexMAC("the-senders-new-secret-0123", `{"order":{"id":"S-1"}}`),
						"X-Webhook-Signature-Previous", "sha256="+hexMAC(inboundSecret, `{"order":{"id":"S-1"}}`)).want(202)
					if diff := cmp.Diff(first.json(), replay.json()); diff != "" || replay.header.Get("Idempotent-Replayed") != "true" {
						t.Errorf("the call resent through a rotation (-first +replay):\n%s; Idempotent-Replayed %q", diff, replay.header.Get("Idempotent-Replayed"))
					}
				}
				if got := records(); got != 1 {
					t.Errorf("%v records after replays of one signed call, want 1", got)
				}

				// Another signed call with the first call's unsigned ids.
				other := send("msg_2", `{"order":{"id":"S-2"}}`, "Idempotency-Key", "key-1", "X-GitHub-Delivery", "gh-1").want(202)
				if other.json()["action"] != "created" || other.header.Get("Idempotent-Replayed") != "" {
					t.Errorf("a new signed call with an earlier call's Idempotency-Key answered %s, %v", other.body, other.header)
				}
				wantRecords := 2.0
				if sc.scheme == "standard_webhooks" {
					// webhook-id is signed: the same body under a new id is a new message.
					send("msg_3", `{"order":{"id":"S-1"}}`).want(202)
					wantRecords++
				}
				if got := records(); got != wantRecords {
					t.Errorf("%v records, want %v", got, wantRecords)
				}
				for _, ev := range e.inboundEvents(h.moduleID) {
					if ev.DeliveryID == nil || strings.HasPrefix(*ev.DeliveryID, "key-") || strings.HasPrefix(*ev.DeliveryID, "gh-") {
						t.Errorf("event %s kept delivery id %v, want the signed one", ev.ID, deref(ev.DeliveryID))
					}
				}
			})
		}
	})
}

// Calls whose signature fails are charged to a budget of their own, per
// source address: a flood of forgeries neither locks the sender out nor
// spends its 60 calls a minute.
func TestInboundForgedCallsHaveTheirOwnBudget(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		// A stopped clock: no budget refills while the test runs.
		frozen := time.Now()
		e := newEnv(t, d, withLimiter(ratelimit.NewMemory(func() time.Time { return frozen })))
		cfg := orderConfig(map[string]any{"secret": inboundSecret})
		cfg["match_fields"] = []string{}
		h := e.configureInbound("orders", cfg)
		body := `{"order":{"id":"F-1"}}`
		signed := func(path string) *resp {
			t.Helper()
			return e.call("POST", path, "", body, "X-Webhook-Signature", "sha256="+hexMAC(inboundSecret, body))
		}
		forgeries := [][]string{
			{"X-Webhook-Signature", "sha256=" + hexMAC("not-the-secret-0123456789", body)}, // refused once the body is read
			{"X-Webhook-Signature", ""},          // refused on its headers alone
			{"X-Webhook-Signature", "sha256=zz"}, // likewise
		}
		statuses := map[int]int{}
		for i := range models.InboundRateLimit + 3 {
			statuses[e.call("POST", h.path, "", body, forgeries[i%len(forgeries)]...).status]++
		}
		if diff := cmp.Diff(map[int]int{401: models.InboundRateLimit, 429: 3}, statuses); diff != "" {
			t.Errorf("statuses of forged calls (-want +got):\n%s", diff)
		}

		// The sender's budget is whole.
		r := signed(h.path).want(202)
		if got, want := r.header.Get("X-RateLimit-Remaining"), strconv.Itoa(models.InboundRateLimit-1); got != want {
			t.Errorf("X-RateLimit-Remaining after the forgeries and one signed call: %s, want %s", got, want)
		}
		var refused, limited int
		for _, ev := range e.inboundEvents(h.moduleID) {
			switch ev.Status {
			case 401:
				refused++
				if ev.Body != body {
					t.Errorf("refused forgery kept body %q, want the body", ev.Body)
				}
			case 429:
				limited++
				if ev.Body != "" || !ev.BodyTruncated || ev.Error == nil || ev.Error.Code != "rate_limited" || ev.DeliveryID != nil {
					t.Errorf("rate-limited forgery kept as %+v, want no body and rate_limited", ev)
				}
			}
		}
		if refused != models.InboundRateLimit || limited != 3 {
			t.Errorf("kept %d refused and %d rate-limited forgeries, want %d and 3", refused, limited, models.InboundRateLimit)
		}

		// A new token: the old URL names nothing, and both budgets stay the
		// webhook's.
		rotated := e.call("POST", "/api/admin/modules/"+h.moduleID+"/inbound-webhook/rotate-token", e.admin, nil).want(200).json()
		newPath := mustPath(t, rotated["url"])
		signed(h.path).want(404)
		e.call("POST", newPath, "", body, forgeries[0]...).want(429)
		accepted := 1
		for i := range models.InboundRateLimit {
			// Each a new message: a repeat would be charged to the source.
			fresh := fmt.Sprintf(`{"order":{"id":"F-%d"}}`, i+2)
			r := e.call("POST", newPath, "", fresh, signedBy("sha256", "", fresh)...)
			if r.status != 202 {
				if r.status != 429 {
					t.Fatalf("signed call answered %d %s", r.status, r.body)
				}
				break
			}
			accepted++
		}
		if accepted != models.InboundRateLimit {
			t.Errorf("%d signed calls accepted, want the sender's %d", accepted, models.InboundRateLimit)
		}
	})
}

// replayLimiters are the limiters the replay tests run with: in process on
// a stopped clock (no budget refills while the test runs, so counts are
// exact), and Redis, whose clock runs (a budget refills a call a second).
var replayLimiters = []struct {
	name   string
	frozen bool
	opt    func(t *testing.T) envOption
}{
	{"memory", true, func(*testing.T) envOption {
		frozen := time.Now()
		return withLimiter(ratelimit.NewMemory(func() time.Time { return frozen }))
	}},
	{"redis", false, func(t *testing.T) envOption { return withLimiter(redisLimiter(t, limiterPrefix())) }},
}

// signedBy returns the headers that sign body under scheme with
// inboundSecret; id is Standard Webhooks' webhook-id.
func signedBy(scheme, id, body string) []string {
	if scheme == "standard_webhooks" {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(inboundSecret))
		mac.Write([]byte(id + "." + ts + "." + body))
		return []string{"webhook-id", id, "webhook-timestamp", ts, "webhook-signature", "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))}
	}
	return []string{"X-Webhook-Signature", "sha256=" + hexMAC(inboundSecret, body)}
}

// resend sends one call again until the answer is 429 three times (at most
// three budgets' worth), and counts the answers; every other answer must
// be want.
func resend(t *testing.T, e *env, path, body string, headers []string, want func(r *resp)) map[int]int {
	t.Helper()
	statuses := map[int]int{}
	for i := 0; statuses[429] < 3 && i < 3*models.InboundRateLimit; i++ {
		r := e.call("POST", path, "", body, headers...)
		statuses[r.status]++
		if r.status == 429 {
			if r.errorCode() != "rate_limited" || r.header.Get("Retry-After") == "" {
				t.Errorf("429 answer %s, headers %v", r.body, r.header)
			}
			continue
		}
		want(r)
	}
	return statuses
}

// A captured signed call sent again and again (a replay) is answered from
// what is stored and charged to a budget of the replayer's own: the
// sender's next call passes, and the replays write no inbound event. They
// are in the access log, like every call.
func TestInboundReplaysCostTheReplayer(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		for _, l := range replayLimiters {
			for _, scheme := range []string{"sha256", "standard_webhooks"} {
				t.Run(l.name+"/"+scheme, func(t *testing.T) {
					e := newEnv(t, d, l.opt(t))
					cfg := orderConfig(map[string]any{"secret": inboundSecret, "signature_scheme": scheme})
					cfg["match_fields"] = []string{} // every applied call creates
					h := e.configureInbound("orders", cfg)
					body := `{"order":{"id":"P-1"}}`
					captured := signedBy(scheme, "msg_1", body)
					first := e.call("POST", h.path, "", body, captured...).want(202)

					statuses := resend(t, e, h.path, body, captured, func(r *resp) {
						t.Helper()
						if r.status != 202 || r.header.Get("Idempotent-Replayed") != "true" || string(r.body) != string(first.body) {
							t.Fatalf("replay answered %d %s, Idempotent-Replayed %q; want 202 %s", r.status, r.body, r.header.Get("Idempotent-Replayed"), first.body)
						}
					})
					if statuses[202] < models.InboundRateLimit || statuses[429] != 3 || (l.frozen && statuses[202] != models.InboundRateLimit) {
						t.Errorf("replays answered %v, want %d (more as the budget refills) answered as the first call, then 429", statuses, models.InboundRateLimit)
					}

					// The sender's budget is the sender's: one call spent.
					r := e.call("POST", h.path, "", `{"order":{"id":"P-2"}}`, signedBy(scheme, "msg_2", `{"order":{"id":"P-2"}}`)...)
					if r.status != 202 || r.json()["action"] != "created" || r.header.Get("Idempotent-Replayed") != "" {
						t.Fatalf("the sender's next call after %v replays answered %d %s", statuses, r.status, r.body)
					}
					if got, _ := strconv.Atoi(r.header.Get("X-RateLimit-Remaining")); got < models.InboundRateLimit-2 {
						t.Errorf("X-RateLimit-Remaining after the sender's second call: %d, want at least %d", got, models.InboundRateLimit-2)
					}

					// Nothing written but the sender's two calls.
					kept := e.inboundEvents(h.moduleID)
					if len(kept) != 2 || kept[0].DuplicateOf != nil || kept[1].DuplicateOf != nil {
						t.Errorf("%d inbound events after two calls and %v replays, want 2: %+v", len(kept), statuses, kept)
					}
					if total := e.call("GET", "/api/modules/"+h.moduleID+"/records", e.admin, nil).want(200).json()["total"]; total != float64(2) {
						t.Errorf("%v records, want 2", total)
					}

					// Every call is in the access log.
					e.flushLogs()
					e.waitForLogs(url.Values{"method": {"POST"}, "status": {"202"}}, 2+statuses[202])
					e.waitForLogs(url.Values{"method": {"POST"}, "status": {"429"}}, statuses[429])
				})
			}
		}
	})
}

// A signed call that failed is processed anew when sent again (a mapping
// may have been fixed since), but sent again it is charged to the
// source's budget, not the sender's: a captured call that fails cannot
// lock the sender out either.
func TestInboundRetriesOfFailedSignedCallsCostTheirSource(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		for _, l := range replayLimiters {
			t.Run(l.name, func(t *testing.T) {
				e := newEnv(t, d, l.opt(t))
				// The order total goes to the email field: a call with a total is refused.
				cfg := orderConfig(map[string]any{"secret": inboundSecret})
				cfg["match_fields"] = []string{}
				rules := cfg["mapping"].([]map[string]any)
				rules[1]["field"], rules[2]["field"] = "email", "total"
				h := e.configureInbound("orders", cfg)
				body := `{"order":{"id":"Q-1","total":7}}`
				captured := signedBy("sha256", "", body)
				e.call("POST", h.path, "", body, captured...).want(422)

				statuses := resend(t, e, h.path, body, captured, func(r *resp) {
					t.Helper()
					if r.status != 422 || r.errorCode() != "mapping_failed" || r.header.Get("Idempotent-Replayed") != "" {
						t.Fatalf("the failed call sent again answered %d %s", r.status, r.body)
					}
				})
				if statuses[422] < models.InboundRateLimit || statuses[429] != 3 || (l.frozen && statuses[422] != models.InboundRateLimit) {
					t.Errorf("the failed call sent again answered %v, want %d (more as the budget refills) 422, then 429", statuses, models.InboundRateLimit)
				}

				e.call("POST", h.path, "", `{"order":{"id":"Q-2"}}`, signedBy("sha256", "", `{"order":{"id":"Q-2"}}`)...).want(202)
				// Each call processed is kept, as the calls refused by a budget are.
				if n, want := len(e.inboundEvents(h.moduleID)), 2+statuses[422]+statuses[429]; n != want {
					t.Errorf("%d inbound events, want %d", n, want)
				}
			})
		}
	})
}

// A repeat of a signed call sent while the first is still being applied
// may not be known as a repeat before its budget is charged: such a repeat
// is charged to the sender and kept as a duplicate. Either way the calls
// make one record and answer as the first.
func TestInboundConcurrentSignedRepeatsApplyOnce(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		cfg := orderConfig(map[string]any{"secret": inboundSecret})
		cfg["match_fields"] = []string{} // every applied call creates
		h := e.configureInbound("orders", cfg)
		body := `{"order":{"id":"C-1"}}`
		const n = 8
		answers := make(chan *resp, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers <- e.call("POST", h.path, "", body, signedBy("sha256", "", body)...)
			}()
		}
		wg.Wait()
		close(answers)
		bodies, replayed := map[string]int{}, 0
		for r := range answers {
			if r.status != 202 {
				t.Fatalf("concurrent repeat: %d %s", r.status, r.body)
			}
			bodies[string(r.body)]++
			if r.header.Get("Idempotent-Replayed") == "true" {
				replayed++
			}
		}
		if len(bodies) != 1 || replayed != n-1 {
			t.Errorf("%d concurrent repeats answered %v, %d of them replayed; want one answer, %d replayed", n, bodies, replayed, n-1)
		}
		var applied []string
		kept := e.inboundEvents(h.moduleID)
		for _, ev := range kept {
			if ev.DuplicateOf == nil {
				applied = append(applied, ev.ID)
			}
		}
		for _, ev := range kept {
			if ev.DuplicateOf != nil && (len(applied) != 1 || *ev.DuplicateOf != applied[0]) {
				t.Errorf("event %s is a duplicate of %s, want of the one applied call %v", ev.ID, *ev.DuplicateOf, applied)
			}
		}
		if len(applied) != 1 {
			t.Errorf("%d calls applied, want 1", len(applied))
		}
		if total := e.call("GET", "/api/modules/"+h.moduleID+"/records", e.admin, nil).want(200).json()["total"]; total != float64(1) {
			t.Errorf("%v records, want 1", total)
		}
	})
}

// TestInboundMatchOfDeepStoredRow: a row stored before nesting was
// bounded, deeper than SQLite's JSON functions read, does not make a call
// with match_fields fail. On SQLite it matches nothing and the call
// creates a record; PostgreSQL finds it, and refuses to update it while
// it holds a value beyond the bound, naming the field, as a REST PATCH is.
func TestInboundMatchOfDeepStoredRow(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		mod := e.createModule("orders", map[string]any{"name": "order_id", "type": "string"}, map[string]any{"name": "meta", "type": "json"})
		got := e.call("PUT", "/api/admin/modules/"+mod+"/inbound-webhook", e.admin, map[string]any{
			"mapping": []map[string]any{{"source": "$.payload.id", "field": "order_id"}}, "match_fields": []string{"order_id"},
		}).want(201).json()
		u, err := url.Parse(got["url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		rec := e.call("POST", u.Path, "", `{"id":"A-1"}`).want(202).json()["recordId"].(string)
		storeDeepFields(t, db, rec, `{"order_id":"A-1"}`)

		r := e.call("POST", u.Path, "", `{"id":"A-1"}`)
		switch d {
		case models.SQLite:
			if got := r.want(202).json()["action"]; got != "created" {
				t.Errorf("action %v, want created", got)
			}
		default:
			if r.want(422).errorCode() != "mapping_failed" || !strings.Contains(string(r.body), `"field":"fields.meta"`) {
				t.Errorf("got %.300s, want mapping_failed naming fields.meta", r.body)
			}
		}
	})
}

// TestInboundRefusesTooDeepValues: a mapped value nested deeper than
// models.MaxJSONDepth is refused as a REST write is, 422 mapping_failed
// naming the field and its rule, on both databases alike.
func TestInboundRefusesTooDeepValues(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("events", map[string]any{"name": "meta", "type": "json"})
		got := e.call("PUT", "/api/admin/modules/"+mod+"/inbound-webhook", e.admin, map[string]any{"mapping": []map[string]any{
			{"source": "$.payload.meta", "field": "meta"},
			{"source": "$.payload.extra", "field": "custom_data.extra"},
		}}).want(201).json()
		u, err := url.Parse(got["url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			body, field string
			rule        int
		}{
			{`{"meta":` + nested(1001) + `}`, "fields.meta", 0},
			{`{"meta":1,"extra":` + nested(models.MaxJSONDepth+1) + `}`, "custom_data.extra", 1},
		} {
			r := e.call("POST", u.Path, "", c.body).want(422)
			var answer struct {
				Error   string              `json:"error"`
				Details []models.FieldError `json:"details"`
			}
			r.decode(&answer)
			if answer.Error != "mapping_failed" || len(answer.Details) != 1 || answer.Details[0].Field != c.field ||
				answer.Details[0].Rule == nil || *answer.Details[0].Rule != c.rule || !strings.Contains(answer.Details[0].Message, strconv.Itoa(models.MaxJSONDepth)) {
				t.Errorf("got %s, want mapping_failed naming %s, rule %d and the bound", r.body, c.field, c.rule)
			}
		}
		e.call("POST", u.Path, "", `{"meta":`+nested(models.MaxJSONDepth)+`}`).want(202)
	})
}
