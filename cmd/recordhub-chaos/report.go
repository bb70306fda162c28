package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// report prints the verdict and what it was measured on.
func report(w io.Writer, o options, v verdict, q quiet, settled bool, rows []attemptRow, skipped, maxInFlight int64) {
	pass := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Fprintf(w, "\nrecordhub chaos: %d API replicas, %d workers, Temporal v1.32.1 and recordhub on one PostgreSQL of the harness's own, Redis of its own\n", o.apis, o.workers)
	fmt.Fprintf(w, "load: 2 tenants × %.0f creates/s over the API replicas; %d fault cycles, a fault every %s\n", o.rate, o.cycles, o.every)
	state := "quiet"
	if !settled {
		state = "NOT quiet after " + o.settle.String()
	}
	fmt.Fprintf(w, "after the load: %s (%s)\n\n", state, q)

	fmt.Fprintf(w, "writes sent            %d (%d retried under their key; %s; %d ticks skipped past %d unanswered writes)\n", v.Writes, v.Retried, answers(v.FailedAnswers), skipped, maxInFlight)
	fmt.Fprintf(w, "writes acknowledged    %d (201; %d of them replayed; the longest took %s)\n", v.Acked, v.Replayed, ms(v.LongestAck))
	fmt.Fprintf(w, "writes unacknowledged  %d applied, %d not applied (no 201 within %s, or another answer; a record with the write's number tells)\n", v.UnackedApplied, v.UnackedNotApplied, writeBound)
	fmt.Fprintf(w, "writes lost            %d   %s  (acknowledged, not in the database)%s\n", v.Lost, pass(v.Lost == 0), examplesOf(v.LostExamples))
	fmt.Fprintf(w, "duplicate records      %d   %s  (records beyond the first of one write)%s\n", v.Duplicates, pass(v.Duplicates == 0), examplesOf(v.DuplicateExamples))
	fmt.Fprintf(w, "records committed      %d\n", v.Committed)
	fmt.Fprintf(w, "deliveries expected    %d (record_created events of committed records)\n", v.Events)
	fmt.Fprintf(w, "deliveries missing     %d   %s  (never answered 2xx)%s\n", v.Missing, pass(v.Missing == 0), examplesOf(v.MissingExamples))
	fmt.Fprintf(w, "deliveries doubled     %d = %.2f %%   %s  (answered 2xx more than once; at most %.0f %%)%s\n", v.Doubled, 100*v.DoubledShare, pass(v.DoubledShare <= maxDoubledShare), 100*maxDoubledShare, examplesOf(v.DoubledExamples))
	fmt.Fprintf(w, "rows left in_flight    %d   %s\n", v.InFlight, pass(v.InFlight == 0))
	fmt.Fprintf(w, "attempt rows           %d (%s)\n", v.Rows, rowKinds(rows))
	fmt.Fprintf(w, "requests received      %d (%d answered non-2xx by the receiver)\n", v.Requests, v.RequestsNon2xx)
	fmt.Fprintf(w, "requests without row   %d   %s%s\n", v.RequestsWithoutRow, pass(v.RequestsWithoutRow == 0), examplesOf(v.WithoutRowExamples))
	fmt.Fprintf(w, "rows without request   %d (attempts whose request never arrived: refused, lost with their worker)\n", v.RowsWithoutRequest)
	l := v.Latency
	fmt.Fprintf(w, "commit → first request p50 %s, p90 %s, p99 %s, max %s (%d events)\n", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max), l.N)
	for _, d := range v.Slowest {
		fmt.Fprintf(w, "  slow: %s committed at %s, first request after %s\n", d.EventID, d.Committed.Local().Format("15:04:05.000"), ms(d.Latency))
	}
	if len(v.Failures) == 0 {
		fmt.Fprintf(w, "\nPASS\n")
		return
	}
	fmt.Fprintf(w, "\nFAIL: %s\n", strings.Join(v.Failures, "; "))
}

func answers(m map[string]int) string {
	if len(m) == 0 {
		return "every one answered 201"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return "without 201: " + strings.Join(parts, ", ")
}

// rowKinds counts the attempt rows by outcome.
func rowKinds(rows []attemptRow) string {
	n := map[string]int{}
	for _, r := range rows {
		switch {
		case r.Succeeded:
			n["succeeded"]++
		case r.Error == "":
			n["failed"]++
		default:
			n[r.Error]++
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

func examplesOf(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return "; e.g. " + strings.Join(xs, ", ")
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}
