package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// createEndpoint creates a webhook endpoint and returns the answer.
func (e *env) createEndpoint(body map[string]any) map[string]any {
	e.t.Helper()
	return e.call("POST", "/api/admin/webhook-endpoints", e.admin, body).want(201).json()
}

func TestWebhookEndpointCreate(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		mod := e.createModule("orders")

		generated := e.createEndpoint(map[string]any{
			"url": "https://hooks.example.com/a", "events": []string{"record_updated", "record_created", "record_updated"},
		})
		id := generated["id"].(string)
		secret, _ := generated["secret"].(string)
		key, keyErr := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if !strings.HasPrefix(id, "whe_") || !strings.HasPrefix(secret, "whsec_") || keyErr != nil || len(key) != 32 {
			t.Errorf("id %q, secret %q: want whe_… and whsec_ with the standard base64 of 32 bytes (%v)", id, secret, keyErr)
		}
		want := map[string]any{
			"id": id, "url": "https://hooks.example.com/a", "kind": "http", "description": "",
			"events": []any{"record_created", "record_updated"}, "module_ids": []any{}, "modules": []any{}, "filter": map[string]any{}, "ordering": "none",
			"retry_max": float64(5), "enabled": true, "previous_secret_expires_at": nil, "rate_limit": nil, "max_in_flight": nil,
			"health": map[string]any{
				"state": "healthy", "consecutive_failures": float64(0), "last_success_at": nil, "last_failure_at": nil,
				"disabled_at": nil, "disabled_reason": nil,
			},
			"headers": map[string]any{}, "auth": nil, "tls": nil,
		}
		if diff := cmp.Diff(want, withoutKeys(generated, "secret", "created_at", "updated_at")); diff != "" {
			t.Errorf("create answer (-want +got):\n%s", diff)
		}

		given := "whsec_" + base64.StdEncoding.EncodeToString([]byte("an admin's own 24+ random bytes"))
		mine := e.createEndpoint(map[string]any{
			"url": "http://receiver.example.org/hook", "description": "CRM", "events": []string{"status_change"},
			"module_ids": []string{mod}, "retry_max": 20, "enabled": false, "secret": given,
		})
		mineID := mine["id"].(string)
		if mine["secret"] != given || mine["retry_max"] != float64(20) || mine["enabled"] != false ||
			!cmp.Equal(mine["module_ids"], []any{mod}) ||
			!cmp.Equal(mine["modules"], []any{map[string]any{"id": mod, "slug": "orders", "name": "ORDERS"}}) {
			t.Errorf("create with every member: got %v", mine)
		}

		got := e.call("GET", "/api/admin/webhook-endpoints/"+mineID, e.admin, nil).want(200).json()
		if _, ok := got["secret"]; ok {
			t.Errorf("GET shows the secret: %v", got)
		}
		if diff := cmp.Diff(withoutKeys(mine, "secret"), got); diff != "" {
			t.Errorf("GET differs from the create answer (-create +get):\n%s", diff)
		}
		sec := e.call("GET", "/api/admin/webhook-endpoints/"+mineID+"/secret", e.admin, nil).want(200).json()
		if diff := cmp.Diff(map[string]any{"secret": given}, sec); diff != "" {
			t.Errorf("GET …/secret (-want +got):\n%s", diff)
		}
		sec = e.call("GET", "/api/admin/webhook-endpoints/"+id+"/secret", e.admin, nil).want(200).json()
		if sec["secret"] != secret {
			t.Errorf("GET …/secret of the generated one: %v, want %q", sec, secret)
		}

		// The secrets are stored sealed: neither appears in the table.
		rows := db.Rows(t, "SELECT id, secret, previous_secret FROM webhook_endpoints ORDER BY id")
		if len(rows) != 2 {
			t.Fatalf("%d endpoint rows, want 2", len(rows))
		}
		for _, row := range rows {
			for _, plain := range []string{secret, given, strings.TrimPrefix(secret, "whsec_")} {
				if row["secret"] == "" || strings.Contains(row["secret"], plain) {
					t.Errorf("endpoint %s: stored secret %q holds the plaintext", row["id"], row["secret"])
				}
			}
			if row["previous_secret"] != "NULL" {
				t.Errorf("endpoint %s: previous_secret %q before any rotation", row["id"], row["previous_secret"])
			}
		}

		// Lists never carry secrets; newest first.
		var page struct {
			Data  []map[string]any `json:"data"`
			Total int              `json:"total"`
			Page  int              `json:"page"`
			Limit int              `json:"limit"`
		}
		e.call("GET", "/api/admin/webhook-endpoints", e.admin, nil).want(200).decode(&page)
		if page.Total != 2 || page.Page != 1 || page.Limit != 20 || len(page.Data) != 2 {
			t.Fatalf("list: %+v, want both endpoints on page 1 of 20", page)
		}
		if diff := cmp.Diff([]map[string]any{withoutKeys(mine, "secret"), withoutKeys(generated, "secret")}, page.Data); diff != "" {
			t.Errorf("list (-want +got):\n%s", diff)
		}
		e.call("GET", "/api/admin/webhook-endpoints?limit=1&page=2", e.admin, nil).want(200).decode(&page)
		if page.Total != 2 || len(page.Data) != 1 || page.Data[0]["id"] != id {
			t.Errorf("page 2 of 1: %+v, want the older endpoint", page)
		}
		e.call("GET", "/api/admin/webhook-endpoints?limit=101", e.admin, nil).want(400)
	})
}

