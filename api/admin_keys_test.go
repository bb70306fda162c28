package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

func TestKeyAuthenticationFailures(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		clock := storetest.NewClock()
		e := newEnvOn(t, storetest.OpenWithClock(t, d, clock.Now))
		_, expiring := e.createKey(map[string]any{"expires_at": clock.Now().Add(time.Hour)})
		revokedID, revoked := e.createKey(map[string]any{})
		e.call("GET", "/api/modules", expiring, nil).want(200)
		e.call("GET", "/api/modules", revoked, nil).want(200)
		e.call("DELETE", "/api/admin/keys/"+revokedID, e.admin, nil).want(200)
		clock.Advance(time.Hour + time.Second)

		tests := []struct {
			name          string
			authorization string
			code          string
		}{
			{"missing", "", "unauthorized"},
			{"other scheme", "Basic " + expiring, "unauthorized"},
			{"scheme only", "Bearer", "unauthorized"},
			{"empty token", "Bearer   ", "unauthorized"},
			{"malformed", "Bearer not a key at all", "unauthorized"},
			{"unknown", "Bearer " + models.NewAPIKeySecret(), "unauthorized"},
			{"revoked", "Bearer " + revoked, "unauthorized"},
			{"expired", "Bearer " + expiring, "key_expired"},
			{"expired, lower-case scheme", "bearer " + expiring, "key_expired"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := e.on(t)
				for _, p := range []string{"/api/modules", "/api/admin/keys"} {
					r := e.call("GET", p, "", nil, "Authorization", tt.authorization)
					wantUnauthorized(t, r, tt.code)
				}
			})
		}
	})
}

func TestKeyRevokeAndRotate(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		clock := storetest.NewClock()
		e := newEnvOn(t, storetest.OpenWithClock(t, d, clock.Now))

		t.Run("revoke", func(t *testing.T) {
			e := e.on(t)
			id, secret := e.createKey(map[string]any{})
			e.call("GET", "/api/modules", secret, nil).want(200)
			r := e.call("DELETE", "/api/admin/keys/"+id, e.admin, nil).want(200)
			if r.json()["revoked_at"] == nil {
				t.Errorf("revoke answered revoked_at null: %s", r.body)
			}
			wantUnauthorized(t, e.call("GET", "/api/modules", secret, nil), "unauthorized")
			// Revoking again is harmless; rotating a revoked key is not allowed.
			e.call("DELETE", "/api/admin/keys/"+id, e.admin, nil).want(200)
			wantErrorBody(t, e.call("POST", "/api/admin/keys/"+id+"/rotate", e.admin, nil).want(409), "conflict")
			wantUnauthorized(t, e.call("GET", "/api/modules", secret, nil), "unauthorized")
		})

		t.Run("rotate without grace", func(t *testing.T) {
			e := e.on(t)
			id, old := e.createKey(map[string]any{})
			e.call("GET", "/api/modules", old, nil).want(200)
			r := e.call("POST", "/api/admin/keys/"+id+"/rotate", e.admin, nil).want(200)
			var out struct {
				ID                string     `json:"id"`
				Key               string     `json:"key"`
				Prefix            string     `json:"prefix"`
				PreviousExpiresAt *time.Time `json:"previous_key_expires_at"`
			}
			r.decode(&out)
			if out.ID != id || out.Key == "" || out.Key == old || !strings.HasPrefix(out.Key, out.Prefix) {
				t.Errorf("rotate answered id %q, key %q, prefix %q; want id %q and a new key starting with its prefix", out.ID, out.Key, out.Prefix, id)
			}
			if out.PreviousExpiresAt != nil {
				t.Errorf("previous_key_expires_at %v without grace, want null", out.PreviousExpiresAt)
			}
			wantUnauthorized(t, e.call("GET", "/api/modules", old, nil), "unauthorized")
			e.call("GET", "/api/modules", out.Key, nil).want(200)
		})

		t.Run("rotate with grace", func(t *testing.T) {
			e := e.on(t)
			id, old := e.createKey(map[string]any{})
			e.call("GET", "/api/modules", old, nil).want(200)
			r := e.call("POST", "/api/admin/keys/"+id+"/rotate", e.admin, map[string]any{"grace_seconds": 30}).want(200)
			m := r.json()
			fresh, _ := m["key"].(string)
			if m["previous_key_expires_at"] == nil {
				t.Errorf("previous_key_expires_at null during a grace period: %s", r.body)
			}
			for _, k := range []string{old, fresh} {
				e.call("GET", "/api/modules", k, nil).want(200)
			}
			clock.Advance(29 * time.Second)
			for _, k := range []string{old, fresh} {
				e.call("GET", "/api/modules", k, nil).want(200)
			}
			clock.Advance(time.Second)
			wantUnauthorized(t, e.call("GET", "/api/modules", old, nil), "unauthorized")
			e.call("GET", "/api/modules", fresh, nil).want(200)
		})

		t.Run("bad grace", func(t *testing.T) {
			e := e.on(t)
			id, _ := e.createKey(map[string]any{})
			for _, body := range []any{map[string]any{"grace_seconds": -1}, map[string]any{"grace_seconds": models.MaxGraceSeconds + 1}} {
				wantErrorBody(t, e.call("POST", "/api/admin/keys/"+id+"/rotate", e.admin, body).want(422), "validation_failed")
			}
		})
	})
}

