package client_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/models"
)

// TestAccessLogs: the list takes every filter the client sends (the route
// refuses any other query parameter), and the iterator follows the
// cursors to the last page, newest first, every row once.
func TestAccessLogs(t *testing.T) {
	ctx := context.Background()
	c, store, tenantID := newAPIStore(t)
	key := "key_reader"
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var logs []models.AccessLog
	var want []string
	for i := range 7 {
		status := http.StatusOK
		if i%3 == 2 {
			status = http.StatusNotFound
		}
		l := models.AccessLog{
			ID: fmt.Sprintf("log_%02d", i), TenantID: &tenantID, KeyID: &key, Method: http.MethodGet,
			Path: "/api/modules", Route: "/api/modules", Status: status, RequestID: fmt.Sprintf("req_%d", i),
			CreatedAt: start.Add(time.Duration(i) * time.Minute),
		}
		logs = append(logs, l)
		if status == http.StatusOK {
			want = append([]string{l.ID}, want...)
		}
	}
	if err := store.InsertAccessLogs(ctx, logs); err != nil {
		t.Fatal(err)
	}

	q := client.AccessLogQuery{Limit: 2, KeyID: key, Status: http.StatusOK, Method: http.MethodGet, From: start, To: start.Add(time.Hour)}
	var got []string
	for l, err := range c.AccessLogs(ctx, q) {
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, l.ID)
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("walked (-got +want):\n%s", d)
	}

	q.Page = 2
	p, err := c.ListAccessLogs(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != int64(len(want)) || p.Page != 2 || len(p.Data) != 2 || p.Data[0].ID != want[2] || p.NextCursor == nil {
		t.Errorf("page 2 of 2: %+v, want rows 3 and 4 of %d and a cursor", p, len(want))
	}
}