func withoutKeys(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = withoutKey(m, k)
	}
	return m
}

func TestWebhookEndpointValidation(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders")
		id := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		path := "/api/admin/webhook-endpoints/" + id
		good := func(change map[string]any) map[string]any {
			body := map[string]any{"url": "https://hooks.example.com/b", "events": []string{"record_deleted"}, "module_ids": []string{mod}}
			for k, v := range change {
				if v == nil {
					delete(body, k)
				} else {
					body[k] = v
				}
			}
			return body
		}
		for _, tt := range []struct {
			name   string
			body   map[string]any
			fields []string
		}{
			{"no events", good(map[string]any{"events": []string{}}), []string{"events"}},
			{"unknown event type", good(map[string]any{"events": []string{"record_created", "record_touched"}}), []string{"events"}},
			{"retry_max 0", good(map[string]any{"retry_max": 0}), []string{"retry_max"}},
			{"retry_max 101", good(map[string]any{"retry_max": 101}), []string{"retry_max"}},
			{"retry_max negative", good(map[string]any{"retry_max": -1}), []string{"retry_max"}},
			{"unknown module", good(map[string]any{"module_ids": []string{mod, "mod_01jzzzzzzzzzzzzzzzzzzzzzzz"}}), []string{"module_ids"}},
			{"description too long", good(map[string]any{"description": strings.Repeat("x", 501)}), []string{"description"}},
			{"retry_max not an integer", good(map[string]any{"retry_max": 2.5}), []string{"retry_max"}},
			{"several at once", good(map[string]any{"events": []string{}, "retry_max": 0}), []string{"events", "retry_max"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e := e.on(t)
				wantDetails(t, e.call("POST", "/api/admin/webhook-endpoints", e.admin, tt.body), tt.fields...)
				wantDetails(t, e.call("PATCH", path, e.admin, tt.body), tt.fields...)
			})
		}
		t.Run("missing events or url", func(t *testing.T) {
			e := e.on(t)
			wantDetails(t, e.call("POST", "/api/admin/webhook-endpoints", e.admin, good(map[string]any{"events": nil})), "events")
			wantDetails(t, e.call("POST", "/api/admin/webhook-endpoints", e.admin, good(map[string]any{"url": nil})), "url")
		})
		t.Run("secret", func(t *testing.T) {
			e := e.on(t)
			key := bytes.Repeat([]byte{0xfb}, 32)
			for _, bad := range []string{
				"short",
				"my-own-signing-secret-0123",
				"whsec_" + base64.RawURLEncoding.EncodeToString(key), // the form generated before
				"whsec_" + base64.RawStdEncoding.EncodeToString(key), // unpadded
				base64.StdEncoding.EncodeToString(key),               // no prefix
				"whsec_" + base64.StdEncoding.EncodeToString(key[:23]),
				"whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat(key, 3)[:65]),
			} {
				r := e.call("POST", "/api/admin/webhook-endpoints", e.admin, good(map[string]any{"secret": bad}))
				wantDetails(t, r, "secret")
				if !strings.Contains(string(r.body), "openssl rand -base64 32") {
					t.Errorf("secret %q refused with %s, want a message saying how to make one", bad, r.body)
				}
			}
			wantDetails(t, e.call("PATCH", path, e.admin, map[string]any{"secret": "whsec_" + base64.StdEncoding.EncodeToString(key)}), "secret")
		})
		t.Run("blocked destination", func(t *testing.T) {
			e := e.on(t)
			blocked := good(map[string]any{"url": "https://" + blockedHost + "/x"})
			for _, r := range []*resp{
				e.call("POST", "/api/admin/webhook-endpoints", e.admin, blocked),
				e.call("PATCH", path, e.admin, blocked),
			} {
				m := wantErrorBody(t, r.want(422), "invalid_url")
				if _, ok := m["details"]; ok {
					t.Errorf("invalid_url carries details: %v", m)
				}
			}
		})
		t.Run("bad bodies", func(t *testing.T) {
			e := e.on(t)
			e.call("POST", "/api/admin/webhook-endpoints", e.admin, good(map[string]any{"colour": "red"})).want(400)
			e.call("POST", "/api/admin/webhook-endpoints", e.admin, `{"url":`).want(400)
			e.call("POST", "/api/admin/webhook-endpoints", e.admin, "url=x", "Content-Type", "text/plain").want(415)
			e.call("PATCH", "/api/admin/webhook-endpoints/whe_missing", e.admin, `[]`).want(400)
		})
		// Nothing above changed the endpoint.
		got := e.call("GET", path, e.admin, nil).want(200).json()
		if got["url"] != "https://hooks.example.com/a" || !cmp.Equal(got["events"], []any{"record_created"}) || !cmp.Equal(got["module_ids"], []any{}) {
			t.Errorf("after refused changes: %v", got)
		}
		var page struct {
			Total int `json:"total"`
		}
		e.call("GET", "/api/admin/webhook-endpoints", e.admin, nil).want(200).decode(&page)
		if page.Total != 1 {
			t.Errorf("%d endpoints after refused creates, want 1", page.Total)
		}
	})
}

// TestWebhookEndpointWithoutURLCheck: a server built without the egress
// check refuses every destination rather than allowing them all.
func TestWebhookEndpointWithoutURLCheck(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d, withCheckURL(nil))
		r := e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})
		wantErrorBody(t, r.want(422), "invalid_url")
	})
}

