package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
)

func TestSummarize(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(100 - i) // 1..100 ms, unsorted
	}
	for _, c := range []struct {
		name string
		lat  []time.Duration
		want latencies
	}{
		{"none", nil, latencies{p50: noArrival, p99: noArrival, max: noArrival}},
		{"one", []time.Duration{ms(7)}, latencies{n: 1, p50: ms(7), p99: ms(7), max: ms(7)}},
		{"a hundred", hundred, latencies{n: 100, p50: ms(50), p99: ms(99), max: ms(100)}},
		{"one never came: slower than all", append(hundred[:99:99], noArrival), latencies{n: 100, never: 1, p50: ms(51), p99: ms(100), max: noArrival}},
		{"all never came", []time.Duration{noArrival, noArrival}, latencies{n: 2, never: 2, p50: noArrival, p99: noArrival, max: noArrival}},
		{"a request before the create's answer", []time.Duration{ms(-1), ms(5)}, latencies{n: 2, p50: ms(-1), p99: ms(5), max: ms(5)}},
	} {
		got := summarize(c.lat)
		if d := cmp.Diff(got, c.want, cmp.AllowUnexported(latencies{})); d != "" {
			t.Errorf("%s: (-got +want)\n%s", c.name, d)
		}
	}
	if got, want := summarize([]time.Duration{ms(3), noArrival}).String(), "3.0 / never / never ms, 1 of 2 never"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
}

func TestLargestAccepted(t *testing.T) {
	refuseAbove := func(limit, code int, tried *[]int) func(int) error {
		return func(size int) error {
			*tried = append(*tried, size)
			if size > limit {
				return &client.Error{Status: code, Code: "refused"}
			}
			return nil
		}
	}
	for _, c := range []struct {
		name      string
		limit     int
		code      int
		want      int
		wantTried []int
		wantErr   bool
	}{
		{"taken at once", 1 << 20, 422, 1000, []int{1000}, false},
		{"422 halves", 300, 422, 250, []int{1000, 500, 250}, false},
		{"413 halves", 600, 413, 500, []int{1000, 500}, false},
		{"another status stops", 300, 400, 0, []int{1000}, true},
		{"not below the floor", 100, 422, 0, []int{1000, 500, 250}, true},
	} {
		var tried []int
		got, err := largestAccepted(1000, 200, refuseAbove(c.limit, c.code, &tried))
		if got != c.want || (err != nil) != c.wantErr || !cmp.Equal(tried, c.wantTried) {
			t.Errorf("%s: got %d, %v after %v; want %d (error %v) after %v", c.name, got, err, tried, c.want, c.wantErr, c.wantTried)
		}
	}
	if _, err := largestAccepted(1000, 200, func(int) error { return errors.New("connection refused") }); err == nil {
		t.Error("a transport error: no error")
	}
}

// TestReceiverTally sends to a holding receiver through HTTP as the
// service would: the same (event, attempt) twice counts once as doubled,
// another attempt of it does not, and a sender that gives up ends the hold.
func TestReceiverTally(t *testing.T) {
	r, err := startHoldingReceiver(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	send := func(event, attempt string) {
		req := httptest.NewRequest("POST", r.URL("/hook"), strings.NewReader(`{"record":{"id":"rec_1"}}`))
		req.RequestURI = ""
		req.Header.Set("X-Webhook-Id", event)
		req.Header.Set("X-Webhook-Attempt", attempt)
		if _, err := client.Do(req); err == nil {
			t.Errorf("%s/%s: answered within the client's timeout; the receiver should hold it", event, attempt)
		}
	}
	from := time.Now()
	send("evt_1", "1")
	send("evt_1", "1")
	send("evt_1", "2")
	send("evt_2", "1")
	if got, ex := r.doubled(); got != 1 || len(ex) != 1 || !strings.HasPrefix(ex[0], "evt_1 attempt 1: 2 requests over ") {
		t.Errorf("doubled: got %d, %q; want 1, evt_1 attempt 1: 2 requests over …", got, ex)
	}
	if got := r.arrivedBetween(from, time.Now()); got != 4 {
		t.Errorf("arrived in the window: got %d, want 4", got)
	}
	if got := r.arrivedBetween(time.Now(), time.Now().Add(time.Hour)); got != 0 {
		t.Errorf("arrived after the window: got %d, want 0", got)
	}
}
