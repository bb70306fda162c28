package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)

// cleanRun is a run in which n records were written (write i+1 made
// rec_<i>, at its first try), committed, delivered once each on the first
// attempt, 10 ms after their commit.
func cleanRun(n int) observations {
	o := observations{Records: map[string]int64{}}
	for i := range n {
		rec, evt := fmt.Sprintf("rec_%03d", i), fmt.Sprintf("evt_%03d", i)
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		o.Writes = append(o.Writes, write{Tenant: "a", N: int64(i + 1), Key: fmt.Sprintf("chaos-a-%d", i+1), Replica: "api 1", At: at,
			Took: 5 * time.Millisecond, Tries: 1, Status: 201, RecordID: rec})
		o.Records[rec] = int64(i + 1)
		o.Events = append(o.Events, event{ID: evt, RecordID: rec, OccurredAt: at})
		o.Requests = append(o.Requests, request{EventID: evt, Attempt: 1, RecordID: rec, Version: 1, At: at.Add(10 * time.Millisecond), Status: 204})
		o.Rows = append(o.Rows, attemptRow{EventID: evt, Attempt: 1, Succeeded: true})
	}
	return o
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name   string
		change func(*observations)
		want   []string // substrings of the failures, in order; none: passes
	}{
		{"clean run", func(*observations) {}, nil},
		{"unacknowledged writes, applied or not, do not fail", func(o *observations) {
			o.Writes = append(o.Writes,
				write{N: 1001, Tries: 30, Status: 0, Err: "connection refused"},
				write{N: 1002, Tries: 30, Status: 503},
			)
			// A commit whose answer was lost: committed and delivered.
			o.Records["rec_x"] = 1001
			o.Events = append(o.Events, event{ID: "evt_x", RecordID: "rec_x", OccurredAt: t0})
			o.Requests = append(o.Requests, request{EventID: "evt_x", Attempt: 1, At: t0.Add(time.Second), Status: 204})
			o.Rows = append(o.Rows, attemptRow{EventID: "evt_x", Attempt: 1, Succeeded: true})
		}, nil},
		{"acknowledged write lost", func(o *observations) {
			delete(o.Records, "rec_007")
		}, []string{"1 acknowledged writes are not in the database"}},
		{"a replayed 201 acknowledges its write", func(o *observations) {
			o.Writes[5].Tries, o.Writes[5].Replayed = 3, true
		}, nil},
		{"acknowledged write lost, though replayed", func(o *observations) {
			o.Writes[5].Tries, o.Writes[5].Replayed = 3, true
			delete(o.Records, "rec_005")
		}, []string{"1 acknowledged writes are not in the database"}},
		{"acknowledged write applied twice", func(o *observations) {
			// Its first try was applied but its answer lost; the retry
			// was applied again instead of replayed. Both records were
			// delivered: only the duplicate fails.
			o.Records["rec_dup"] = o.Records["rec_004"]
			o.Events = append(o.Events, event{ID: "evt_dup", RecordID: "rec_dup", OccurredAt: t0})
			o.Requests = append(o.Requests, request{EventID: "evt_dup", Attempt: 1, At: t0.Add(time.Second), Status: 204})
			o.Rows = append(o.Rows, attemptRow{EventID: "evt_dup", Attempt: 1, Succeeded: true})
		}, []string{"1 duplicate records"}},
		{"unacknowledged write applied three times", func(o *observations) {
			o.Writes = append(o.Writes, write{N: 1001, Tries: 30, Status: 503})
			for _, id := range []string{"rec_x", "rec_y", "rec_z"} {
				o.Records[id] = 1001
				o.Events = append(o.Events, event{ID: "evt" + id, RecordID: id, OccurredAt: t0})
				o.Requests = append(o.Requests, request{EventID: "evt" + id, Attempt: 1, At: t0.Add(time.Second), Status: 204})
				o.Rows = append(o.Rows, attemptRow{EventID: "evt" + id, Attempt: 1, Succeeded: true})
			}
		}, []string{"2 duplicate records"}},
		{"delivery never answered 2xx", func(o *observations) {
			o.Requests[3].Status = 500
			o.Rows[3] = attemptRow{EventID: "evt_003", Attempt: 1, Error: "http_status"}
		}, []string{"1 deliveries missing"}},
		{"delivery never sent", func(o *observations) {
			o.Requests = o.Requests[1:]
			o.Rows = o.Rows[1:]
		}, []string{"1 deliveries missing"}},
		{"committed record without its event", func(o *observations) {
			o.Events = o.Events[:len(o.Events)-1]
		}, []string{"1 deliveries missing"}},
		{"doubled beyond 1 %", func(o *observations) {
			for i := range 2 {
				r := o.Requests[i]
				r.Attempt, r.At = 2, r.At.Add(time.Minute)
				o.Requests = append(o.Requests, r)
				o.Rows = append(o.Rows, attemptRow{EventID: r.EventID, Attempt: 2, Succeeded: true})
			}
		}, []string{"2.00 % of deliveries doubled"}},
		{"doubled within 1 %", func(o *observations) {
			r := o.Requests[0]
			r.Attempt = 2
			o.Requests = append(o.Requests, r)
			o.Rows = append(o.Rows, attemptRow{EventID: r.EventID, Attempt: 2, Succeeded: true})
		}, nil},
		{"a failed attempt and its successful retry are not doubled", func(o *observations) {
			o.Requests[0].Status = 500
			o.Rows[0] = attemptRow{EventID: "evt_000", Attempt: 1, Error: "http_status"}
			o.Requests = append(o.Requests, request{EventID: "evt_000", Attempt: 2, At: t0.Add(time.Minute), Status: 204})
			o.Rows = append(o.Rows, attemptRow{EventID: "evt_000", Attempt: 2, Succeeded: true})
		}, nil},
		{"row left in flight", func(o *observations) {
			o.Rows = append(o.Rows, attemptRow{EventID: "evt_004", Attempt: 2, Error: "in_flight"})
		}, []string{"1 attempt rows left in_flight"}},
		{"request without its row", func(o *observations) {
			o.Requests = append(o.Requests, request{EventID: "evt_005", Attempt: 2, At: t0.Add(time.Minute), Status: 500})
		}, []string{"1 requests the receiver saw have no attempt row"}},
		{"nothing acknowledged", func(o *observations) {
			for i := range o.Writes {
				o.Writes[i].Status, o.Writes[i].RecordID = 503, ""
			}
		}, []string{"no write was acknowledged"}},
		{"several at once", func(o *observations) {
			delete(o.Records, "rec_001")
			o.Rows = append(o.Rows, attemptRow{EventID: "evt_002", Attempt: 2, Error: "in_flight"})
			o.Requests = o.Requests[:len(o.Requests)-1]
		}, []string{"acknowledged writes are not in the database", "1 deliveries missing", "in_flight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := cleanRun(100)
			tt.change(&o)
			v := judge(o)
			if len(v.Failures) != len(tt.want) {
				t.Fatalf("failures = %q, want %d matching %q", v.Failures, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(v.Failures[i], w) {
					t.Errorf("failure %d = %q, want it to contain %q", i, v.Failures[i], w)
				}
			}
		})
	}
}