func TestWebhookEndpointUpdateAndDelete(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		var refuseAll atomic.Bool
		e := newEnv(t, d, withCheckURL(func(ctx context.Context, rawURL string) error {
			if refuseAll.Load() {
				return models.Errorf(models.KindInvalidURL, "refused")
			}
			return checkURLOffline(ctx, rawURL)
		}))
		mod := e.createModule("orders")
		created := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})
		id := created["id"].(string)
		path := "/api/admin/webhook-endpoints/" + id

		for _, tt := range []struct {
			name  string
			patch map[string]any
			want  map[string]any
		}{
			{"events", map[string]any{"events": []string{"status_change", "record_deleted"}}, map[string]any{"events": []any{"record_deleted", "status_change"}}},
			{"enabled", map[string]any{"enabled": false}, map[string]any{"enabled": false}},
			{"module_ids", map[string]any{"module_ids": []string{mod}}, map[string]any{"module_ids": []any{mod},
				"modules": []any{map[string]any{"id": mod, "slug": "orders", "name": "ORDERS"}}}},
			{"url and description", map[string]any{"url": "https://other.example.com/b", "description": "new"}, map[string]any{"url": "https://other.example.com/b", "description": "new"}},
			{"retry_max", map[string]any{"retry_max": 1}, map[string]any{"retry_max": float64(1)}},
			{"retry_max 100", map[string]any{"retry_max": 100}, map[string]any{"retry_max": float64(100)}},
			{"module_ids back to all", map[string]any{"module_ids": []string{}}, map[string]any{"module_ids": []any{}, "modules": []any{}}},
			{"nothing", map[string]any{}, map[string]any{}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e := e.on(t)
				before := e.call("GET", path, e.admin, nil).want(200).json()
				got := e.call("PATCH", path, e.admin, tt.patch).want(200).json()
				// Health follows enabled; TestWebhookEndpointHealth checks it.
				want := withoutKeys(before, "updated_at", "health")
				for k, v := range tt.want {
					want[k] = v
				}
				if diff := cmp.Diff(want, withoutKeys(got, "updated_at", "health")); diff != "" {
					t.Errorf("PATCH answer (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(got, e.call("GET", path, e.admin, nil).want(200).json()); diff != "" {
					t.Errorf("GET after PATCH differs (-patch +get):\n%s", diff)
				}
			})
		}

		// Once the destination is refused, the URL can no longer be set to
		// it, but the endpoint can still be switched off.
		refuseAll.Store(true)
		wantErrorBody(t, e.call("PATCH", path, e.admin, map[string]any{"url": "https://other.example.com/b"}).want(422), "invalid_url")
		e.call("PATCH", path, e.admin, map[string]any{"enabled": false, "description": "paused"}).want(200)
		refuseAll.Store(false)

		e.call("PATCH", "/api/admin/webhook-endpoints/whe_01jzzzzzzzzzzzzzzzzzzzzzzz", e.admin, map[string]any{"enabled": true}).want(404)
		got := e.call("DELETE", path, e.admin, nil).want(200).json()
		if diff := cmp.Diff(map[string]any{"id": id, "deleted": true}, got); diff != "" {
			t.Errorf("DELETE (-want +got):\n%s", diff)
		}
		for _, op := range []struct{ method, path string }{
			{"GET", path}, {"PATCH", path}, {"DELETE", path}, {"GET", path + "/secret"}, {"POST", path + "/rotate-secret"},
		} {
			var body any
			if op.method == "PATCH" {
				body = map[string]any{"enabled": true}
			}
			wantErrorBody(t, e.call(op.method, op.path, e.admin, body).want(404), "not_found")
		}
	})
}

