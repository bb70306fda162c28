package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// unknownQuery is the body of a refused query parameter.
type unknownQuery struct {
	Error   string   `json:"error"`
	Message string   `json:"message"`
	Unknown []string `json:"unknown"`
	Allowed []string `json:"allowed"`
}

// TestUnknownQueryParameters: a list refuses a parameter it does not
// take, naming it and those it takes, instead of answering rows the
// caller did not select; the parameters it takes, bracket forms included,
// still pass.
func TestUnknownQueryParameters(t *testing.T) {
	e := newEnv(t, models.SQLite)
	mod := e.createModule("orders", shopOrderFields...)
	e.createRecord(mod, map[string]any{"order_id": "A1", "total": 3})

	for _, c := range []struct {
		path        string
		wantUnknown []string
		wantAllowed []string
		wantMessage string
	}{
		{"/api/admin/access-logs?since=2026-01-01T00:00:00Z", []string{"since"},
			[]string{"cursor", "page", "limit", "key_id", "status", "method", "from", "to"},
			`unknown query parameter "since"; this route takes: cursor, page, limit, key_id, status, method, from, to`},
		{"/api/modules/" + mod + "/records?filter[state]=new&per_page=5&q=x", []string{"per_page", "q"},
			[]string{"page", "limit", "sort", "filter[<field>]"},
			`unknown query parameters "per_page", "q"; this route takes: page, limit, sort, filter[<field>]`},
		{"/api/modules/" + mod + "/records?filter=new", []string{"filter"},
			[]string{"page", "limit", "sort", "filter[<field>]"},
			`unknown query parameter "filter"; this route takes: page, limit, sort, filter[<field>]`},
		{"/api/admin/modules?limit=100", []string{"limit"}, []string{},
			`unknown query parameter "limit"; this route takes no query parameters`},
		{"/api/modules?page=2", []string{"page"}, []string{},
			`unknown query parameter "page"; this route takes no query parameters`},
		{"/api/admin/webhook-deliveries?endpoint=whe_1", []string{"endpoint"},
			[]string{"cursor", "page", "limit", "endpoint_id", "event_id", "record_id", "event_type", "succeeded", "since", "until", "error"},
			`unknown query parameter "endpoint"; this route takes: cursor, page, limit, endpoint_id, event_id, record_id, event_type, succeeded, since, until, error`},
	} {
		t.Run(c.path, func(t *testing.T) {
			r := e.on(t).call("GET", c.path, e.admin, nil).want(http.StatusBadRequest)
			wantErrorBody(t, r, "invalid_request")
			var got unknownQuery
			r.decode(&got)
			if diff := cmp.Diff(c.wantUnknown, got.Unknown); diff != "" {
				t.Errorf("unknown (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantAllowed, got.Allowed); diff != "" {
				t.Errorf("allowed (-want +got):\n%s", diff)
			}
			if got.Message != c.wantMessage {
				t.Errorf("message %q, want %q", got.Message, c.wantMessage)
			}
		})
	}

	// What the routes take passes.
	var page struct{ Total int }
	e.call("GET", "/api/modules/"+mod+"/records?filter[state]=new&page=1&limit=5&sort=-created_at", e.admin, nil).want(200).decode(&page)
	if page.Total != 1 {
		t.Errorf("filtered list: total %d, want 1", page.Total)
	}
	e.call("GET", "/api/admin/access-logs?limit=5&method=GET", e.admin, nil).want(200)
	e.call("GET", "/api/admin/modules", e.admin, nil).want(200)
	// A route that reads no query is not a list: it ignores one.
	e.call("GET", "/api/admin/modules/"+mod+"?x=1", e.admin, nil).want(200)
}

// TestOpenAPIQueryParametersAreTaken walks api/openapi.yaml: every GET
// operation takes each query parameter it documents, and refuses any
// other naming exactly those, so that the document and the server cannot
// drift apart.
func TestOpenAPIQueryParametersAreTaken(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	e := newEnv(t, models.SQLite)
	mod := e.createModule("orders", shopOrderFields...)
	key, _ := e.createKey(map[string]any{"name": "k"})
	ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)

	checked := 0
	for path, item := range doc.Paths.Map() {
		op := item.Get
		if op == nil || !strings.HasPrefix(path, "/api/") || path == "/api/openapi.yaml" {
			continue
		}
		var documented []string
		for _, p := range append(item.Parameters, op.Parameters...) {
			if p.Value.In != "query" {
				continue
			}
			name := p.Value.Name
			if p.Value.Style == "deepObject" {
				name += "[<field>]"
			}
			documented = append(documented, name)
		}
		if len(documented) == 0 {
			continue
		}
		var url string
		switch {
		case strings.Contains(path, "/keys/"):
			url = strings.Replace(path, "{id}", key, 1)
		case strings.Contains(path, "/webhook-endpoints/"):
			url = strings.Replace(path, "{id}", ep, 1)
		default:
			url = strings.Replace(path, "{id}", mod, 1)
		}
		if strings.Contains(url, "{") {
			t.Errorf("GET %s: no id to put in the path; add one to this test", path)
			continue
		}
		t.Run(path, func(t *testing.T) {
			checked++
			for _, name := range documented {
				q := strings.Replace(name, "<field>", "state", 1) + "=1"
				r := e.on(t).call("GET", url+"?"+q, e.admin, nil)
				var got unknownQuery
				r.decode(&got)
				if got.Unknown != nil {
					t.Errorf("?%s: refused as unknown, but documented: %s", q, r.body)
				}
			}
			r := e.on(t).call("GET", url+"?bogus=1", e.admin, nil).want(http.StatusBadRequest)
			var got unknownQuery
			r.decode(&got)
			if diff := cmp.Diff(slices.Sorted(slices.Values(documented)), slices.Sorted(slices.Values(got.Allowed))); diff != "" {
				t.Errorf("allowed (-documented +answered):\n%s", diff)
			}
		})
	}
	if checked < 8 {
		t.Errorf("%d operations with query parameters checked, want the 8 or more documented", checked)
	}
}
