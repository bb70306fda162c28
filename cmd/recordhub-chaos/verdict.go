package main

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/models"
)

// maxDoubledShare is the share of delivered events that may have been
// answered 2xx more than once: a worker frozen past its attempt's timeout
// sends its request after the retry did (at-least-once delivery; receivers
// dedupe on webhook-id).
const maxDoubledShare = 0.01

// write is one create the load sent, with all its tries.
type write struct {
	Tenant string
	// N numbers the write; the record carries it in custom_data.write.
	N   int64
	Key string // its Idempotency-Key, the same on every try
	At  time.Time
	// Took is from the first try to the last answer (or the bound).
	Took     time.Duration
	Tries    int
	Replica  string // the last try's
	Status   int    // the last answer's; 0: no answer
	Err      string // the transport's error, when there was no answer
	RecordID string // set on 201
	Replayed bool   // the 201 was the first try's, answered again
}

// request is one request the receiver saw.
type request = harness.Request

// event is an outbox event of a committed record, as the database holds it.
type event struct {
	ID, RecordID string
	OccurredAt   time.Time // written in the record's transaction
}

// attemptRow is one webhook_deliveries row.
type attemptRow struct {
	EventID   string
	Attempt   int
	Error     string
	Succeeded bool
}

// observations is everything the harness saw, once the stack was quiet.
type observations struct {
	Writes []write
	// Records are the committed records of the load's modules: id → the
	// write number in its custom_data (0: none).
	Records  map[string]int64
	Events   []event
	Requests []request
	Rows     []attemptRow
}

// verdict is what the observations add up to.
type verdict struct {
	Writes, Acked, Lost int
	// Replayed are the acknowledged writes whose 201 was a repeat's,
	// answered from the first try; Retried the writes sent more than once.
	Replayed, Retried int
	// FailedAnswers counts the writes without a 201, by last answer.
	FailedAnswers map[string]int
	// Of the writes without a 201: those a record in the database carries
	// (applied, the answer lost), and those none does.
	UnackedApplied, UnackedNotApplied int
	// Duplicates are records beyond the first of their write: a write
	// applied more than once.
	Duplicates int
	Committed  int
	// LongestAck is the longest an acknowledged write took, retries
	// included.
	LongestAck         time.Duration
	Events             int
	Delivered, Missing int
	Doubled            int
	DoubledShare       float64 // of delivered events
	InFlight           int
	Rows, Requests     int
	RequestsNon2xx     int
	RequestsWithoutRow int
	// RowsWithoutRequest are finished rows whose request the receiver
	// never saw: refused connections, worker_lost rows of requests that
	// never left.
	RowsWithoutRequest int
	Latency            latency
	// Slowest are the deliveries slowest to their first request, slowest
	// first, to be read beside the log of the faults.
	Slowest []slowDelivery
	// The first few of each kind of failure, and of the doubled.
	LostExamples, DuplicateExamples, MissingExamples, WithoutRowExamples, DoubledExamples []string
	Failures                                                                              []string // empty: the run passed
}

// slowDelivery is one delivery and how long its first request took.
type slowDelivery struct {
	EventID   string
	Committed time.Time
	Latency   time.Duration
}

// latency is commit → first request over the delivered events.
type latency struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

const examples = 5

// judge turns observations into the verdict.
func judge(o observations) verdict {
	var v verdict
	v.judgeWrites(o)
	v.judgeDeliveries(o)
	v.judgeRows(o)
	if v.Acked == 0 {
		v.Failures = append(v.Failures, "no write was acknowledged: nothing was measured")
	}
	if v.Lost > 0 {
		v.Failures = append(v.Failures, fmt.Sprintf("%d acknowledged writes are not in the database", v.Lost))
	}
	if v.Duplicates > 0 {
		v.Failures = append(v.Failures, fmt.Sprintf("%d duplicate records (a write applied more than once)", v.Duplicates))
	}
	if v.Missing > 0 {
		v.Failures = append(v.Failures, fmt.Sprintf("%d deliveries missing", v.Missing))
	}
	if v.DoubledShare > maxDoubledShare {
		v.Failures = append(v.Failures, fmt.Sprintf("%.2f %% of deliveries doubled (at most %.0f %%)", 100*v.DoubledShare, 100*maxDoubledShare))
	}
	if v.InFlight > 0 {
		v.Failures = append(v.Failures, fmt.Sprintf("%d attempt rows left in_flight", v.InFlight))
	}
	if v.RequestsWithoutRow > 0 {
		v.Failures = append(v.Failures, fmt.Sprintf("%d requests the receiver saw have no attempt row", v.RequestsWithoutRow))
	}
	return v
}

