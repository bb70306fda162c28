package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Outputs of Debian's hey 0.1.4, trimmed.
const (
	heyMixed = `
Summary:
  Total:	2.0106 secs
  Slowest:	0.1027 secs
  Fastest:	0.0001 secs
  Average:	0.0052 secs
  Requests/sec:	1000.0000
  
  Total data:	348174 bytes
  Size/request:	18 bytes

Response time histogram:
  0.000 [1]	|
  0.010 [18088]	|■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■■

Latency distribution:
  10% in 0.0013 secs
  99% in 0.0463 secs

Details (average, fastest, slowest):
  DNS+dialup:	0.0000 secs, 0.0001 secs, 0.1027 secs

Status code distribution:
  [200]	1500 responses
  [429]	400 responses
  [500]	50 responses

Error distribution:
  [40]	Get "http://127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused
  [10]	Get "http://127.0.0.1:1/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)
`
	heyRefused = `
Summary:
  Total:	1.0017 secs
  Requests/sec:	9411.9245

Details (average, fastest, slowest):
  DNS+dialup:	 NaN secs, 0.0000 secs, 0.0000 secs

Status code distribution:

Error distribution:
  [9428]	Get "http://127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused
`
)

func TestParseHey(t *testing.T) {
	got, err := parseHey(heyMixed)
	if err != nil {
		t.Fatal(err)
	}
	want := heyResult{
		RPS: 1000, P99: 46300 * time.Microsecond,
		Statuses: map[int]int{200: 1500, 429: 400, 500: 50}, Failures: 50, Total: 2000,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseHey (-want +got):\n%s", diff)
	}
	if got, want := got.OKRPS(), 750.0; got != want {
		t.Errorf("OKRPS = %v, want %v: non-2xx answers are not successes", got, want)
	}
	if got, want := got.Errors(), 500; got != want {
		t.Errorf("Errors = %d, want %d", got, want)
	}
	if got, want := got.ErrorSummary(), "429×400 500×50 failed×50"; got != want {
		t.Errorf("ErrorSummary = %q, want %q", got, want)
	}
}

func TestParseHeyAllFailed(t *testing.T) {
	got, err := parseHey(heyRefused)
	if err != nil {
		t.Fatal(err)
	}
	if got.OKRPS() != 0 || got.Errors() != 9428 {
		t.Errorf("OKRPS = %v, Errors = %d; want 0 and 9428", got.OKRPS(), got.Errors())
	}
}

func TestParseHeyRejectsOtherOutput(t *testing.T) {
	for _, out := range []string{"", "Usage: hey [options...] <url>\n"} {
		if _, err := parseHey(out); err == nil {
			t.Errorf("parseHey(%q) = nil error", out)
		}
	}
}

func TestLoadArgs(t *testing.T) {
	l := load{URL: "http://x/r", Method: "POST", Body: "{}", Headers: []string{"Authorization: Bearer k"}, Duration: 10 * time.Second, Workers: 50}
	want := []string{"-c", "50", "-t", "30", "-z", "10s", "-m", "POST", "-T", "application/json", "-d", "{}", "-H", "Authorization: Bearer k", "http://x/r"}
	if diff := cmp.Diff(want, l.args()); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}
