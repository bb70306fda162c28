package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/console"
)

// TestConsoleRoute: the console is served at /console without a key (it
// holds no data), with its policy, by API processes only.
func TestConsoleRoute(t *testing.T) {
	page, err := console.New("/console", console.Config{TemporalUIURL: "http://localhost:8233", TemporalNamespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, opsOnly := range []bool{false, true} {
		srv := httptest.NewServer(api.New(api.Deps{Console: page, OpsOnly: opsOnly, Log: slog.New(slog.DiscardHandler)}).Handler())
		for _, p := range []string{"/console/", "/console/app.js"} {
			res, err := http.Get(srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			switch {
			case opsOnly && res.StatusCode != http.StatusNotFound:
				t.Errorf("worker process serves %s: %d", p, res.StatusCode)
			case !opsOnly && (res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") != console.Policy || len(body) == 0):
				t.Errorf("%s: %d, policy %q, %d bytes", p, res.StatusCode, res.Header.Get("Content-Security-Policy"), len(body))
			case !opsOnly && p == "/console/" && !strings.Contains(string(body), `content="http://localhost:8233"`):
				t.Errorf("the page does not carry the Temporal UI's URL:\n%s", body)
			}
		}
		srv.Close()
	}
}