// TestRevocationAcrossReplicas runs two APIs on one database, each with its
// own store and key cache: a key B has cached must stop working on B within
// one second of its revocation or rotation through A.
func TestRevocationAcrossReplicas(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		storeA := db.Open(t, models.Options{})
		storeB := db.Open(t, models.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		go storeA.WatchChanges(ctx, log)
		go storeB.WatchChanges(ctx, log)
		a := newEnvOn(t, storeA)
		b := replicaOf(t, a, storeB)

		mod := a.createModule("things")
		revokedID, revoked := a.createKey(map[string]any{})
		rotatedID, rotated := a.createKey(map[string]any{})
		narrowedID, narrowed := a.createKey(map[string]any{"permissions": map[string]any{mod: []string{"read"}}})
		for _, k := range []string{revoked, rotated} {
			b.call("GET", "/api/modules", k, nil).want(200)
			b.call("GET", "/api/modules", k, nil).want(200)
		}
		b.call("GET", "/api/modules/"+mod+"/records", narrowed, nil).want(200)

		a.call("DELETE", "/api/admin/keys/"+revokedID, a.admin, nil).want(200)
		fresh := a.call("POST", "/api/admin/keys/"+rotatedID+"/rotate", a.admin, nil).want(200).json()["key"].(string)
		wantUnauthorized(t, a.call("GET", "/api/modules", revoked, nil), "unauthorized")
		wantUnauthorized(t, a.call("GET", "/api/modules", rotated, nil), "unauthorized")
		for name, k := range map[string]string{"revoked": revoked, "rotated-out": rotated} {
			storetest.Eventually(t, time.Second, "replica B refuses the "+name+" key", func() bool {
				return b.call("GET", "/api/modules", k, nil).status == http.StatusUnauthorized
			})
		}
		b.call("GET", "/api/modules", fresh, nil).want(200)

		// A narrowed key loses its permission on B as promptly.
		a.call("PATCH", "/api/admin/keys/"+narrowedID, a.admin, map[string]any{"permissions": map[string]any{}}).want(200)
		storetest.Eventually(t, time.Second, "replica B applies the narrowed permissions", func() bool {
			return b.call("GET", "/api/modules/"+mod+"/records", narrowed, nil).status == http.StatusForbidden
		})
	})
}

var routeParam = regexp.MustCompile(`[:*][A-Za-z0-9_]+`)