func TestWebhookSecretRotation(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		created := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})
		id, first := created["id"].(string), created["secret"].(string)
		path := "/api/admin/webhook-endpoints/" + id

		before := time.Now()
		rotated := e.call("POST", path+"/rotate-secret", e.admin, map[string]any{"grace_seconds": 60}).want(200).json()
		second, _ := rotated["secret"].(string)
		if !strings.HasPrefix(second, "whsec_") || second == first {
			t.Fatalf("rotated secret %q, want a new whsec_…", second)
		}
		expires, err := time.Parse(time.RFC3339Nano, fmt.Sprint(rotated["previous_secret_expires_at"]))
		if err != nil || expires.Before(before.Add(59*time.Second)) || expires.After(time.Now().Add(61*time.Second)) {
			t.Errorf("previous_secret_expires_at %v, want about a minute from now", rotated["previous_secret_expires_at"])
		}
		if diff := cmp.Diff(withoutKeys(rotated, "secret"), e.call("GET", path, e.admin, nil).want(200).json()); diff != "" {
			t.Errorf("GET after rotation (-rotate +get):\n%s", diff)
		}
		sec := e.call("GET", path+"/secret", e.admin, nil).want(200).json()
		want := map[string]any{"secret": second, "previous_secret": first, "previous_secret_expires_at": rotated["previous_secret_expires_at"]}
		if diff := cmp.Diff(want, sec); diff != "" {
			t.Errorf("secrets in the grace period (-want +got):\n%s", diff)
		}

		// Without grace the previous secret stops at once, and the earlier
		// grace period ends with it.
		rotated = e.call("POST", path+"/rotate-secret", e.admin, nil).want(200).json()
		third := rotated["secret"].(string)
		if third == second || third == first || rotated["previous_secret_expires_at"] != nil {
			t.Errorf("rotation without grace: %v", rotated)
		}
		if diff := cmp.Diff(map[string]any{"secret": third}, e.call("GET", path+"/secret", e.admin, nil).want(200).json()); diff != "" {
			t.Errorf("secrets after a rotation without grace (-want +got):\n%s", diff)
		}
		e.call("POST", path+"/rotate-secret", e.admin, map[string]any{"grace_seconds": 0}).want(200)

		// A grace period runs out by itself.
		rotated = e.call("POST", path+"/rotate-secret", e.admin, map[string]any{"grace_seconds": 1}).want(200).json()
		if len(e.call("GET", path+"/secret", e.admin, nil).want(200).json()) != 3 {
			t.Error("no previous secret during a one-second grace")
		}
		storetest.Eventually(t, 3*time.Second, "the one-second grace ends", func() bool {
			return len(e.call("GET", path+"/secret", e.admin, nil).want(200).json()) == 1
		})
		if got := e.call("GET", path, e.admin, nil).want(200).json()["previous_secret_expires_at"]; got != nil {
			t.Errorf("previous_secret_expires_at %v after the grace, want null", got)
		}
		if got := e.call("GET", path+"/secret", e.admin, nil).want(200).json()["secret"]; got != rotated["secret"] {
			t.Errorf("secret %v, want the last rotation's", got)
		}

		for _, body := range []any{map[string]any{"grace_seconds": -1}, map[string]any{"grace_seconds": 604801}, map[string]any{"grace_seconds": 1.5}} {
			wantDetails(t, e.call("POST", path+"/rotate-secret", e.admin, body), "grace_seconds")
		}
		e.call("POST", path+"/rotate-secret", e.admin, map[string]any{"grace": 5}).want(400)
		e.call("POST", "/api/admin/webhook-endpoints/whe_01jzzzzzzzzzzzzzzzzzzzzzzz/rotate-secret", e.admin, nil).want(404)
	})
}

// fakeReplayer records the deliveries it is asked to replay.
type fakeReplayer struct {
	mu  sync.Mutex
	got []models.WebhookDelivery
	err error
}

func (f *fakeReplayer) Replay(_ context.Context, d *models.WebhookDelivery) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", "", f.err
	}
	f.got = append(f.got, *d)
	n := len(f.got)
	return fmt.Sprintf("webhook-delivery/%s/%s/replay-%d", d.EventID, d.EndpointID, n), fmt.Sprintf("run-%d", n), nil
}

func (f *fakeReplayer) replayed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, d := range f.got {
		ids = append(ids, d.ID)
	}
	return ids
}

