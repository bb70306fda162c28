package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/mapping"
	"github.com/recordhub/recordhub/models/storetest"
)

// inboundServer is an API without rate limits or access log on a fresh
// store, with a tenant, for inbound calls in bulk.
type inboundServer struct {
	tb     testing.TB
	store  *models.Store
	tenant string
	srv    *httptest.Server
}

// hook creates a module with fields and an inbound webhook on it, and
// returns the webhook's URL.
func (s *inboundServer) hook(slug string, fields []models.Field, in models.InboundInput) string {
	s.tb.Helper()
	ctx := context.Background()
	m, err := s.store.CreateModule(ctx, s.tenant, models.ModuleInput{Slug: &slug, Name: &slug, Fields: &fields})
	if err != nil {
		s.tb.Fatal(err)
	}
	in.Enabled = true
	_, token, _, err := s.store.ConfigureInbound(ctx, s.tenant, m.ID, in)
	if err != nil {
		s.tb.Fatal(err)
	}
	return s.srv.URL + "/api/webhooks/" + slug + "/" + token
}

// BenchmarkInbound measures inbound calls through HTTP on each database:
// a create per call, an update of one matched record per call, and the
// three kinds of URL that name no webhook, which must cost alike.
//
//	go test ./api -run '^$' -bench Inbound -benchtime 2s
func BenchmarkInbound(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			s := newInboundServer(b, d)
			fields := []models.Field{{Name: "order_id", Type: models.TypeString, Required: true}, {Name: "total", Type: models.TypeInteger}}
			rules := []mapping.Rule{{Source: "$.payload.order.id", Field: "order_id"}, {Source: "$.payload.order.total", Field: "total"}}
			createURL := s.hook("create", fields, models.InboundInput{Mapping: rules})
			upsertURL := s.hook("upsert", fields, models.InboundInput{Mapping: rules, MatchFields: []string{"order_id"}})
			createToken := createURL[strings.LastIndex(createURL, "/")+1:]
			upsertToken := upsertURL[strings.LastIndex(upsertURL, "/")+1:]
			post := func(path string, body []byte, want int) error {
				res, err := s.srv.Client().Post(s.srv.URL+path, "application/json", bytes.NewReader(body))
				if err != nil {
					return err
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != want {
					return fmt.Errorf("POST %s: %d, want %d", path, res.StatusCode, want)
				}
				return nil
			}
			var n atomic.Int64
			for _, bc := range []struct {
				name, path string
				body       func() []byte
				want       int
			}{
				{"create", "/api/webhooks/create/" + createToken, func() []byte { return []byte(`{"order":{"id":"A","total":1}}`) }, http.StatusAccepted},
				{"update", "/api/webhooks/upsert/" + upsertToken, func() []byte {
					return fmt.Appendf(nil, `{"order":{"id":"A","total":%d}}`, n.Add(1))
				}, http.StatusAccepted},
				{"404-unknown-slug", "/api/webhooks/nosuch/" + createToken, nil, http.StatusNotFound},
				{"404-unknown-token", "/api/webhooks/create/" + "x" + createToken[1:], nil, http.StatusNotFound},
				{"404-other-modules-token", "/api/webhooks/create/" + upsertToken, nil, http.StatusNotFound},
			} {
				b.Run(bc.name, func(b *testing.B) {
					b.RunParallel(func(pb *testing.PB) {
						body := []byte(`{"order":{"id":"A"}}`)
						for pb.Next() {
							if bc.body != nil {
								body = bc.body()
							}
							if err := post(bc.path, body, bc.want); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
		})
	}
}