// TestAdminRoutesNeedAdminKey calls every route under /api/admin, as the
// server registers them, with a key that may do anything but administer.
func TestAdminRoutesNeedAdminKey(t *testing.T) {
	s, _ := bareServer(t)
	engine := s.Handler().(*gin.Engine)
	var routes []gin.RouteInfo
	for _, r := range engine.Routes() {
		if strings.HasPrefix(r.Path, "/api/admin/") {
			routes = append(routes, r)
		}
	}
	if len(routes) < 13 {
		t.Fatalf("found %d admin routes, want at least the 13 of modules, keys and access logs", len(routes))
	}
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("things")
		keyID, _ := e.createKey(map[string]any{})
		_, key := e.createKey(map[string]any{
			"permissions":           map[string]any{"*": []string{"read", "write", "delete"}},
			"rate_limit_per_minute": 1000,
		})
		for _, r := range routes {
			// The key is refused before any handler runs, so the ids need
			// not exist; real ones are used where they are easy to name.
			p := r.Path
			if strings.HasPrefix(p, "/api/admin/modules/") {
				p = strings.Replace(p, ":id", mod, 1)
			} else {
				p = strings.Replace(p, ":id", keyID, 1)
			}
			p = routeParam.ReplaceAllString(p, "x")
			t.Run(r.Method+" "+r.Path, func(t *testing.T) {
				e := e.on(t)
				var body any
				if r.Method == "POST" || r.Method == "PATCH" || r.Method == "PUT" {
					body = map[string]any{}
				}
				got := e.call(r.Method, p, key, body).want(403).json()
				delete(got, "message")
				delete(got, "request_id")
				if diff := cmp.Diff(map[string]any{"error": "forbidden", "required": "admin"}, got); diff != "" {
					t.Errorf("body (-want +got):\n%s", diff)
				}
			})
		}
	})
}

