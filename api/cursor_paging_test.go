package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// cursorPageBody is a page of a list that pages by cursor, its rows
// reduced to their ids.
type cursorPageBody struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
	Total      int     `json:"total"`
	Page       *int    `json:"page"`
	Limit      int     `json:"limit"`
	NextCursor *string `json:"next_cursor"`
}

// walk reads every page of a list from the one q asks for (page 1, or
// no page at all, unless q sets page) by following next_cursor, and
// returns the ids in the order read. Each page must answer the same total
// and hold limit rows but the last; the last, and only it, has a null
// next_cursor, once wantRead rows were read.
func (e *env) walk(path string, q url.Values, limit, wantTotal, wantRead int) []string {
	e.t.Helper()
	q = cloneValues(q)
	q.Set("limit", fmt.Sprint(limit))
	var ids []string
	for pages := 0; ; pages++ {
		if pages > wantTotal+1 {
			e.t.Fatalf("%s?%s: still paging after %d pages", path, q.Encode(), pages)
		}
		var p cursorPageBody
		e.call("GET", path+"?"+q.Encode(), e.admin, nil).want(200).decode(&p)
		if p.Total != wantTotal {
			e.t.Errorf("%s?%s: total %d, want %d", path, q.Encode(), p.Total, wantTotal)
		}
		if _, byCursor := q["cursor"]; byCursor == (p.Page != nil) {
			e.t.Errorf("%s?%s: page %v in the answer; want it exactly when the call gave no cursor", path, q.Encode(), p.Page)
		}
		for _, r := range p.Data {
			ids = append(ids, r.ID)
		}
		if p.NextCursor == nil {
			if len(ids) != wantRead {
				e.t.Errorf("%s: next_cursor null after %d rows, want %d", path, len(ids), wantRead)
			}
			return ids
		}
		if len(p.Data) != limit {
			e.t.Fatalf("%s?%s: %d rows and a next_cursor, want %d rows", path, q.Encode(), len(p.Data), limit)
		}
		q.Del("page")
		q.Set("cursor", *p.NextCursor)
	}
}

// cloneValues copies q, so that a walk does not change its caller's query.
func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}

// seedTimes gives n rows times in runs of equal times (1 to 4 rows each),
// ids that are not in time order, and groups a, b, a, b, ...: every kind
// of tie a list must break by id.
func seedTimes(prefix string, n int, base time.Time) []row {
	rows := make([]row, n)
	at := base
	for i := range rows {
		if i%4 != 1 && i%7 != 3 {
			at = at.Add(time.Duration(i%3+1) * 1500 * time.Microsecond)
		}
		// ids shuffled against time: the tie-break must follow the id.
		rows[i] = row{id: fmt.Sprintf("%s%03d", prefix, (i*37)%n), at: at, group: []string{"a", "b"}[i%2]}
	}
	return rows
}

// newestFirst returns the ids of the rows of the group ("" all), in the
// lists' order: time, then id, both descending.
func newestFirst(rows []row, group string) []string {
	var sel []row
	for _, r := range rows {
		if group == "" || r.group == group {
			sel = append(sel, r)
		}
	}
	slices.SortFunc(sel, func(x, y row) int {
		if c := y.at.Compare(x.at); c != 0 {
			return c
		}
		return strings.Compare(y.id, x.id)
	})
	ids := make([]string, len(sel))
	for i, r := range sel {
		ids[i] = r.id
	}
	return ids
}

