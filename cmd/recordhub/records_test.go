package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestRecordsFollow: `records follow` against a served API prints each
// change of a module, named by its slug, as one JSON line with its cursor;
// Ctrl-C ends it without an error, and the service then stops gracefully
// while another stream is open (a stream does not hold up the shutdown).
func TestRecordsFollow(t *testing.T) {
	cfg := webhookConfig(t, models.SQLite)
	key := cfg.BootstrapAdminKey
	base, stop := startService(t, cfg, io.Discard)
	mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{
		"slug": "orders", "name": "Orders", "fields": []map[string]any{{"name": "title", "type": "string"}},
	})["id"].(string)
	start := jsonCall(t, "GET", base+"/api/modules/"+mod+"/changes?after=latest", key, nil)["next_cursor"].(string)
	rec := jsonCall(t, "POST", base+"/api/modules/"+mod+"/records", key, map[string]any{"fields": map[string]any{"title": "first"}})["id"].(string)

	env := map[string]string{"RECORDHUB_API_KEY": key}
	follow := func(ctx context.Context, out, errOut *syncBuffer, args ...string) <-chan error {
		done := make(chan error, 1)
		go func() {
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			done <- runCommand(ctx, append([]string{"records", "follow", "--api", base}, args...), lookup, nil, out, errOut)
		}()
		return done
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := follow(ctx, &out, &errOut, "orders", "--after", start)
	storetest.Eventually(t, 20*time.Second, "the change printed", func() bool { return strings.Contains(out.String(), "\n") })
	var line struct {
		Cursor string `json:"cursor"`
		Event  string `json:"event"`
		Record struct {
			ID     string         `json:"id"`
			Fields map[string]any `json:"fields"`
		} `json:"record"`
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("line %q: %v", first, err)
	}
	if line.Event != "record_created" || line.Record.ID != rec || line.Cursor == "" || line.Record.Fields["title"] != "first" {
		t.Errorf("printed %s, want the creation of %s with its cursor", first, rec)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("follow ended with %v (stderr %q), want nothing after Ctrl-C", err, errOut.String())
	}

	// A stream still open when the service stops ends with it.
	var out2, errOut2 syncBuffer
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	follow(ctx2, &out2, &errOut2, mod, "--after", line.Cursor)
	jsonCall(t, "POST", base+"/api/modules/"+mod+"/records", key, map[string]any{"fields": map[string]any{"title": "second"}})
	storetest.Eventually(t, 20*time.Second, "the second follow streaming", func() bool { return strings.Contains(out2.String(), "second") })
	if strings.Contains(out2.String(), `"first"`) {
		t.Errorf("resumed after the first change, printed it again: %s", out2.String())
	}
	if err := stop(); err != nil {
		t.Errorf("the service's stop with a stream open: %v, want a graceful stop", err)
	}
}