func TestWebhookDeliveries(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		replayer := &fakeReplayer{}
		e := newEnv(t, d, withReplayer(replayer))
		ep1 := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created", "status_change"}})["id"].(string)
		ep2 := e.createEndpoint(map[string]any{"url": "https://other.example.com/b", "events": []string{"record_created", "status_change"}})["id"].(string)
		rows := deliveryRows(t, e, ep1, ep2)
		at := func(i int) string { return rows[i].StartedAt.UTC().Format(time.RFC3339Nano) }
		id := func(i ...int) []string {
			out := []string{}
			for _, n := range i {
				out = append(out, rows[n].ID)
			}
			return out
		}

		for _, tt := range []struct {
			query string
			want  []string
			total int
		}{
			{"", id(3, 2, 1, 0), 4},
			{"?endpoint_id=" + ep1, id(1, 0), 2},
			{"?event_id=evt_a", id(2, 0), 2},
			{"?event_type=status_change", id(3, 1), 2},
			{"?succeeded=true", id(3, 0), 2},
			{"?succeeded=false", id(2, 1), 2},
			{"?endpoint_id=" + ep2 + "&succeeded=false&event_type=record_created", id(2), 1},
			{"?limit=1&page=2", id(2), 4},
			{"?endpoint_id=whe_unknown", id(), 0},
			{"?event_type=record_touched", id(), 0},
			{"?record_id=rec_1", id(2, 0), 2},
			{"?record_id=rec_2&endpoint_id=" + ep1, id(1), 1},
			{"?record_id=rec_unknown", id(), 0},
			// since is inclusive, until exclusive, both on started_at.
			{"?since=" + at(1), id(3, 2, 1), 3},
			{"?until=" + at(2), id(1, 0), 2},
			{"?since=" + at(1) + "&until=" + at(3), id(2, 1), 2},
			{"?since=" + url.QueryEscape(rows[1].StartedAt.In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano)), id(3, 2, 1), 3},
			{"?until=" + at(0), id(), 0},
			{"?error=timeout", id(1), 1},
			{"?error=http_status&endpoint_id=" + ep2, id(2), 1},
			{"?error=worker_lost", id(), 0},
			{"?error=http_status&since=" + at(3), id(), 0},
		} {
			t.Run("list"+tt.query, func(t *testing.T) {
				var page deliveryPage
				e.on(t).call("GET", "/api/admin/webhook-deliveries"+tt.query, e.admin, nil).want(200).decode(&page)
				if diff := cmp.Diff(tt.want, page.ids()); diff != "" || page.Total != tt.total {
					t.Errorf("total %d, want %d; ids (-want +got):\n%s", page.Total, tt.total, diff)
				}
				for _, row := range page.Data {
					for _, k := range []string{"request_headers", "request_body", "response_headers", "response_body"} {
						if _, ok := row[k]; ok {
							t.Errorf("listed attempt %s carries %s", row["id"], k)
						}
					}
				}
			})
		}
		for _, q := range []string{
			"?succeeded=maybe", "?limit=0", "?page=0",
			"?since=yesterday", "?until=2030-01-02", "?since=" + at(2) + "&until=" + at(1), "?since=" + at(1) + "&until=" + at(1),
			"?error=teapot", "?error=TIMEOUT", "?record_id=rec%00", "?record_id=%ff",
		} {
			wantErrorBody(t, e.call("GET", "/api/admin/webhook-deliveries"+q, e.admin, nil).want(400), "invalid_request")
		}

		var all deliveryPage
		e.call("GET", "/api/admin/webhook-deliveries", e.admin, nil).want(200).decode(&all)
		timeout := rows[1]
		wantListed := map[string]any{
			"id": timeout.ID, "event_id": "evt_b", "event_type": "status_change", "record_id": "rec_2", "endpoint_id": ep1,
			"workflow_id": "webhook-delivery/evt_b/" + ep1, "run_id": "run-1", "attempt": float64(2), "replay_of": nil,
			"request_url": "https://hooks.example.com/a", "response_status": nil,
			"error": "timeout", "error_message": "no response within 30s", "remote_ip": "93.184.215.14",
			"duration_ms": float64(30000), "dns_ms": float64(1), "connect_ms": float64(9), "tls_ms": float64(19), "first_byte_ms": nil,
			"succeeded": false,
		}
		if diff := cmp.Diff(wantListed, withoutKeys(all.Data[2], "started_at", "finished_at")); diff != "" {
			t.Errorf("listed timeout attempt (-want +got):\n%s", diff)
		}
		if !answeredAt(t, all.Data[2]["started_at"], timeout.StartedAt) || !answeredAt(t, all.Data[2]["finished_at"], timeout.FinishedAt) {
			t.Errorf("times %v, %v; want %v, %v", all.Data[2]["started_at"], all.Data[2]["finished_at"], timeout.StartedAt, timeout.FinishedAt)
		}

		// One attempt in full: the listed members and the exchange itself,
		// headers present even when there were none.
		full := e.call("GET", "/api/admin/webhook-deliveries/"+timeout.ID, e.admin, nil).want(200).json()
		wantFull := withoutKeys(all.Data[2])
		wantFull["request_headers"] = jsonValue(t, timeout.RequestHeaders)
		wantFull["request_body"] = timeout.RequestBody
		wantFull["response_headers"] = map[string]any{}
		wantFull["response_body"] = ""
		if diff := cmp.Diff(wantFull, full); diff != "" {
			t.Errorf("GET the timeout attempt (-want +got):\n%s", diff)
		}
		ok := e.call("GET", "/api/admin/webhook-deliveries/"+rows[0].ID, e.admin, nil).want(200).json()
		if ok["request_body"] != rows[0].RequestBody || ok["response_body"] != "ok" || ok["error"] != nil || ok["error_message"] != nil ||
			ok["response_status"] != float64(200) || !cmp.Equal(ok["response_headers"], map[string]any{"Content-Type": []any{"text/plain"}}) {
			t.Errorf("GET the successful attempt: %v", ok)
		}
		wantErrorBody(t, e.call("GET", "/api/admin/webhook-deliveries/whd_01jzzzzzzzzzzzzzzzzzzzzzzz", e.admin, nil).want(404), "not_found")

		// Replay hands the stored attempt to the replayer.
		got := e.call("POST", "/api/admin/webhook-deliveries/"+rows[1].ID+"/replay", e.admin, nil).want(202).json()
		want := map[string]any{"workflow_id": "webhook-delivery/evt_b/" + ep1 + "/replay-1", "run_id": "run-1"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("replay answer (-want +got):\n%s", diff)
		}
		replayer.mu.Lock()
		handed := replayer.got[0]
		replayer.mu.Unlock()
		if handed.ID != rows[1].ID || handed.TenantID != e.tenantID || handed.EventID != "evt_b" || handed.EndpointID != ep1 || handed.RequestBody != rows[1].RequestBody {
			t.Errorf("the replayer got %+v, want attempt %s", handed, rows[1].ID)
		}
		wantErrorBody(t, e.call("POST", "/api/admin/webhook-deliveries/whd_01jzzzzzzzzzzzzzzzzzzzzzzz/replay", e.admin, nil).want(404), "not_found")
		if ids := replayer.replayed(); len(ids) != 1 {
			t.Errorf("replayer called for %v, want the one replay", ids)
		}
		replayer.mu.Lock()
		replayer.err = models.Errorf(models.KindConflict, "another replay of this delivery was started at the same moment; try again")
		replayer.mu.Unlock()
		wantErrorBody(t, e.call("POST", "/api/admin/webhook-deliveries/"+rows[0].ID+"/replay", e.admin, nil).want(409), "conflict")
		replayer.mu.Lock()
		replayer.err = fmt.Errorf("dial temporal: connection refused")
		replayer.mu.Unlock()
		r := e.call("POST", "/api/admin/webhook-deliveries/"+rows[0].ID+"/replay", e.admin, nil).want(500)
		if m := wantErrorBody(t, r, "internal"); strings.Contains(fmt.Sprint(m["message"]), "temporal") {
			t.Errorf("the internal error leaks its cause: %v", m)
		}
	})
}

