package api_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// Time values whose instant in UTC falls outside years 1..9999, written as
// a client may: through an offset, or as a year RFC 3339 cannot write.
var outOfRangeTimes = []string{
	"0000-01-01T00:00:00+23:59", // year -1 in UTC
	"9999-12-31T23:59:59-23:59", // year 10000 in UTC
	"0001-01-01T00:00:00+00:01", // one minute before year 1
	"0000-12-31T23:59:59Z",
	"10000-01-01T00:00:00Z",
	"-0001-01-01T00:00:00Z",
}

// The first and last instants of the accepted range, to the second.
const (
	firstTime = "0001-01-01T00:00:00Z"
	lastTime  = "9999-12-31T23:59:59Z"
)

// TestTimeValuesOutsideYears1To9999: every time a client sends, in a query
// parameter (400 invalid_request naming it) or a body field (422 naming
// it), is refused when its instant in UTC falls outside years 1..9999; a
// refused recovery leaves no row and uses up no number; the first and last
// instants of the range are accepted everywhere.
func TestTimeValuesOutsideYears1To9999(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		starter := &fakeStarter{}
		store := storetest.Open(t, d)
		e := newEnvOn(t, store, withRecoverer(recoverer{&workflows.Recoveries{Starter: starter, Store: store}}))
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		ep2 := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/b", "events": []string{"record_created"}})["id"].(string)
		deliveryRows(t, e, ep, ep2)
		keyID, _ := e.createKey(map[string]any{"name": "usage"})
		mod := e.createModule("tasks", map[string]any{"name": "title", "type": "string"}, map[string]any{"name": "due", "type": "datetime"})
		rec := e.createRecord(mod, map[string]any{"title": "a"})
		hook := e.call("PUT", "/api/admin/modules/"+mod+"/inbound-webhook", e.admin, map[string]any{
			"mapping": []map[string]any{{"source": "$.payload.title", "field": "title"}, {"source": "$.payload.due", "field": "due"}},
		}).want(201).json()
		hookURL, err := url.Parse(hook["url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		recoverPath := "/api/admin/webhook-endpoints/" + ep + "/recover"
		hourAgo := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)

		params := []string{
			"/api/admin/webhook-deliveries?since=",
			"/api/admin/webhook-deliveries?until=",
			"/api/admin/access-logs?from=",
			"/api/admin/access-logs?to=",
			"/api/admin/keys/" + keyID + "/usage?from=",
			"/api/admin/keys/" + keyID + "/usage?to=",
			"/api/modules/" + mod + "/records?filter[due]=",
		}
		type bodyCase struct {
			method, path string
			body         func(v string) any
			field        string
		}
		bodies := []bodyCase{
			{"POST", recoverPath, func(v string) any { return map[string]any{"since": v} }, "since"},
			{"POST", recoverPath, func(v string) any { return map[string]any{"since": hourAgo, "until": v} }, "until"},
			{"POST", "/api/admin/keys", func(v string) any { return map[string]any{"name": "k", "expires_at": v} }, "expires_at"},
			{"PATCH", "/api/admin/keys/" + keyID, func(v string) any { return map[string]any{"expires_at": v} }, "expires_at"},
			{"POST", "/api/modules/" + mod + "/records", func(v string) any { return map[string]any{"fields": map[string]any{"title": "b", "due": v}} }, "fields.due"},
			{"PATCH", "/api/modules/" + mod + "/records/" + rec, func(v string) any { return map[string]any{"fields": map[string]any{"due": v}} }, "fields.due"},
		}
		for _, v := range outOfRangeTimes {
			for _, p := range params {
				t.Run("query "+p+v, func(t *testing.T) {
					r := e.on(t).call("GET", p+url.QueryEscape(v), e.admin, nil).want(400)
					name := p[strings.LastIndexByte(p, '?')+1 : len(p)-1]
					if msg, _ := wantErrorBody(t, r, "invalid_request")["message"].(string); !strings.HasPrefix(msg, name+" must be") {
						t.Errorf("message %q, want one about %s", msg, name)
					}
				})
			}
			for _, b := range bodies {
				t.Run(b.method+" "+b.path+" "+b.field+" "+v, func(t *testing.T) {
					wantDetails(t, e.on(t).call(b.method, b.path, e.admin, b.body(v)), b.field)
				})
			}
			t.Run("inbound due "+v, func(t *testing.T) {
				r := e.on(t).call("POST", hookURL.Path, "", fmt.Sprintf(`{"title":"c","due":%q}`, v)).want(422)
				if r.errorCode() != "mapping_failed" || !strings.Contains(string(r.body), `"fields.due"`) {
					t.Errorf("inbound call answered %s, want mapping_failed on fields.due", r.body)
				}
			})
		}
		if n := starter.count(); n != 0 {
			t.Fatalf("%d recovery workflows started by refused windows", n)
		}

		// The range's ends are accepted everywhere.
		for _, p := range params[:4] {
			for _, v := range []string{firstTime, lastTime} {
				e.call("GET", p+v, e.admin, nil).want(200)
			}
		}
		// Without from, usage covers the day before to, here from year 1.
		usage := e.call("GET", "/api/admin/keys/"+keyID+"/usage?to=0001-01-01T12:00:00Z", e.admin, nil).want(200).json()
		if s, _ := usage["summary"].(map[string]any); s["from"] != firstTime || s["to"] != "0001-01-01T12:00:00Z" {
			t.Errorf("usage summary %v, want from %s to 0001-01-01T12:00:00Z", usage["summary"], firstTime)
		}
		var all deliveryPage
		e.call("GET", "/api/admin/webhook-deliveries?since="+firstTime+"&until="+lastTime, e.admin, nil).want(200).decode(&all)
		if len(all.Data) != 4 {
			t.Errorf("deliveries within the whole range: %d, want all 4", len(all.Data))
		}
		usage = e.call("GET", "/api/admin/keys/"+keyID+"/usage?from="+firstTime+"&to="+lastTime, e.admin, nil).want(200).json()
		if s, _ := usage["summary"].(map[string]any); s["from"] != firstTime || s["to"] != lastTime {
			t.Errorf("usage summary %v, want from %s to %s", usage["summary"], firstTime, lastTime)
		}
		first := e.createRecord(mod, map[string]any{"title": "first", "due": firstTime})
		e.call("PATCH", "/api/modules/"+mod+"/records/"+rec, e.admin, map[string]any{"fields": map[string]any{"due": lastTime}}).want(200)
		e.call("POST", hookURL.Path, "", fmt.Sprintf(`{"title":"d","due":%q}`, lastTime)).want(202)
		for v, want := range map[string]int{firstTime: 1, lastTime: 2} {
			var page deliveryPage
			e.call("GET", "/api/modules/"+mod+"/records?filter[due]="+v, e.admin, nil).want(200).decode(&page)
			if len(page.Data) != want || (v == firstTime && page.ids()[0] != first) {
				t.Errorf("records due %s: %v, want %d", v, page.ids(), want)
			}
		}
		key := e.call("POST", "/api/admin/keys", e.admin, map[string]any{"name": "long", "expires_at": lastTime}).want(201).json()
		if key["expires_at"] != lastTime {
			t.Errorf("key expires_at %v, want %s", key["expires_at"], lastTime)
		}
		e.call("GET", "/api/admin/keys/"+key["id"].(string), e.admin, nil).want(200)

		// No refused recovery was recorded: the first accepted one is number
		// 1, and its status reads.
		ok := e.call("POST", recoverPath, e.admin, map[string]any{"since": hourAgo, "until": lastTime}).want(202).json()
		if want := "webhook-recovery/" + ep + "/1"; ok["workflow_id"] != want {
			t.Errorf("first accepted recovery %v, want workflow id %s", ok, want)
		}
		e.call("GET", "/api/admin/webhook-endpoints/"+ep+"/recoveries/"+ok["recovery_id"].(string), e.admin, nil).want(200)
	})
}