// judgeWrites compares the writes with the committed records: each
// acknowledged write's record must be there; a write without a 201 may or
// may not have been applied (its answer was lost, or the bound ended its
// retries), which the records' write numbers tell; and no write may have
// more than one record.
func (v *verdict) judgeWrites(o observations) {
	v.FailedAnswers = map[string]int{}
	v.Writes = len(o.Writes)
	v.Committed = len(o.Records)
	byWrite := map[int64][]string{} // write number → its records
	for _, id := range slices.Sorted(maps.Keys(o.Records)) {
		if n := o.Records[id]; n != 0 {
			byWrite[n] = append(byWrite[n], id)
		}
	}
	for _, w := range o.Writes {
		if w.Tries > 1 {
			v.Retried++
		}
		if w.RecordID == "" {
			v.FailedAnswers[answerOf(w)]++
			if len(byWrite[w.N]) > 0 {
				v.UnackedApplied++
			} else {
				v.UnackedNotApplied++
			}
			continue
		}
		v.Acked++
		v.LongestAck = max(v.LongestAck, w.Took)
		if w.Replayed {
			v.Replayed++
		}
		if _, ok := o.Records[w.RecordID]; !ok {
			v.Lost++
			v.LostExamples = appendExample(v.LostExamples, fmt.Sprintf("write %d (%s)", w.N, w.RecordID))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(byWrite)) {
		if ids := byWrite[n]; len(ids) > 1 {
			v.Duplicates += len(ids) - 1
			v.DuplicateExamples = appendExample(v.DuplicateExamples, fmt.Sprintf("write %d: %s", n, strings.Join(ids, ", ")))
		}
	}
}

// judgeDeliveries compares the committed records' events with the
// requests the receiver answered 2xx.
func (v *verdict) judgeDeliveries(o observations) {
	first := map[string]time.Time{} // event id → first request
	ok := map[string][]request{}    // event id → requests answered 2xx
	for _, r := range o.Requests {
		if t, seen := first[r.EventID]; !seen || r.At.Before(t) {
			first[r.EventID] = r.At
		}
		if r.Status/100 == 2 {
			ok[r.EventID] = append(ok[r.EventID], r)
		} else {
			v.RequestsNon2xx++
		}
	}
	withEvent := map[string]bool{}
	var delivered []slowDelivery
	for _, e := range o.Events {
		if _, ok := o.Records[e.RecordID]; !ok {
			continue
		}
		withEvent[e.RecordID] = true
		v.Events++
		switch rs := ok[e.ID]; {
		case len(rs) == 0:
			v.Missing++
			v.MissingExamples = appendExample(v.MissingExamples, e.ID)
		default:
			v.Delivered++
			if len(rs) > 1 {
				v.Doubled++
				v.DoubledExamples = appendExample(v.DoubledExamples, doubled(e.ID, rs))
			}
		}
		if t, seen := first[e.ID]; seen {
			delivered = append(delivered, slowDelivery{e.ID, e.OccurredAt, t.Sub(e.OccurredAt)})
		}
	}
	// A committed record without its event is a delivery that can never
	// happen: the outbox lost it.
	for _, id := range slices.Sorted(maps.Keys(o.Records)) {
		if !withEvent[id] {
			v.Missing++
			v.MissingExamples = appendExample(v.MissingExamples, "record "+id+" has no event")
		}
	}
	if v.Delivered > 0 {
		v.DoubledShare = float64(v.Doubled) / float64(v.Delivered)
	}
	lat := make([]time.Duration, len(delivered))
	for i, d := range delivered {
		lat[i] = d.Latency
	}
	v.Latency = percentiles(lat)
	slices.SortStableFunc(delivered, func(a, b slowDelivery) int { return cmp.Compare(b.Latency, a.Latency) })
	v.Slowest = delivered[:min(len(delivered), 3)]
}

// judgeRows compares the attempt rows with the requests the receiver saw:
// each request must have its row (written before it was sent), and no row
// may be left in flight.
func (v *verdict) judgeRows(o observations) {
	type key struct {
		event   string
		attempt int
	}
	rows := map[key]bool{}
	for _, r := range o.Rows {
		rows[key{r.EventID, r.Attempt}] = true
		if r.Error == models.DeliveryErrInFlight {
			v.InFlight++
		}
	}
	sent := map[key]bool{}
	for _, r := range o.Requests {
		k := key{r.EventID, r.Attempt}
		sent[k] = true
		if !rows[k] {
			v.RequestsWithoutRow++
			v.WithoutRowExamples = appendExample(v.WithoutRowExamples, fmt.Sprintf("%s attempt %d", r.EventID, r.Attempt))
		}
	}
	for _, r := range o.Rows {
		if r.Error != models.DeliveryErrInFlight && !sent[key{r.EventID, r.Attempt}] {
			v.RowsWithoutRequest++
		}
	}
	v.Rows, v.Requests = len(o.Rows), len(o.Requests)
}

// doubled describes an event answered 2xx more than once: each such
// request's attempt and time of day.
func doubled(id string, rs []request) string {
	slices.SortFunc(rs, func(a, b request) int { return a.At.Compare(b.At) })
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("attempt %d at %s", r.Attempt, r.At.Format("15:04:05.0"))
	}
	return id + " (" + strings.Join(parts, ", ") + ")"
}

// answerOf names the outcome of a write without a 201.
func answerOf(w write) string {
	if w.Status == 0 {
		return "no answer"
	}
	return fmt.Sprintf("%d", w.Status)
}

func appendExample(xs []string, x string) []string {
	if len(xs) < examples {
		xs = append(xs, x)
	}
	return xs
}

// percentiles are nearest-rank percentiles.
func percentiles(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	at := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return latency{N: len(ds), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ds[len(ds)-1]}
}