// TestWebhookDeliveryInFlight: an attempt whose request is being sent (or
// whose worker died sending it) is listed and read as in flight: error
// "in_flight", not succeeded, finished_at null; once a later attempt found
// it, as worker_lost with a finish time.
func TestWebhookDeliveryInFlight(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		started := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
		row := func(attempt int, code string) *models.WebhookDelivery {
			r := &models.WebhookDelivery{
				TenantID: e.tenantID, EventID: "evt_a", EventType: models.EventRecordCreated, EndpointID: ep,
				WorkflowID: "webhook-delivery/evt_a/" + ep, RunID: "run-1", Attempt: attempt,
				RequestURL: "https://hooks.example.com/a", RequestHeaders: models.Headers{"X-Webhook-Id": {"evt_a"}},
				RequestBody: `{"id":"evt_a"}`, ResponseHeaders: models.Headers{},
				Error: code, ErrorMessage: "message", StartedAt: started.Add(time.Duration(attempt) * time.Second),
			}
			r.FinishedAt = r.StartedAt
			if err := e.store.InsertAttempt(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			return r
		}
		lost, inFlight := row(1, models.DeliveryErrWorkerLost), row(2, models.DeliveryErrInFlight)

		var page deliveryPage
		e.call("GET", "/api/admin/webhook-deliveries?succeeded=false", e.admin, nil).want(200).decode(&page)
		if diff := cmp.Diff([]string{inFlight.ID, lost.ID}, page.ids()); diff != "" {
			t.Fatalf("unsucceeded attempts (-want +got):\n%s", diff)
		}
		type state struct {
			Error, FinishedAt, ResponseStatus any
			Succeeded                         any
		}
		listed := page.Data[0]
		if diff := cmp.Diff(state{"in_flight", nil, nil, false}, state{listed["error"], listed["finished_at"], listed["response_status"], listed["succeeded"]}); diff != "" {
			t.Errorf("listed in-flight attempt (-want +got):\n%s", diff)
		}
		full := e.call("GET", "/api/admin/webhook-deliveries/"+inFlight.ID, e.admin, nil).want(200).json()
		if diff := cmp.Diff(state{"in_flight", nil, nil, false}, state{full["error"], full["finished_at"], full["response_status"], full["succeeded"]}); diff != "" {
			t.Errorf("in-flight attempt (-want +got):\n%s", diff)
		}
		if full["request_body"] != inFlight.RequestBody || !cmp.Equal(full["request_headers"], jsonValue(t, inFlight.RequestHeaders)) {
			t.Errorf("in-flight attempt's request %v %v, want what is being sent", full["request_headers"], full["request_body"])
		}
		got := e.call("GET", "/api/admin/webhook-deliveries/"+lost.ID, e.admin, nil).want(200).json()
		if got["error"] != "worker_lost" || got["succeeded"] != false || !answeredAt(t, got["finished_at"], lost.FinishedAt) {
			t.Errorf("worker_lost attempt: error %v, succeeded %v, finished_at %v; want worker_lost, false, %v",
				got["error"], got["succeeded"], got["finished_at"], lost.FinishedAt)
		}
	})
}

// answeredAt reports whether an answered date-time is the instant want.
func answeredAt(t *testing.T, answered any, want time.Time) bool {
	t.Helper()
	got, err := time.Parse(time.RFC3339Nano, fmt.Sprint(answered))
	return err == nil && got.Equal(want)
}

// jsonValue returns v as decoded from its JSON.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWebhookReplayWithoutReplayer(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		rows := deliveryRows(t, e, ep, ep)
		wantErrorBody(t, e.call("POST", "/api/admin/webhook-deliveries/"+rows[0].ID+"/replay", e.admin, nil).want(503), "unavailable")
		// A missing attempt is missing whether or not replays can run.
		e.call("POST", "/api/admin/webhook-deliveries/whd_01jzzzzzzzzzzzzzzzzzzzzzzz/replay", e.admin, nil).want(404)
	})
}

