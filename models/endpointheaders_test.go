package models_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestEndpointHeadersStored: custom headers are stored sealed (the raw
// columns hold no value), bound to their endpoint, named in clear, read back
// under canonical names, replaced whole by an update and removed by an
// empty set; an update that does not name them keeps them.
func TestEndpointHeadersStored(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := storetest.NewDB(t, d)
			s := db.Open(t, models.Options{})
			tenant, _, _, err := s.CreateTenant(ctx, "acme", 600)
			if err != nil {
				t.Fatal(err)
			}
			u, events := "https://hooks.example.com/a", []string{models.EventRecordCreated}
			const token = "Bearer gateway-token-8c1f2e"
			ep, _, err := s.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{URL: &u, Events: &events,
				Headers: &map[string]string{"authorization": token, "x-api-key": "key-51b7"}}, allowURL)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string(ep.HeaderNames), []string{"Authorization", "X-Api-Key"}); diff != "" {
				t.Errorf("header names (-got +want):\n%s", diff)
			}

			var sealed, names string
			if err := db.SQL(t).QueryRowContext(ctx, db.Rebind("SELECT headers, header_names FROM webhook_endpoints WHERE id = ?"), ep.ID).Scan(&sealed, &names); err != nil {
				t.Fatal(err)
			}
			if sealed == "" || strings.Contains(sealed, "gateway-token") || strings.Contains(sealed, "key-51b7") || strings.Contains(sealed, "Authorization") {
				t.Errorf("headers column %q is not sealed", sealed)
			}
			if names != `["Authorization","X-Api-Key"]` {
				t.Errorf("header_names column %q", names)
			}

			loaded, err := s.GetEndpoint(ctx, tenant.ID, ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.EndpointHeaders(loaded)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, map[string]string{"Authorization": token, "X-Api-Key": "key-51b7"}); diff != "" {
				t.Errorf("headers (-got +want):\n%s", diff)
			}

			// Sealed to this endpoint: moved to another row, they do not open.
			other := newHookEndpoint(t, s, tenant.ID)
			other.Headers = loaded.Headers
			if _, err := s.EndpointHeaders(other); err == nil {
				t.Error("another endpoint's sealed headers opened")
			}

			desc := "kept"
			if _, err := s.UpdateEndpoint(ctx, tenant.ID, ep.ID, models.EndpointInput{Description: &desc}, allowURL); err != nil {
				t.Fatal(err)
			}
			if got := headersOf(t, s, tenant.ID, ep.ID); len(got) != 2 {
				t.Errorf("an update without headers changed them: %v", got)
			}
			if _, err := s.UpdateEndpoint(ctx, tenant.ID, ep.ID, models.EndpointInput{Headers: &map[string]string{"X-Other": "v2"}}, allowURL); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(headersOf(t, s, tenant.ID, ep.ID), map[string]string{"X-Other": "v2"}); diff != "" {
				t.Errorf("after replacing (-got +want):\n%s", diff)
			}
			cleared, err := s.UpdateEndpoint(ctx, tenant.ID, ep.ID, models.EndpointInput{Headers: &map[string]string{}}, allowURL)
			if err != nil {
				t.Fatal(err)
			}
			if got := headersOf(t, s, tenant.ID, ep.ID); got != nil || len(cleared.HeaderNames) != 0 || cleared.Headers != "" {
				t.Errorf("after clearing: %v, names %v, column %q", got, cleared.HeaderNames, cleared.Headers)
			}
		})
	}
}