func TestKeyCRUD(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		mod := e.createModule("contacts")
		expires := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)

		created := e.call("POST", "/api/admin/keys", e.admin, map[string]any{
			"name":                  "reporting",
			"permissions":           map[string]any{mod: []string{"write", "read", "read"}},
			"rate_limit_per_minute": 42,
			"expires_at":            expires,
		}).want(201).json()
		id, _ := created["id"].(string)
		secret, _ := created["key"].(string)
		prefix, _ := created["prefix"].(string)
		if secret == "" || prefix == "" || !strings.HasPrefix(secret, prefix) || len(prefix) >= len(secret) {
			t.Fatalf("create answered key %q, prefix %q: want a secret that its shorter prefix starts", secret, prefix)
		}
		want := map[string]any{
			"id": id, "name": "reporting", "prefix": prefix, "admin": false,
			"permissions":           map[string]any{mod: []any{"read", "write"}},
			"rate_limit_per_minute": float64(42), "expires_at": expires.Format(time.RFC3339),
			"last_used_at": nil, "revoked_at": nil, "previous_key_expires_at": nil,
		}
		ignoreTimes := cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "created_at" || k == "updated_at" })
		if diff := cmp.Diff(want, withoutKey(created, "key"), ignoreTimes, sameInstant); diff != "" {
			t.Errorf("created key (-want +got):\n%s", diff)
		}
		// Read before the key is first used: the access log moves
		// last_used_at whenever its flush runs after a use.
		got := e.call("GET", "/api/admin/keys/"+id, e.admin, nil).want(200).json()
		if _, ok := got["key"]; ok {
			t.Errorf("GET returned the secret: %v", got)
		}
		if diff := cmp.Diff(want, got, ignoreTimes, sameInstant); diff != "" {
			t.Errorf("read key (-want +got):\n%s", diff)
		}
		e.call("GET", "/api/modules", secret, nil).want(200)

		var page struct {
			Data  []map[string]any `json:"data"`
			Total int              `json:"total"`
		}
		e.call("GET", "/api/admin/keys", e.admin, nil).want(200).decode(&page)
		if page.Total != 2 || len(page.Data) != 2 {
			t.Fatalf("list: total %d, %d items; want 2 (admin and new key)", page.Total, len(page.Data))
		}
		for _, k := range page.Data {
			if _, ok := k["key"]; ok {
				t.Errorf("list returned a secret: %v", k)
			}
		}
		if page.Data[0]["id"] != id {
			t.Errorf("list starts with %v, want the newest key %s", page.Data[0]["id"], id)
		}
		var one struct {
			Data  []map[string]any `json:"data"`
			Total int              `json:"total"`
		}
		e.call("GET", "/api/admin/keys?limit=1&page=2", e.admin, nil).want(200).decode(&one)
		if one.Total != 2 || len(one.Data) != 1 || one.Data[0]["id"] == id {
			t.Errorf("page 2 of 1: total %d, data %v; want the admin key alone", one.Total, one.Data)
		}

		// Nothing in the table reveals the secret beyond its visible prefix.
		for _, row := range db.Rows(t, "SELECT * FROM api_keys") {
			for col, v := range row {
				if strings.Contains(v, secret[len(prefix):]) {
					t.Errorf("api_keys.%s holds the secret: %q", col, v)
				}
			}
		}

		later := expires.Add(24 * time.Hour)
		patches := []struct {
			name  string
			patch map[string]any
			want  map[string]any
		}{
			{"name", map[string]any{"name": "renamed"}, map[string]any{"name": "renamed"}},
			{"permissions", map[string]any{"permissions": map[string]any{"*": []string{"read"}}}, map[string]any{"permissions": map[string]any{"*": []any{"read"}}}},
			{"limit", map[string]any{"rate_limit_per_minute": 7}, map[string]any{"rate_limit_per_minute": float64(7)}},
			{"expiry", map[string]any{"expires_at": later}, map[string]any{"expires_at": later.Format(time.RFC3339)}},
			{"expiry cleared", map[string]any{"expires_at": nil}, map[string]any{"expires_at": nil}},
			{"nothing", map[string]any{}, map[string]any{}},
		}
		for _, tt := range patches {
			t.Run("PATCH "+tt.name, func(t *testing.T) {
				e := e.on(t)
				for k, v := range tt.want {
					want[k] = v
				}
				patched := e.call("PATCH", "/api/admin/keys/"+id, e.admin, tt.patch).want(200).json()
				if diff := cmp.Diff(want, patched, ignoreTimes, sameInstant, cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "last_used_at" })); diff != "" {
					t.Errorf("PATCH answer (-want +got):\n%s", diff)
				}
				reread := e.call("GET", "/api/admin/keys/"+id, e.admin, nil).want(200).json()
				if diff := cmp.Diff(patched, reread, cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "last_used_at" })); diff != "" {
					t.Errorf("GET after PATCH differs from its answer (-patch +get):\n%s", diff)
				}
			})
		}
		// The changed key still authenticates, now with its new limit.
		r := e.call("GET", "/api/modules", secret, nil).want(200)
		if got := r.header.Get("X-RateLimit-Limit"); got != "7" {
			t.Errorf("X-RateLimit-Limit %q after the limit changed to 7", got)
		}
	})
}

// sameInstant compares the RFC 3339 strings of decoded JSON as instants,
// whatever zone the server wrote them in.
var sameInstant = cmp.Transformer("instant", func(s string) string {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return s
})