// TestWebhookTenantIsolation: another tenant's endpoints and deliveries
// answer 404 on every route, exactly like missing ones, and are never
// listed.
func TestWebhookTenantIsolation(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		replayer := &fakeReplayer{}
		mine := newEnv(t, d, withReplayer(replayer))
		theirs := newEnvOn(t, mine.store)
		theirEP := theirs.createEndpoint(map[string]any{"url": "https://hooks.example.com/theirs", "events": []string{"record_created"}})["id"].(string)
		theirRows := deliveryRows(t, theirs, theirEP, theirEP)
		myEP := mine.createEndpoint(map[string]any{"url": "https://hooks.example.com/mine", "events": []string{"record_created"}})["id"].(string)

		for _, op := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/admin/webhook-endpoints/%s", nil},
			{"PATCH", "/api/admin/webhook-endpoints/%s", map[string]any{"enabled": false}},
			{"DELETE", "/api/admin/webhook-endpoints/%s", nil},
			{"GET", "/api/admin/webhook-endpoints/%s/secret", nil},
			{"POST", "/api/admin/webhook-endpoints/%s/rotate-secret", map[string]any{"grace_seconds": 60}},
			{"GET", "/api/admin/webhook-deliveries/%s", nil},
			{"POST", "/api/admin/webhook-deliveries/%s/replay", nil},
		} {
			t.Run(op.method+" "+op.path, func(t *testing.T) {
				e := mine.on(t)
				theirID, missing := theirEP, "whe_01jzzzzzzzzzzzzzzzzzzzzzzz"
				if strings.Contains(op.path, "deliveries") {
					theirID, missing = theirRows[0].ID, "whd_01jzzzzzzzzzzzzzzzzzzzzzzz"
				}
				foreign := withoutKeys(wantErrorBody(t, e.call(op.method, fmt.Sprintf(op.path, theirID), e.admin, op.body).want(404), "not_found"), "request_id")
				absent := withoutKeys(wantErrorBody(t, e.call(op.method, fmt.Sprintf(op.path, missing), e.admin, op.body).want(404), "not_found"), "request_id")
				if diff := cmp.Diff(absent, foreign); diff != "" {
					t.Errorf("a foreign id answers unlike a missing one (-missing +foreign):\n%s", diff)
				}
			})
		}
		if ids := replayer.replayed(); len(ids) != 0 {
			t.Errorf("the replayer was handed %v", ids)
		}

		var eps deliveryPage
		mine.call("GET", "/api/admin/webhook-endpoints", mine.admin, nil).want(200).decode(&eps)
		if diff := cmp.Diff([]string{myEP}, eps.ids()); diff != "" || eps.Total != 1 {
			t.Errorf("my endpoints: total %d (-want +got):\n%s", eps.Total, diff)
		}
		for _, q := range []string{"", "?endpoint_id=" + theirEP, "?event_id=evt_a"} {
			var page deliveryPage
			mine.call("GET", "/api/admin/webhook-deliveries"+q, mine.admin, nil).want(200).decode(&page)
			if page.Total != 0 || len(page.Data) != 0 {
				t.Errorf("deliveries%s: %+v, want none of the other tenant's", q, page)
			}
		}

		// Theirs are untouched and theirs to see.
		got := theirs.call("GET", "/api/admin/webhook-endpoints/"+theirEP, theirs.admin, nil).want(200).json()
		if got["enabled"] != true || got["previous_secret_expires_at"] != nil {
			t.Errorf("their endpoint changed: %v", got)
		}
		var page deliveryPage
		theirs.call("GET", "/api/admin/webhook-deliveries", theirs.admin, nil).want(200).decode(&page)
		if page.Total != 4 {
			t.Errorf("their deliveries: total %d, want 4", page.Total)
		}
	})
}

// TestWebhookEventMatchesDocument checks the bodies the store writes for
// record changes against the WebhookEvent schema of api/openapi.yaml, so
// that what receivers are told stays what they get.
func TestWebhookEventMatchesDocument(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	schema := doc.Components.Schemas["WebhookEvent"].Value
	validate := func(body map[string]any) error {
		return schema.VisitJSON(body, openapi3.EnableJSONSchema2020(), openapi3.VisitAsRequest())
	}
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("tickets",
			map[string]any{"name": "title", "type": "string", "required": true},
			map[string]any{"name": "note", "type": "text"},
			map[string]any{"name": "state", "type": "status", "states": []string{"open", "closed"}, "initial": "open"},
			map[string]any{"name": "phase", "type": "status", "states": []string{"a", "b"}},
		)
		rec := e.createRecord(mod, map[string]any{"title": "t", "note": "n"})
		path := "/api/modules/" + mod + "/records/" + rec
		e.call("PATCH", path, e.admin, map[string]any{"fields": map[string]any{"title": "u", "note": nil, "state": "closed", "phase": "a"}}).want(200)
		e.call("PATCH", path, e.admin, map[string]any{"custom_data": map[string]any{"k": "v"}}).want(200)
		e.call("PATCH", path, e.admin, map[string]any{"custom_data": map[string]any{"k": "v"}}).want(200) // changes nothing
		e.call("DELETE", path, e.admin, nil).want(200)

		events, err := e.store.PendingEvents(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, ev := range events {
			types = append(types, ev.Type)
			var body map[string]any
			if err := json.Unmarshal([]byte(ev.Payload), &body); err != nil {
				t.Fatalf("event %s: %v", ev.ID, err)
			}
			if err := validate(body); err != nil {
				t.Errorf("%s event does not match WebhookEvent: %v\nbody: %s", ev.Type, err, ev.Payload)
			}
			if body["id"] != ev.ID || body["event"] != ev.Type || body["tenant_id"] != e.tenantID {
				t.Errorf("event %s (%s): body %s", ev.ID, ev.Type, ev.Payload)
			}
			// The schema is strict enough to notice a wrong shape.
			if ev.Type == models.EventStatusChange {
				delete(body, "status")
				if validate(body) == nil {
					t.Errorf("a status_change without status passes WebhookEvent")
				}
			}
			if ev.Type != models.EventStatusChange {
				if _, ok := body["status"]; ok {
					t.Errorf("%s carries status: %s", ev.Type, ev.Payload)
				}
				body["status"] = nil
				if validate(body) == nil {
					t.Errorf(`a %s with "status": null passes WebhookEvent`, ev.Type)
				}
				delete(body, "status")
			}
			if ev.Type == models.EventRecordCreated {
				body["changes"] = map[string]any{"fields": map[string]any{"title": map[string]any{"from": nil, "to": "t"}}}
				if validate(body) == nil {
					t.Errorf("a record_created with changes passes WebhookEvent")
				}
			}
		}
		slices.Sort(types)
		want := []string{"custom_data_updated", "record_created", "record_deleted", "record_updated", "status_change", "status_change"}
		if diff := cmp.Diff(want, types); diff != "" {
			t.Errorf("event types (-want +got):\n%s", diff)
		}
	})
}

