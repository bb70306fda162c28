package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/mapping"
	"github.com/recordhub/recordhub/models/storetest"
)

// unlimited lets every call through: the benchmarks measure what an
// inbound call costs, not the 60-a-minute budget.
type unlimited struct{}

func (unlimited) Allow(context.Context, string, int) (ratelimit.Result, error) {
	return ratelimit.Result{Allowed: true, Limit: 1 << 30, Remaining: 1 << 30}, nil
}

// BenchmarkInbound measures inbound calls through HTTP on each database:
// a create per call, an update of one matched record per call, and the
// three kinds of URL that name no webhook, which must cost alike.
//
//	go test ./api -run '^$' -bench Inbound -benchtime 2s
func BenchmarkInbound(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			store := storetest.Open(b, d)
			tenant, _, _, err := store.CreateTenant(ctx, "bench", "", 1000)
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(api.New(api.Deps{
				Store: store, Limiter: unlimited{}, Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
				Log: quietLog,
			}).Handler())
			b.Cleanup(srv.Close)
			hook := func(slug string, match []string) string {
				fields := []models.Field{{Name: "order_id", Type: models.TypeString, Required: true}, {Name: "total", Type: models.TypeInteger}}
				m, err := store.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &slug, Fields: &fields})
				if err != nil {
					b.Fatal(err)
				}
				_, token, _, err := store.ConfigureInbound(ctx, tenant.ID, m.ID, models.InboundInput{
					Mapping:     []mapping.Rule{{Source: "$.payload.order.id", Field: "order_id"}, {Source: "$.payload.order.total", Field: "total"}},
					MatchFields: match, Enabled: true,
				})
				if err != nil {
					b.Fatal(err)
				}
				return token
			}
			createToken := hook("create", nil)
			upsertToken := hook("upsert", []string{"order_id"})
			post := func(path string, body []byte, want int) error {
				res, err := srv.Client().Post(srv.URL+path, "application/json", bytes.NewReader(body))
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