func TestKeyValidationErrors(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("things")
		id, _ := e.createKey(map[string]any{})
		past := time.Now().Add(-time.Hour).UTC()
		tests := []struct {
			name   string
			body   map[string]any
			fields []string
		}{
			{"unknown action", map[string]any{"permissions": map[string]any{mod: []string{"read", "admin"}}}, []string{"permissions." + mod}},
			{"unknown module", map[string]any{"permissions": map[string]any{"mod_nope": []string{"read"}}}, []string{"permissions.mod_nope"}},
			{"limit 0", map[string]any{"rate_limit_per_minute": 0}, []string{"rate_limit_per_minute"}},
			{"negative limit", map[string]any{"rate_limit_per_minute": -5}, []string{"rate_limit_per_minute"}},
			{"past expiry", map[string]any{"expires_at": past}, []string{"expires_at"}},
			{"expiry not a date", map[string]any{"expires_at": "tomorrow"}, []string{"expires_at"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := e.on(t)
				for _, r := range []*resp{
					e.call("POST", "/api/admin/keys", e.admin, tt.body),
					e.call("PATCH", "/api/admin/keys/"+id, e.admin, tt.body),
				} {
					r.want(422)
					var body struct {
						Error   string `json:"error"`
						Details []struct {
							Field string `json:"field"`
						} `json:"details"`
					}
					r.decode(&body)
					var fields []string
					for _, d := range body.Details {
						fields = append(fields, d.Field)
					}
					if body.Error != "validation_failed" {
						t.Errorf("error %q, want validation_failed", body.Error)
					}
					if diff := cmp.Diff(tt.fields, fields); diff != "" {
						t.Errorf("detail fields (-want +got):\n%s", diff)
					}
				}
			})
		}
		// Nothing was created or changed by the refused requests.
		var page struct {
			Total int `json:"total"`
		}
		e.call("GET", "/api/admin/keys", e.admin, nil).want(200).decode(&page)
		if page.Total != 2 {
			t.Errorf("%d keys after refused creations, want 2", page.Total)
		}
		k := e.call("GET", "/api/admin/keys/"+id, e.admin, nil).want(200).json()
		if k["rate_limit_per_minute"] != float64(600) || k["expires_at"] != nil || len(k["permissions"].(map[string]any)) != 0 {
			t.Errorf("refused changes changed the key: %v", k)
		}
	})
}

func TestKeyOfAnotherTenantIsNotFound(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		store := storetest.NewDB(t, d).Open(t, models.Options{})
		mine := newEnvOn(t, store)
		theirs := newEnvOn(t, store)
		theirID, theirKey := theirs.createKey(map[string]any{"name": "theirs"})

		ops := []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/admin/keys/%s", nil},
			{"PATCH", "/api/admin/keys/%s", map[string]any{"name": "mine now"}},
			{"DELETE", "/api/admin/keys/%s", nil},
			{"POST", "/api/admin/keys/%s/rotate", map[string]any{"grace_seconds": 60}},
			{"GET", "/api/admin/keys/%s/usage", nil},
		}
		for _, op := range ops {
			t.Run(op.method+" "+op.path, func(t *testing.T) {
				e := mine.on(t)
				foreign := e.call(op.method, fmt.Sprintf(op.path, theirID), e.admin, op.body).want(404)
				missing := e.call(op.method, fmt.Sprintf(op.path, "key_01jzzzzzzzzzzzzzzzzzzzzzzz"), e.admin, op.body).want(404)
				a, b := wantErrorBody(t, foreign, "not_found"), wantErrorBody(t, missing, "not_found")
				if a["message"] != b["message"] {
					t.Errorf("a foreign key answers %q, a missing one %q: want the same", a["message"], b["message"])
				}
			})
		}
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		mine.call("GET", "/api/admin/keys", mine.admin, nil).want(200).decode(&page)
		for _, k := range page.Data {
			if k.ID == theirID {
				t.Errorf("the other tenant's key is listed")
			}
		}
		got := theirs.call("GET", "/api/admin/keys/"+theirID, theirs.admin, nil).want(200).json()
		if got["name"] != "theirs" || got["revoked_at"] != nil {
			t.Errorf("the other tenant's key changed: %v", got)
		}
		theirs.call("GET", "/api/modules", theirKey, nil).want(200)

		// Their key's calls are in their access logs, never in ours.
		theirLogs := url.Values{"key_id": {theirID}}
		theirs.waitForLogs(theirLogs, 1)
		if got := mine.accessLogs(theirLogs); got.Total != 0 || len(got.Data) != 0 {
			t.Errorf("another tenant's access logs are listed: %+v", got)
		}
	})
}

