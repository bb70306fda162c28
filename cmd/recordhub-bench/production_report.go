package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// targetTable is a table of measures, some with a target: it counts the
// targets and the misses.
type targetTable struct {
	tw            *tabwriter.Writer
	missed, total int
}

func newTargetTable(w io.Writer, head string) *targetTable {
	t := &targetTable{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(t.tw, head)
	return t
}

// row is a measure with a target.
func (t *targetTable) row(workers, label, value, target string, ok bool, note string) {
	t.total++
	if !ok {
		t.missed++
	}
	fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\t%s\t%s\n", workers, label, value, target, verdict(ok), note)
}

// info is a measure without one.
func (t *targetTable) info(workers, label, value, note string) {
	fmt.Fprintf(t.tw, "%s\t%s\t%s\t-\t-\t%s\n", workers, label, value, note)
}

// reportProduction prints the production group's tables and returns how
// many targets were missed.
func reportProduction(w io.Writer, o options, r prodResult) int {
	fmt.Fprintf(w, "\nproduction shape: recordhub built -tags noembedtemporal; a separate Temporal server (v1.32.1, PostgreSQL persistence, task-queue fairness on) at %s; Redis %s\n", r.temporalAddr, redact(o.redisURL))
	if o.trimVisibility {
		fmt.Fprintf(w, "visibility indexes trimmed to those operators search by (-temporal-trim-visibility)\n")
	}
	if len(o.temporalConfig) > 0 {
		fmt.Fprintf(w, "Temporal dynamic config besides: %v\n", o.temporalConfig)
	}
	fmt.Fprintf(w, "per row group: one serve --role api and N serve --role worker processes, a fresh database and task queue; tenant A creates %d records %d at a time, then tenant B %d, one a second\n", o.burst, prodCreators, prodBEvents)
	fmt.Fprintf(w, "floors (run first, same server, %d starters):", prodCreators)
	for _, f := range r.floors {
		fmt.Fprintf(w, " %s %.1f/s (%d of %d in %s%s);", f.label, f.rate(), f.delivered, f.sent, f.span.Round(time.Millisecond), prefixed("; ", f.note))
	}
	fmt.Fprint(w, "\n\n")
	t := newTargetTable(w, "workers\tmeasure\tvalue\ttarget\tresult\tnotes")
	var one float64
	for _, run := range r.runs {
		if run.workers == 1 {
			one = run.rate()
		}
		prodRunRows(t, run, r.floors)
	}
	for _, run := range r.runs {
		if one > 0 && run.workers != 1 {
			x := run.rate() / one
			t.row(fmt.Sprintf("%d vs 1", run.workers), "deliveries/s scale-out", fmt.Sprintf("%.2f×", x), fmt.Sprintf("≥ %s×", trimRatio(targetScaleOut)), x >= targetScaleOut, "")
		}
	}
	t.tw.Flush()
	runs := make([]throughput, len(r.runs))
	for i, run := range r.runs {
		runs[i] = run.throughput()
	}
	reportFloors(w, "production: recordhub and the floors on the same Temporal server", runs, r.floors)
	fmt.Fprintf(w, "\n%d of %d production targets met\n", t.total-t.missed, t.total)
	return t.missed
}

// prodRunRows adds one worker count's rows.
func prodRunRows(t *targetTable, run prodRun, floors []throughput) {
	n := strconv.Itoa(run.workers)
	t.info(n, "deliveries/s (tenant A)", fmt.Sprintf("%.1f", run.rate()),
		fmt.Sprintf("%d delivered, first to last arrival %s; creates took %s (%.0f/s)", run.deliveredA, run.spanA.Round(time.Millisecond),
			run.createA.Round(time.Millisecond), float64(run.sentA)/run.createA.Seconds()))
	for _, f := range floors {
		target, ok := floorTarget(f.label)
		if !ok {
			continue
		}
		x := run.throughput().ratio(f)
		t.row(n, "ratio to "+f.label, fmt.Sprintf("%.2f×", x), fmt.Sprintf("≥ %s×", trimRatio(target)), x >= target, "")
	}
	missing := run.sentA - run.deliveredA + run.missingB
	t.row(n, "missing deliveries", strconv.Itoa(missing), "0", missing == 0 && run.sentA > 0,
		fmt.Sprintf("A %d of %d, B %d of %d", run.sentA-run.deliveredA, run.sentA, run.missingB, len(run.sentB)))
	t.row(n, "duplicated deliveries", strconv.Itoa(run.duplicated), "0", run.duplicated == 0, "requests beyond the first per X-Webhook-Id")

	shares, counts, lowest := attemptShares(run.attempts)
	if run.workers >= 2 {
		t.row(n, "attempts per worker", shares, fmt.Sprintf("each ≥ %.0f%%", 100*targetWorkerShare), lowest >= targetWorkerShare, "attempts "+counts)
	} else {
		t.info(n, "attempts per worker", shares, "attempts "+counts)
	}
	refused := 0.0
	if run.started > 0 {
		refused = run.refused / run.started
	}
	t.row(n, "refused starts", fmt.Sprintf("%.1f%%", 100*refused), fmt.Sprintf("< %.0f%%", 100*targetRefused), refused < targetRefused && run.started > 0,
		fmt.Sprintf("%.0f already_started of %.0f started", run.refused, run.started))
	worst, worstText := worstLatency(run.latB)
	t.row(n, "tenant B create → arrival, max", worstText, "≤ "+ms(targetFairness), worst >= 0 && worst <= targetFairness && len(run.latB) == prodBEvents,
		"each: "+durations(run.latB))
	t.info(n, "outbox lag, max", fmt.Sprintf("%.1f s", run.lagMax),
		"recordhub_outbox_lag_seconds sampled every 0.5 s (the gauge is refreshed every 5 s)"+prefixed("; ", run.unsettled))
	t.info(n, "PostgreSQL connections, peak", fmt.Sprintf("%d of %d", run.pg.total, run.pg.limit),
		fmt.Sprintf("client backends; peaks apart: this run's recordhub database %d, rh_temporal_* databases %d (this Temporal server's and any other's), the rest %d",
			run.pg.recordhub, run.pg.temporal, run.pg.rest))
	t.info(n, "machine", "load "+run.loadBefore+" → "+run.loadAfter, run.cpu)
	peersRows(t.tw, n+"\t", run.peers)
}

// attemptShares gives each worker's share of the attempts ("50% / 50%"),
// their counts ("100 + 100") and the lowest share.
func attemptShares(attempts []float64) (shares, counts string, lowest float64) {
	total := sum(attempts)
	ss := make([]string, len(attempts))
	cs := make([]string, len(attempts))
	lowest = 1.0
	for i, a := range attempts {
		share := 0.0
		if total > 0 {
			share = a / total
		}
		lowest = min(lowest, share)
		ss[i] = fmt.Sprintf("%.0f%%", 100*share)
		cs[i] = fmt.Sprintf("%.0f", a)
	}
	return strings.Join(ss, " / "), strings.Join(cs, " + "), lowest
}

// worstLatency is the highest of ls, -1 and "never" when one never arrived.
func worstLatency(ls []time.Duration) (time.Duration, string) {
	worst := time.Duration(0)
	for _, l := range ls {
		if l < 0 {
			return -1, "never"
		}
		worst = max(worst, l)
	}
	return worst, ms(worst)
}

// prefixed is s after p, or nothing when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