func headersOf(t *testing.T, s *models.Store, tenantID, id string) map[string]string {
	t.Helper()
	ep, err := s.GetEndpoint(t.Context(), tenantID, id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.EndpointHeaders(ep)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestEndpointHeadersRefused: every kind of bad header is refused with a
// validation error naming it, on create and on update, and nothing is
// stored.
func TestEndpointHeadersRefused(t *testing.T) {
	s := storetest.Open(t, models.SQLite)
	ctx := t.Context()
	tenant, _, _, err := s.CreateTenant(ctx, "acme", 600)
	if err != nil {
		t.Fatal(err)
	}
	ep := newHookEndpoint(t, s, tenant.ID)
	many := map[string]string{}
	for i := range models.MaxEndpointHeaders + 1 {
		many["X-H"+strings.Repeat("a", i)] = "v"
	}
	big := map[string]string{}
	for i := range 5 {
		big["X-Big-"+string(rune('a'+i))] = strings.Repeat("v", 1000)
	}
	for _, c := range []struct {
		name    string
		headers map[string]string
		field   string
	}{
		{"too many", many, "headers"},
		{"too large in all", big, "headers"},
		{"not a token", map[string]string{"X Api Key": "v"}, "headers.X Api Key"},
		{"colon in name", map[string]string{"X-Api:Key": "v"}, "headers.X-Api:Key"},
		{"empty name", map[string]string{"": "v"}, "headers."},
		{"long name", map[string]string{"X-" + strings.Repeat("n", models.MaxHeaderNameBytes): "v"}, "headers.X-" + strings.Repeat("n", models.MaxHeaderNameBytes)},
		{"hop-by-hop", map[string]string{"Connection": "close"}, "headers.Connection"},
		{"keep-alive", map[string]string{"keep-alive": "1"}, "headers.keep-alive"},
		{"proxy", map[string]string{"Proxy-Authorization": "Basic x"}, "headers.Proxy-Authorization"},
		{"te", map[string]string{"TE": "trailers"}, "headers.TE"},
		{"trailer", map[string]string{"Trailer": "x"}, "headers.Trailer"},
		{"transfer-encoding", map[string]string{"Transfer-Encoding": "chunked"}, "headers.Transfer-Encoding"},
		{"upgrade", map[string]string{"Upgrade": "h2c"}, "headers.Upgrade"},
		{"host", map[string]string{"Host": "evil.example"}, "headers.Host"},
		{"content-length", map[string]string{"Content-Length": "1"}, "headers.Content-Length"},
		{"content-type", map[string]string{"content-type": "text/plain"}, "headers.content-type"},
		{"content-encoding", map[string]string{"Content-Encoding": "gzip"}, "headers.Content-Encoding"},
		{"user-agent", map[string]string{"User-Agent": "me"}, "headers.User-Agent"},
		{"our signature", map[string]string{"X-Webhook-Signature": "sha256=00"}, "headers.X-Webhook-Signature"},
		{"our id", map[string]string{"x-webhook-id": "evt_1"}, "headers.x-webhook-id"},
		{"standard webhooks", map[string]string{"webhook-signature": "v1,AAAA"}, "headers.webhook-signature"},
		{"standard webhooks any", map[string]string{"Webhook-Whatever": "1"}, "headers.Webhook-Whatever"},
		{"trace", map[string]string{"traceparent": "00-0-0-00"}, "headers.traceparent"},
		{"duplicate by case", map[string]string{"X-Key": "a", "x-key": "b"}, "headers.x-key"},
		{"empty value", map[string]string{"X-Key": ""}, "headers.X-Key"},
		{"CRLF", map[string]string{"X-Key": "a\r\nX-Injected: 1"}, "headers.X-Key"},
		{"LF", map[string]string{"X-Key": "a\nb"}, "headers.X-Key"},
		{"NUL", map[string]string{"X-Key": "a\x00b"}, "headers.X-Key"},
		{"long value", map[string]string{"X-Key": strings.Repeat("v", models.MaxHeaderValueBytes+1)}, "headers.X-Key"},
		{"the mask", map[string]string{"Authorization": models.HeaderMask}, "headers.Authorization"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, events := "https://hooks.example.com/b", []string{models.EventRecordCreated}
			_, _, err := s.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{URL: &u, Events: &events, Headers: &c.headers}, allowURL)
			checkFieldError(t, "create", err, c.field)
			_, err = s.UpdateEndpoint(ctx, tenant.ID, ep.ID, models.EndpointInput{Headers: &c.headers}, allowURL)
			checkFieldError(t, "update", err, c.field)
		})
	}
	if got := headersOf(t, s, tenant.ID, ep.ID); got != nil {
		t.Errorf("refused updates stored headers %v", got)
	}
	// At the bounds: accepted.
	atBounds := map[string]string{"X-" + strings.Repeat("n", models.MaxHeaderNameBytes-2): strings.Repeat("v", models.MaxHeaderValueBytes), "X-Tab": "a\tb", "X-Utf8": "héllo"}
	if _, err := s.UpdateEndpoint(ctx, tenant.ID, ep.ID, models.EndpointInput{Headers: &atBounds}, allowURL); err != nil {
		t.Errorf("headers at the bounds refused: %v", err)
	}
}

func checkFieldError(t *testing.T, what string, err error, field string) {
	t.Helper()
	var me *models.Error
	if !errors.As(err, &me) || me.Kind != models.KindValidation {
		t.Fatalf("%s: %v, want a validation error", what, err)
	}
	var fields []string
	for _, d := range me.Details {
		fields = append(fields, d.Field)
		if d.Field == field && d.Message != "" {
			return
		}
	}
	t.Errorf("%s: details on %q, want one on %q", what, fields, field)
}