// TestWebhookEndpointModulesNamed: every endpoint answer names the modules
// of module_ids (the console shows names), in their order; a module deleted
// since stays in module_ids and leaves modules.
func TestWebhookEndpointModulesNamed(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		a, b := e.createModule("alpha"), e.createModule("beta")
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}, "module_ids": []string{a, b}})
		path := "/api/admin/webhook-endpoints/" + ep["id"].(string)
		named := func(ids ...string) []any {
			out := []any{}
			for _, id := range ids {
				slug := map[string]string{a: "alpha", b: "beta"}[id]
				out = append(out, map[string]any{"id": id, "slug": slug, "name": strings.ToUpper(slug)})
			}
			return out
		}
		ids := ep["module_ids"].([]any)
		want := named(ids[0].(string), ids[1].(string))
		if diff := cmp.Diff(want, ep["modules"]); diff != "" {
			t.Errorf("create answer's modules (-want +got):\n%s", diff)
		}
		var page struct {
			Data []map[string]any `json:"data"`
		}
		e.call("GET", "/api/admin/webhook-endpoints", e.admin, nil).want(200).decode(&page)
		if len(page.Data) != 1 || !cmp.Equal(page.Data[0]["modules"], want) {
			t.Errorf("listed: %v, want modules %v", page.Data, want)
		}

		e.call("DELETE", "/api/admin/modules/"+b, e.admin, nil).want(200)
		got := e.call("GET", path, e.admin, nil).want(200).json()
		if diff := cmp.Diff(named(a), got["modules"]); diff != "" {
			t.Errorf("modules after deleting beta (-want +got):\n%s", diff)
		}
		if !cmp.Equal(got["module_ids"], ids) {
			t.Errorf("module_ids after deleting beta: %v, want %v", got["module_ids"], ids)
		}
	})
}

// TestWebhookEndpointLimit: a tenant's endpoints are bounded; one more
// answers 409 naming the setting, concurrent creations included, and
// another tenant is not counted; deleting one makes room.
func TestWebhookEndpointLimit(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{MaxEndpointsPerTenant: 5}))
		body := map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}}
		var (
			wg      sync.WaitGroup
			created atomic.Int64
		)
		for range 8 {
			wg.Go(func() {
				r := e.call("POST", "/api/admin/webhook-endpoints", e.admin, body)
				switch r.status {
				case http.StatusCreated:
					created.Add(1)
				case http.StatusConflict:
				default:
					t.Errorf("create: %d %s", r.status, r.body)
				}
			})
		}
		wg.Wait()
		if n := created.Load(); n != 5 {
			t.Errorf("%d endpoints created of 8 concurrent creations, want 5", n)
		}
		var refused struct{ Error, Message string }
		e.call("POST", "/api/admin/webhook-endpoints", e.admin, body).want(http.StatusConflict).decode(&refused)
		if refused.Error != "conflict" || !strings.Contains(refused.Message, "RECORDHUB_MAX_ENDPOINTS_PER_TENANT") {
			t.Errorf("refusal %+v, want conflict naming RECORDHUB_MAX_ENDPOINTS_PER_TENANT", refused)
		}

		other := newEnvOn(t, e.store)
		other.call("POST", "/api/admin/webhook-endpoints", other.admin, body).want(http.StatusCreated)

		list := e.call("GET", "/api/admin/webhook-endpoints", e.admin, nil).want(http.StatusOK).json()
		first := list["data"].([]any)[0].(map[string]any)["id"].(string)
		e.call("DELETE", "/api/admin/webhook-endpoints/"+first, e.admin, nil).want(http.StatusOK)
		e.call("POST", "/api/admin/webhook-endpoints", e.admin, body).want(http.StatusCreated)
	})
}

// TestWebhookEndpointURLBound: a URL longer than models.MaxURLBytes is
// refused, 422 invalid_url whose message names url and the bound, on
// create and on update; one of exactly that length is taken.
func TestWebhookEndpointURLBound(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		const path = "/api/admin/webhook-endpoints"
		long := func(n int) string {
			const start = "https://hooks.example.com/"
			return start + strings.Repeat("a", n-len(start))
		}
		id := e.createEndpoint(map[string]any{"url": long(models.MaxURLBytes), "events": []string{"record_created"}})["id"].(string)
		for _, r := range []*resp{
			e.call("POST", path, e.admin, map[string]any{"url": long(1_000_000), "events": []string{"record_created"}}),
			e.call("POST", path, e.admin, map[string]any{"url": long(models.MaxURLBytes + 1), "events": []string{"record_created"}}),
			e.call("PATCH", path+"/"+id, e.admin, map[string]any{"url": long(1_000_000)}),
		} {
			r.want(http.StatusUnprocessableEntity)
			var body struct{ Error, Message string }
			r.decode(&body)
			bound := fmt.Sprint(models.MaxURLBytes)
			if body.Error != "invalid_url" || !strings.HasPrefix(body.Message, "url ") || !strings.Contains(body.Message, bound) {
				t.Errorf("got %.300s, want invalid_url naming url and %s", r.body, bound)
			}
		}
	})
}