// TestDeliveriesTimeFilterOffsets: since and until select the same
// attempts on SQLite as on PostgreSQL, and the ones time order says, for
// any offset and for fractions finer than the stores keep (a microsecond:
// finer digits are dropped, as PostgreSQL does).
func TestDeliveriesTimeFilterOffsets(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		ep1 := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		ep2 := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/b", "events": []string{"record_created"}})["id"].(string)
		rows := deliveryRows(t, e, ep1, ep2)
		// want lists, newest first, the rows whose start satisfies keep.
		want := func(keep func(at time.Time) bool) []string {
			out := []string{}
			for _, r := range slices.Backward(rows) {
				if keep(r.StartedAt) {
					out = append(out, r.ID)
				}
			}
			return out
		}
		zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+30*60), time.FixedZone("", 23*3600+59*60), time.FixedZone("", -(23*3600 + 59*60))}
		for i := range rows {
			at := rows[i].StartedAt
			for _, z := range zones {
				for _, c := range []struct {
					param string
					shift time.Duration
					keep  func(time.Time) bool
				}{
					{"since", 0, func(s time.Time) bool { return !s.Before(at) }},
					{"since", 500 * time.Nanosecond, func(s time.Time) bool { return !s.Before(at) }},
					{"since", time.Microsecond, func(s time.Time) bool { return s.After(at) }},
					{"until", 0, func(s time.Time) bool { return s.Before(at) }},
					{"until", 999 * time.Nanosecond, func(s time.Time) bool { return s.Before(at) }},
					{"until", time.Microsecond, func(s time.Time) bool { return !s.After(at) }},
				} {
					v := at.Add(c.shift).In(z).Format(time.RFC3339Nano)
					t.Run(c.param+"="+v, func(t *testing.T) {
						var page deliveryPage
						e.on(t).call("GET", "/api/admin/webhook-deliveries?"+c.param+"="+url.QueryEscape(v), e.admin, nil).want(200).decode(&page)
						if diff := cmp.Diff(want(c.keep), page.ids()); diff != "" {
							t.Errorf("ids (-want +got):\n%s", diff)
						}
					})
				}
			}
		}
	})
}
