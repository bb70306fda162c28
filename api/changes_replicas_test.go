package api_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestChangesStreamAcrossReplicas: on PostgreSQL a stream on one API
// replica follows changes committed through another, woken by the
// other's NOTIFY: its own poll is set to an hour here, so nothing else
// would wake it.
func TestChangesStreamAcrossReplicas(t *testing.T) {
	db := storetest.NewDB(t, models.Postgres)
	storeA := db.Open(t, models.Options{AnnounceEvents: true})
	storeB := db.Open(t, models.Options{})
	storeB.ListenEvents(slog.New(slog.DiscardHandler))
	e := newEnvOn(t, storeA)
	replica := replicaOf(t, e, storeB, withChanges(api.ChangesOptions{Poll: time.Hour}))
	mod := e.createModule("orders", changeFields...)
	s, r := replica.openStream(mod, e.admin, "after=latest", "")
	if r != nil {
		t.Fatalf("stream: %d %s", r.status, r.body)
	}
	// A change may be held back behind a transaction still open on the
	// server when its NOTIFY arrives; the next commit's NOTIFY looks
	// again. So writes go on until one arrives.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		e.createRecord(mod, map[string]any{"title": "a"})
		select {
		case ev := <-s.events:
			if ev.Type != "record_created" {
				t.Errorf("event %+v, want a creation", ev)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("the other replica's commits never reached the stream")
}
