package models_test

// The package's test helpers: what more than one of its test files uses.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// forEachDialect runs f as a parallel subtest on SQLite and on PostgreSQL.
func forEachDialect(t *testing.T, f func(t *testing.T, d models.Dialect)) {
	t.Helper()
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// thingsModule creates the tenant's module "things", with one required
// integer field n.
func thingsModule(t *testing.T, s *models.Store, tenantID string) *models.Module {
	t.Helper()
	fields := []models.Field{{Name: "n", Type: models.TypeInteger, Required: true}}
	slug, name := "things", "Things"
	m, err := s.CreateModule(context.Background(), tenantID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// kindOf returns the kind of err, "" for nil.
func kindOf(err error) models.Kind {
	if err == nil {
		return ""
	}
	return models.ErrorKind(err)
}

func newTenant(t *testing.T, s *models.Store) (tenantID, adminSecret string) {
	t.Helper()
	tn, _, secret, err := s.CreateTenant(context.Background(), fmt.Sprintf("t%d", tenants.Add(1)), 600)
	if err != nil {
		t.Fatalf("create tenant: %v", err)
	}
	return tn.ID, secret
}

func createKey(t *testing.T, s *models.Store, tenantID string, in models.KeyInput) (*models.APIKey, string) {
	t.Helper()
	k, secret, err := s.CreateKey(context.Background(), tenantID, in, 600)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return k, secret
}

// errorFields returns the fields of a validation error.
func errorFields(t *testing.T, err error) []string {
	t.Helper()
	var e *models.Error
	if !errors.As(err, &e) || e.Kind != models.KindValidation {
		t.Fatalf("error %v, want a validation error", err)
	}
	var out []string
	for _, d := range e.Details {
		out = append(out, d.Field)
	}
	return out
}

func utcBuckets(bs []models.UsageBucket) []models.UsageBucket {
	out := make([]models.UsageBucket, len(bs))
	for i, b := range bs {
		b.BucketStart = b.BucketStart.UTC()
		out[i] = b
	}
	return out
}

// allowURL is an egress check that lets every URL through.
func allowURL(context.Context, string) error { return nil }

// newHookEndpoint creates an enabled endpoint of tenantID.
func newHookEndpoint(t *testing.T, s *models.Store, tenantID string) *models.WebhookEndpoint {
	t.Helper()
	u, events := "https://hooks.example.com/a", []string{models.EventRecordCreated}
	ep, _, err := s.CreateEndpoint(t.Context(), tenantID, models.EndpointInput{URL: &u, Events: &events}, allowURL)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// disabledEvents returns the endpoint_disabled events in the outbox.
func disabledEvents(t *testing.T, s *models.Store) []models.Event {
	t.Helper()
	evs, err := s.PendingEvents(t.Context(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []models.Event
	for _, e := range evs {
		if e.Type == models.EventEndpointDisabled {
			out = append(out, e)
		}
	}
	return out
}

// checkStats compares the store's stats of each endpoint with a recount of
// the rows as the store holds them now.
func checkStats(t *testing.T, s *models.Store, tenantID string, endpoints []string, ids []string) {
	t.Helper()
	ctx := t.Context()
	var rows []*models.WebhookDelivery
	for _, id := range ids {
		d, err := s.GetDelivery(ctx, tenantID, id)
		if err != nil {
			t.Fatalf("get delivery %s: %v", id, err)
		}
		rows = append(rows, d)
	}
	got, err := s.EndpointStatsAt(ctx, tenantID, endpoints, statsNow)
	if err != nil {
		t.Fatalf("EndpointStatsAt: %v", err)
	}
	since := time.Date(2030, 1, 1, 13, 0, 0, 0, time.UTC)
	for _, ep := range endpoints {
		st := got[ep]
		if st == nil || !st.Since.Equal(since) || !st.Until.Equal(statsNow) || len(st.Buckets) != models.StatsHours {
			t.Fatalf("%s: stats %+v, want %s..%s in %d hours", ep, st, since, statsNow, models.StatsHours)
		}
		var mine []*models.WebhookDelivery
		for _, r := range rows {
			if r.EndpointID == ep {
				mine = append(mine, r)
			}
		}
		// The current hour holds what has been recorded in it so far: a
		// row started after statsNow in statsNow's hour (written ahead by
		// the test's fixed clock) is in it too.
		overall, hours := recount(mine, since, statsNow.Truncate(time.Hour).Add(time.Hour))
		compareStats(t, ep+" overall", st.AttemptStats, overall)
		for i := range hours {
			if want := since.Add(time.Duration(i) * time.Hour); !st.Buckets[i].Start.Equal(want) {
				t.Errorf("%s hour %d starts %s, want %s", ep, i, st.Buckets[i].Start, want)
			}
			compareStats(t, fmt.Sprintf("%s hour %d", ep, i), st.Buckets[i].AttemptStats, hours[i])
		}
	}
}

// attemptRow is an attempt of event evt to endpoint ep, in flight.
func attemptRow(tenantID, ep, evt string, attempt int, at time.Time) *models.WebhookDelivery {
	return &models.WebhookDelivery{
		ID: models.NewID(models.PrefixDelivery), TenantID: tenantID, EventID: evt, EventType: models.EventRecordCreated, EndpointID: ep,
		WorkflowID: "webhook-delivery/" + evt + "/" + ep, RunID: "run-1", Attempt: attempt,
		RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{}, RequestBody: `{}`,
		ResponseHeaders: models.Headers{}, Error: models.DeliveryErrInFlight, StartedAt: at, FinishedAt: at,
	}
}

// outcome is a random outcome for the attempt row id.
func outcome(r *rand.Rand, id string, at time.Time) *models.WebhookDelivery {
	d := &models.WebhookDelivery{ID: id, ResponseHeaders: models.Headers{}, FinishedAt: at}
	// Latencies log-uniform from 0.5 ms to 30 s.
	ms := math.Exp(math.Log(0.5) + r.Float64()*math.Log(60000))
	switch r.IntN(4) {
	case 0, 1:
		status := 200
		d.ResponseStatus, d.Succeeded, d.DurationMS = &status, true, ms
	case 2:
		status := 500
		d.ResponseStatus, d.Error, d.DurationMS = &status, models.DeliveryErrHTTPStatus, ms
	default:
		// A request that got no answer, or none sent at all.
		d.Error = []string{models.DeliveryErrTimeout, models.DeliveryErrConnectionRefused, models.DeliveryErrBlockedDestination}[r.IntN(3)]
		if d.Error != models.DeliveryErrBlockedDestination {
			d.DurationMS = ms
		}
	}
	return d
}

// outboxTenant is a tenant with a module, whose records write events.
type outboxTenant struct {
	id     string
	module *models.Module
}

func newOutboxTenant(t *testing.T, s *models.Store, name string) outboxTenant {
	t.Helper()
	ctx := context.Background()
	tenant, _, _, err := s.CreateTenant(ctx, name, 100)
	if err != nil {
		t.Fatal(err)
	}
	fields := []models.Field{{Name: "title", Type: models.TypeString}}
	slug := "things"
	m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &slug, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	return outboxTenant{id: tenant.ID, module: m}
}

// events creates n records of the tenant and returns their events' ids,
// oldest first.
func (o outboxTenant) events(t *testing.T, s *models.Store, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		r, err := s.CreateRecord(context.Background(), o.module, map[string]any{"title": "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, eventOf(t, s, r.ID))
	}
	return ids
}

func ids(evs []models.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func newRecoveryFixture(t *testing.T, d models.Dialect) *recoveryFixture {
	t.Helper()
	db := storetest.NewDB(t, d)
	clock := storetest.NewClock()
	s := db.Open(t, models.Options{Now: clock.Now})
	f := &recoveryFixture{s: s, db: db, clock: clock, tenant: newOutboxTenant(t, s, "recovering"), other: newOutboxTenant(t, s, "bystander")}
	f.ep = newRecoveryEndpoint(t, s, f.tenant.id)
	f.ep2 = newRecoveryEndpoint(t, s, f.tenant.id)
	f.otherEP = newRecoveryEndpoint(t, s, f.other.id)
	return f
}

// replayRow is a webhook_replays row as the tests see it.
type replayRow struct {
	EventID, EndpointID string
	N                   int
	WorkflowID          string
	RecoveryID          string
}

func replayRows(t *testing.T, db *storetest.DB) []replayRow {
	t.Helper()
	rows, err := db.SQL(t).QueryContext(t.Context(),
		"SELECT event_id, endpoint_id, n, workflow_id, COALESCE(recovery_id, '') FROM webhook_replays ORDER BY event_id, endpoint_id, n")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []replayRow
	for rows.Next() {
		var r replayRow
		if err := rows.Scan(&r.EventID, &r.EndpointID, &r.N, &r.WorkflowID, &r.RecoveryID); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedReplayRows(rows []replayRow) []replayRow {
	return slices.SortedFunc(slices.Values(rows), func(a, b replayRow) int {
		return cmpOrder(strings.Compare(a.EventID, b.EventID), strings.Compare(a.EndpointID, b.EndpointID), a.N-b.N)
	})
}

// wantText checks a stored text against what should be kept of it.
func wantText(t *testing.T, what, got, want string) {
	t.Helper()
	if !utf8.ValidString(got) || strings.ContainsRune(got, 0) {
		t.Errorf("%s %.60q is not storable text", what, got)
	}
	if got != want {
		t.Errorf("%s (%d bytes) = %.60q…, want (%d bytes) %.60q…", what, len(got), got, len(want), want)
	}
}

func tenantRows(ts []models.Tenant) []tenantRow {
	rows := make([]tenantRow, len(ts))
	for i, t := range ts {
		rows[i] = tenantRow{t.ID, t.Name, t.CreatedAt.UTC().Truncate(time.Millisecond)}
	}
	return rows
}

// filteredEndpoint asks for an endpoint on modules with filter.
func filteredEndpoint(t *testing.T, s *models.Store, tenantID string, modules []string, filter map[string]any) (*models.WebhookEndpoint, error) {
	t.Helper()
	u, events := "https://hooks.example.com/f", []string{models.EventRecordCreated, models.EventStatusChange}
	ep, _, err := s.CreateEndpoint(t.Context(), tenantID, models.EndpointInput{URL: &u, Events: &events, ModuleIDs: &modules, Filter: &filter}, allowURL)
	return ep, err
}
