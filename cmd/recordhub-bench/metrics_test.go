package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestScrape reads a real registry's page through HTTP, as the bench reads
// the service's: labelled and unlabelled samples, sums over labels, and a
// label value holding spaces and a brace.
func TestScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	starts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricStarts, Help: "starts"}, []string{"result"})
	starts.WithLabelValues("started").Add(7)
	starts.WithLabelValues("already_started").Add(2)
	odd := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricAttempts, Help: "attempts"}, []string{"outcome"})
	odd.WithLabelValues(`ok {"a b"}`).Add(3)
	odd.WithLabelValues("failed").Add(1)
	pending := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricPending, Help: "pending"})
	pending.Set(4)
	reg.MustRegister(starts, odd, pending)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	s := &service{addr: strings.TrimPrefix(srv.URL, "http://"), client: srv.Client()}
	m, err := s.scrape(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"started", m.get(metricStarts, "result", "started"), 7},
		{"already_started", m.get(metricStarts, "result", "already_started"), 2},
		{"unknown label value", m.get(metricStarts, "result", "nope"), 0},
		{"sum over labels", m.sum(metricStarts), 9},
		{"label value with spaces", m.get(metricAttempts, "outcome", `ok {"a b"}`), 3},
		{"gauge", m.get(metricPending), 4},
		{"absent metric", m.sum("recordhub_nothing"), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if v, err := s.metric(t.Context(), metricPending); err != nil || v != 4 {
		t.Errorf("metric(%s) = %v, %v; want 4", metricPending, v, err)
	}
	if _, err := s.metric(t.Context(), "recordhub_nothing"); err == nil {
		t.Error("metric of an absent series: no error")
	}

	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("recordhub_x{a=\"1\" 3\n"))
	}))
	defer broken.Close()
	s.addr = strings.TrimPrefix(broken.URL, "http://")
	if _, err := s.scrape(t.Context()); err == nil {
		t.Error("a malformed page scraped without error")
	}
}

func TestMachineCPU(t *testing.T) {
	a, err := machineCPU()
	if err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	x := 0
	for i := range 20_000_000 { // some work, so that the counters move
		x += i % 7
	}
	b, err := machineCPU()
	if err != nil {
		t.Fatal(err)
	}
	if a <= 0 || b < a {
		t.Errorf("machine CPU went from %v to %v (x=%d)", a, b, x)
	}
}