// A tenant keeps at least one live admin key: the last one can be neither
// demoted nor revoked through the API (409), so a tenant cannot lock itself
// out; once another admin key exists, either may go.
func TestLastAdminKeyStays(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		clock := storetest.NewClock()
		e := newEnvOn(t, storetest.OpenWithClock(t, d, clock.Now))
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		e.call("GET", "/api/admin/keys", e.admin, nil).want(200).decode(&page)
		if len(page.Data) != 1 {
			t.Fatalf("want the tenant's one admin key, got %+v", page.Data)
		}
		first := page.Data[0].ID

		// An admin key that has expired does not count as one left.
		e.createKey(map[string]any{"admin": true, "expires_at": clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		clock.Advance(2 * time.Hour)
		revoked, _ := e.createKey(map[string]any{"admin": true})
		e.call("DELETE", "/api/admin/keys/"+revoked, e.admin, nil).want(200)

		body := wantErrorBody(t, e.call("DELETE", "/api/admin/keys/"+first, e.admin, nil).want(409), "conflict")
		if msg, _ := body["message"].(string); !strings.Contains(msg, "last admin key") {
			t.Errorf("revoking the last admin key: message %q, want it to say why", msg)
		}
		wantErrorBody(t, e.call("PATCH", "/api/admin/keys/"+first, e.admin, map[string]any{"admin": false}).want(409), "conflict")
		got := e.call("GET", "/api/admin/keys/"+first, e.admin, nil).want(200).json()
		if got["admin"] != true || got["revoked_at"] != nil {
			t.Errorf("the refused changes changed the key: %v", got)
		}
		// Other changes to the last admin key are fine.
		e.call("PATCH", "/api/admin/keys/"+first, e.admin, map[string]any{"name": "still admin", "admin": true}).want(200)

		second, secondSecret := e.createKey(map[string]any{"admin": true})
		e.call("PATCH", "/api/admin/keys/"+first, e.admin, map[string]any{"admin": false}).want(200)
		// Now second is the last one, whoever asks.
		wantErrorBody(t, e.call("DELETE", "/api/admin/keys/"+second, secondSecret, nil).want(409), "conflict")
		e.call("PATCH", "/api/admin/keys/"+first, secondSecret, map[string]any{"admin": true}).want(200)
		e.call("DELETE", "/api/admin/keys/"+second, e.admin, nil).want(200)

		// Two admins revoking each other at once: one of them stays.
		for range 5 {
			a, aSecret := e.createKey(map[string]any{"admin": true})
			b, bSecret := e.createKey(map[string]any{"admin": true})
			e.call("DELETE", "/api/admin/keys/"+first, aSecret, nil).want(200)
			statuses := make(chan int, 2)
			go func() { statuses <- e.call("DELETE", "/api/admin/keys/"+b, aSecret, nil).status }()
			go func() { statuses <- e.call("DELETE", "/api/admin/keys/"+a, bSecret, nil).status }()
			// The loser answers 409, or 401 when the winner's revoke came
			// before it authenticated; either way exactly one admin is left.
			got := []int{<-statuses, <-statuses}
			slices.Sort(got)
			if got[0] != http.StatusOK || (got[1] != http.StatusConflict && got[1] != http.StatusUnauthorized) {
				t.Fatalf("two admins revoking each other answered %v, want one 200 and one 409 or 401", got)
			}
			aLive := e.call("GET", "/api/admin/keys", aSecret, nil).status == http.StatusOK
			bLive := e.call("GET", "/api/admin/keys", bSecret, nil).status == http.StatusOK
			if aLive == bLive {
				t.Fatalf("after revoking each other: a live %v, b live %v; want exactly one", aLive, bLive)
			}
			first, e.admin = a, aSecret
			if bLive {
				first, e.admin = b, bSecret
			}
			e.call("GET", "/api/admin/keys", e.admin, nil).want(200)
		}
	})
}
