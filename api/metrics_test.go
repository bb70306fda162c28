package api_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var requestSeries = regexp.MustCompile(`(?m)^recordhub_http_requests_total\{([^}]*)\}`)

// TestMetricLabelsAreBounded: invented methods, on known and unknown
// routes, share one method label and unknown routes share one route
// label, so that unauthenticated callers cannot grow /metrics.
func TestMetricLabelsAreBounded(t *testing.T) {
	srv, _ := newRawServer(t)
	for i := range 50 {
		method := fmt.Sprintf("INVENTED%d", i)
		for _, path := range []string{"/healthz", "/api/modules", fmt.Sprintf("/nowhere/%d", i)} {
			req, err := http.NewRequest(method, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	series := requestSeries.FindAllStringSubmatch(string(body), -1)
	standard := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "other"}
	for _, s := range series {
		labels := s[1]
		method := regexp.MustCompile(`method="([^"]*)"`).FindStringSubmatch(labels)
		if method == nil || !slices.Contains(standard, method[1]) {
			t.Errorf("series {%s}: method label outside %v", labels, standard)
		}
		if strings.Contains(labels, "nowhere") {
			t.Errorf("series {%s}: an unmatched path became a route label", labels)
		}
	}
	// /healthz, the unmatched routes and /api/modules (404 for an
	// invented method): one series each for "other", and the scrape's own.
	if len(series) > 5 {
		t.Errorf("%d request series after 50 invented methods, want at most 5:\n%s", len(series), strings.Join(requestSeriesText(series), "\n"))
	}
}

func requestSeriesText(series [][]string) []string {
	out := make([]string, len(series))
	for i, s := range series {
		out[i] = s[0]
	}
	return out
}