// TestCursorPaging walks the deliveries, access logs and inbound events
// by cursor, with and without filters, at several page sizes: every row
// comes exactly once, in the list's order, ties in time broken by id.
func TestCursorPaging(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		ctx := context.Background()
		const n = 53
		base := time.Date(2020, 3, 1, 12, 0, 0, 0, time.UTC)

		deliveries := seedTimes("whd_", n, base)
		for _, r := range deliveries {
			status := 200
			err := e.store.InsertAttempt(ctx, &models.WebhookDelivery{ID: r.id, TenantID: e.tenantID, EventID: "evt_" + r.id,
				EventType: models.EventRecordCreated, EndpointID: "whe_" + r.group, WorkflowID: "wf", RunID: "run", Attempt: 1,
				RequestURL: "https://example.com/", RequestBody: "{}", ResponseStatus: &status,
				StartedAt: r.at, FinishedAt: r.at, Succeeded: r.group == "a"})
			if err != nil {
				t.Fatal(err)
			}
		}
		logs := seedTimes("log_", n, base)
		keyA, keyB := "key_a", "key_b"
		batch := make([]models.AccessLog, len(logs))
		for i, r := range logs {
			key := &keyA
			if r.group == "b" {
				key = &keyB
			}
			batch[i] = models.AccessLog{ID: r.id, TenantID: &e.tenantID, KeyID: key, Method: "GET", Path: "/api/modules",
				Route: "/api/modules", Status: 200, RequestID: "req", CreatedAt: r.at}
		}
		if err := e.store.InsertAccessLogs(ctx, batch); err != nil {
			t.Fatal(err)
		}
		module := e.createModule("pages")
		inbound := seedTimes("ibe_", n, base)
		for _, r := range inbound {
			err := e.store.RecordInboundEvent(ctx, &models.InboundEvent{ID: r.id, TenantID: e.tenantID, ModuleID: module,
				WebhookID: "ibw_1", RequestID: "req", Status: 401, Error: "invalid_signature", ReceivedAt: r.at})
			if err != nil {
				t.Fatal(err)
			}
		}
		// The access log also holds this test's own calls: the seeded
		// rows are those before them.
		seededLogs := url.Values{"to": {base.Add(time.Hour).Format(time.RFC3339)}}

		for _, tc := range []struct {
			name  string
			path  string
			query url.Values
			want  []string
		}{
			{"deliveries", "/api/admin/webhook-deliveries", nil, newestFirst(deliveries, "")},
			{"deliveries of an endpoint", "/api/admin/webhook-deliveries", url.Values{"endpoint_id": {"whe_b"}}, newestFirst(deliveries, "b")},
			{"deliveries that succeeded", "/api/admin/webhook-deliveries", url.Values{"succeeded": {"true"}}, newestFirst(deliveries, "a")},
			{"access logs", "/api/admin/access-logs", seededLogs, newestFirst(logs, "")},
			{"access logs of a key", "/api/admin/access-logs", url.Values{"key_id": {keyA}, "to": seededLogs["to"]}, newestFirst(logs, "a")},
			{"inbound events", "/api/admin/modules/" + module + "/inbound-events", nil, newestFirst(inbound, "")},
		} {
			for _, limit := range []int{1, 4, 10, 100} {
				t.Run(fmt.Sprintf("%s by %d", tc.name, limit), func(t *testing.T) {
					got := e.on(t).walk(tc.path, tc.query, limit, len(tc.want), len(tc.want))
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("ids read by cursor (-want +got):\n%s", diff)
					}
				})
			}
			t.Run(tc.name+" from page 2", func(t *testing.T) {
				// A walk may begin with page: page 2's next_cursor continues it.
				q := cloneValues(tc.query)
				q.Set("page", "2")
				got := e.on(t).walk(tc.path, q, 5, len(tc.want), len(tc.want)-5)
				if diff := cmp.Diff(tc.want[5:], got); diff != "" {
					t.Errorf("ids read from page 2 (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestCursorPagingRefusals: a page beyond the offset cap, a cursor with
// page, and a cursor that is not one the list answered are 400s that say
// what to do.
func TestCursorPagingRefusals(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		ctx := context.Background()
		base := time.Date(2020, 3, 1, 12, 0, 0, 0, time.UTC)
		for i := range 3 {
			at := base.Add(time.Duration(i) * time.Second)
			if err := e.store.InsertAttempt(ctx, &models.WebhookDelivery{ID: fmt.Sprintf("whd_%d", i), TenantID: e.tenantID, EventID: "evt",
				EventType: models.EventRecordCreated, EndpointID: "whe_1", WorkflowID: "wf", RunID: "run", Attempt: 1,
				RequestURL: "https://example.com/", RequestBody: "{}", StartedAt: at, FinishedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		module := e.createModule("refusals")
		lists := map[string]string{
			"deliveries":     "/api/admin/webhook-deliveries",
			"access logs":    "/api/admin/access-logs",
			"inbound events": "/api/admin/modules/" + module + "/inbound-events",
		}
		var first cursorPageBody
		e.call("GET", lists["deliveries"]+"?limit=1", e.admin, nil).want(200).decode(&first)
		if first.NextCursor == nil {
			t.Fatalf("first page of 3 deliveries by 1: next_cursor null")
		}
		cursor := *first.NextCursor
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			t.Fatalf("next_cursor %q is not base64url: %v", cursor, err)
		}
		edited := slices.Clone(raw)
		edited[len(edited)-6] ^= 1 // a character of the id
		cut := raw[:len(raw)-1]

		for name, path := range lists {
			for _, tc := range []struct {
				query, wantInMessage string
			}{
				{"page=501", "next_cursor"},
				{"limit=100&page=101", "next_cursor"},
				{"limit=1&page=10001", "next_cursor"},
				{"page=1073741824", "next_cursor"},
				{"page=1&cursor=" + cursor, "not both"},
				{"cursor=" + cursor + "&page=2", "not both"},
				{"cursor=", "next_cursor"},
				{"cursor=abc%21", "next_cursor"},
				{"cursor=" + base64.RawURLEncoding.EncodeToString(edited), "next_cursor"},
				{"cursor=" + base64.RawURLEncoding.EncodeToString(cut), "next_cursor"},
				{"cursor=" + cursor + "%3D", "next_cursor"},
				{"cursor=" + cursor + "&limit=0", "limit"},
			} {
				t.Run(name+" "+tc.query, func(t *testing.T) {
					r := e.on(t).call("GET", path+"?"+tc.query, e.admin, nil).want(400)
					wantErrorBody(t, r, "invalid_request")
					if msg, _ := r.json()["message"].(string); !strings.Contains(msg, tc.wantInMessage) {
						t.Errorf("message %q, want it to mention %q", msg, tc.wantInMessage)
					}
				})
			}
		}
		t.Run("another list's cursor", func(t *testing.T) {
			for _, name := range []string{"access logs", "inbound events"} {
				r := e.on(t).call("GET", lists[name]+"?cursor="+cursor, e.admin, nil).want(400)
				wantErrorBody(t, r, "invalid_request")
			}
		})
		t.Run("deepest pages by page", func(t *testing.T) {
			for _, q := range []string{"page=500", "limit=100&page=100", "limit=1&page=10000"} {
				for _, path := range lists {
					e.on(t).call("GET", path+"?"+q, e.admin, nil).want(200)
				}
			}
		})
	})
}

// TestCursorPagingPastTheCap: with more rows than page reaches, total
// stops at the cap and says so, the deepest page by page hands over to
// next_cursor, and the cursor reads the rest.
func TestCursorPagingPastTheCap(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		const n = 10_007
		base := time.Date(2020, 3, 1, 12, 0, 0, 0, time.UTC)
		keyA, keyB := "key_a", "key_b"
		logs := make([]models.AccessLog, n)
		for i := range logs {
			key := &keyA
			if i%1000 == 0 {
				key = &keyB
			}
			logs[i] = models.AccessLog{ID: fmt.Sprintf("log_%05d", i), TenantID: &e.tenantID, KeyID: key, Method: "GET", Path: "/",
				Route: "/", Status: 200, RequestID: "req", CreatedAt: base.Add(time.Duration(i) * time.Millisecond)}
		}
		if err := e.store.InsertAccessLogs(context.Background(), logs); err != nil {
			t.Fatal(err)
		}
		to := base.Add(time.Hour).Format(time.RFC3339)
		type capped struct {
			cursorPageBody
			TotalCapped bool `json:"total_capped"`
		}
		for _, tc := range []struct {
			query      string
			wantTotal  int
			wantCapped bool
		}{
			{"to=" + to, 10_000, true},
			{"to=" + to + "&key_id=" + keyB, 11, false},
			{"to=" + to + "&key_id=" + keyA, 9_996, false},
		} {
			var p capped
			e.call("GET", "/api/admin/access-logs?"+tc.query, e.admin, nil).want(200).decode(&p)
			if p.Total != tc.wantTotal || p.TotalCapped != tc.wantCapped {
				t.Errorf("%s: total %d, total_capped %v; want %d, %v", tc.query, p.Total, p.TotalCapped, tc.wantTotal, tc.wantCapped)
			}
		}

		var last cursorPageBody
		e.call("GET", "/api/admin/access-logs?limit=100&page=100&to="+to, e.admin, nil).want(200).decode(&last)
		if len(last.Data) != 100 || last.Data[99].ID != "log_00007" || last.NextCursor == nil {
			t.Fatalf("page 100 by 100: %d rows, next_cursor %v; want 100 rows ending at log_00007 and a next_cursor", len(last.Data), last.NextCursor)
		}
		var rest cursorPageBody
		e.call("GET", "/api/admin/access-logs?limit=100&to="+to+"&cursor="+url.QueryEscape(*last.NextCursor), e.admin, nil).want(200).decode(&rest)
		var got []string
		for _, r := range rest.Data {
			got = append(got, r.ID)
		}
		want := []string{"log_00006", "log_00005", "log_00004", "log_00003", "log_00002", "log_00001", "log_00000"}
		if diff := cmp.Diff(want, got); diff != "" || rest.NextCursor != nil {
			t.Errorf("past page 100 by cursor (-want +got):\n%s\nnext_cursor %v, want null", diff, rest.NextCursor)
		}
		r := e.call("GET", "/api/admin/access-logs?limit=100&page=101&to="+to, e.admin, nil).want(400)
		wantErrorBody(t, r, "invalid_request")
	})
}