func TestJudgeCounts(t *testing.T) {
	o := cleanRun(10)
	// Write 11 got no answer within its bound but was applied; write 12
	// was refused until its bound ended, and was not.
	o.Writes = append(o.Writes,
		write{N: 11, Tries: 30, Took: writeBound, Status: 0, Err: "connection refused"},
		write{N: 12, Tries: 30, Took: writeBound, Status: 503})
	o.Records["rec_010"] = 11
	o.Events = append(o.Events, event{ID: "evt_010", RecordID: "rec_010", OccurredAt: t0})
	o.Requests = append(o.Requests, request{EventID: "evt_010", Attempt: 1, At: t0.Add(10 * time.Millisecond), Status: 204})
	o.Rows = append(o.Rows, attemptRow{EventID: "evt_010", Attempt: 1, Succeeded: true})
	// Write 3 was answered by a repeat, its 201 replayed, after 4 s.
	o.Writes[2].Tries, o.Writes[2].Replayed, o.Writes[2].Took = 3, true, 4*time.Second
	// Write 4 was applied twice.
	o.Records["rec_003b"] = 4
	o.Events = append(o.Events, event{ID: "evt_003b", RecordID: "rec_003b", OccurredAt: t0})
	o.Requests = append(o.Requests, request{EventID: "evt_003b", Attempt: 1, At: t0.Add(10 * time.Millisecond), Status: 204})
	o.Rows = append(o.Rows, attemptRow{EventID: "evt_003b", Attempt: 1, Succeeded: true})
	// evt_000: a worker frozen past its timeout: the retry and the thawed
	// attempt both answered 2xx.
	o.Requests = append(o.Requests, request{EventID: "evt_000", Attempt: 2, At: t0.Add(time.Minute), Status: 204})
	o.Rows = append(o.Rows, attemptRow{EventID: "evt_000", Attempt: 2, Succeeded: true})
	// evt_001: a row whose request never arrived, settled by the next attempt.
	o.Rows = append(o.Rows, attemptRow{EventID: "evt_001", Attempt: 2, Error: "worker_lost"})
	// Two slow ones.
	o.Requests[4].At = o.Events[4].OccurredAt.Add(5 * time.Second)
	o.Requests[6].At = o.Events[6].OccurredAt.Add(2 * time.Second)
	got := judge(o)
	got.Failures, got.Latency = nil, latency{}
	want := verdict{
		Writes: 12, Acked: 10, Replayed: 1, Retried: 3, FailedAnswers: map[string]int{"no answer": 1, "503": 1},
		UnackedApplied: 1, UnackedNotApplied: 1,
		Duplicates: 1, DuplicateExamples: []string{"write 4: rec_003, rec_003b"},
		LongestAck: 4 * time.Second, Committed: 12, Events: 12, Delivered: 12,
		Doubled: 1, DoubledShare: 1.0 / 12,
		Rows: 14, Requests: 13, RowsWithoutRequest: 1,
		Slowest: []slowDelivery{
			{"evt_004", o.Events[4].OccurredAt, 5 * time.Second},
			{"evt_006", o.Events[6].OccurredAt, 2 * time.Second},
			{"evt_000", o.Events[0].OccurredAt, 10 * time.Millisecond},
		},
		DoubledExamples: []string{"evt_000 (attempt 1 at 06:00:00.0, attempt 2 at 06:01:00.0)"},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("verdict (-got +want):\n%s", diff)
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := percentiles(ds)
	want := latency{N: 100, P50: 50 * time.Millisecond, P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if got != want {
		t.Errorf("percentiles = %+v, want %+v", got, want)
	}
	if got := percentiles(nil); got != (latency{}) {
		t.Errorf("percentiles(nil) = %+v, want zero", got)
	}
	if got := percentiles([]time.Duration{7}); got.P50 != 7 || got.P99 != 7 || got.Max != 7 {
		t.Errorf("percentiles of one = %+v", got)
	}
}
