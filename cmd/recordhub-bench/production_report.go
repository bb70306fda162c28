package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// reportProduction prints the production group's table and returns how
// many targets were missed.
func reportProduction(w io.Writer, o options, r prodResult) int {
	fmt.Fprintf(w, "\nproduction shape: recordhub built -tags noembedtemporal; a separate Temporal server (v1.32.1, PostgreSQL persistence, task-queue fairness on) at %s; Redis %s\n", r.temporalAddr, redact(o.redisURL))
	fmt.Fprintf(w, "per row group: one serve --role api and N serve --role worker processes, a fresh database and task queue; tenant A creates %d records %d at a time, then tenant B %d, one a second\n", o.burst, prodCreators, prodBEvents)
	fmt.Fprintf(w, "floors (run first, same server, %d starters):", prodCreators)
	for _, f := range r.floors {
		fmt.Fprintf(w, " %s %.1f/s (%d of %d in %s%s);", f.label, f.rate(), f.delivered, f.sent, f.span.Round(time.Millisecond), prefixed("; ", f.note))
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workers\tmeasure\tvalue\ttarget\tresult\tnotes")
	missed, total := 0, 0
	row := func(workers, label, value, target string, ok bool, note string) {
		total++
		if !ok {
			missed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", workers, label, value, target, verdict(ok), note)
	}
	info := func(workers, label, value, note string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t%s\n", workers, label, value, note)
	}
	var one float64
	for _, run := range r.runs {
		n := strconv.Itoa(run.workers)
		if run.workers == 1 {
			one = run.rate()
		}
		info(n, "deliveries/s (tenant A)", fmt.Sprintf("%.1f", run.rate()),
			fmt.Sprintf("%d delivered, first to last arrival %s; creates took %s (%.0f/s)", run.deliveredA, run.spanA.Round(time.Millisecond),
				run.createA.Round(time.Millisecond), float64(run.sentA)/run.createA.Seconds()))
		for _, f := range r.floors {
			target := map[string]float64{floorActivity: targetActivityFloor, floorLocal: targetLocalFloor}[f.label]
			x := run.throughput().ratio(f)
			row(n, "ratio to "+f.label, fmt.Sprintf("%.2f×", x), fmt.Sprintf("≥ %s×", trimRatio(target)), x >= target, "")
		}
		missing := run.sentA - run.deliveredA + run.missingB
		row(n, "missing deliveries", strconv.Itoa(missing), "0", missing == 0 && run.sentA > 0,
			fmt.Sprintf("A %d of %d, B %d of %d", run.sentA-run.deliveredA, run.sentA, run.missingB, len(run.sentB)))
		row(n, "duplicated deliveries", strconv.Itoa(run.duplicated), "0", run.duplicated == 0, "requests beyond the first per X-Webhook-Id")

		total := sum(run.attempts)
		shares := make([]string, len(run.attempts))
		counts := make([]string, len(run.attempts))
		lowest := 1.0
		for i, a := range run.attempts {
			share := 0.0
			if total > 0 {
				share = a / total
			}
			lowest = min(lowest, share)
			shares[i] = fmt.Sprintf("%.0f%%", 100*share)
			counts[i] = fmt.Sprintf("%.0f", a)
		}
		attemptsNote := "attempts " + strings.Join(counts, " + ")
		if run.workers >= 2 {
			row(n, "attempts per worker", strings.Join(shares, " / "), fmt.Sprintf("each ≥ %.0f%%", 100*targetWorkerShare), lowest >= targetWorkerShare, attemptsNote)
		} else {
			info(n, "attempts per worker", strings.Join(shares, " / "), attemptsNote)
		}
		refused := 0.0
		if run.started > 0 {
			refused = run.refused / run.started
		}
		row(n, "refused starts", fmt.Sprintf("%.1f%%", 100*refused), fmt.Sprintf("< %.0f%%", 100*targetRefused), refused < targetRefused && run.started > 0,
			fmt.Sprintf("%.0f already_started of %.0f started", run.refused, run.started))
		worst := time.Duration(0)
		for _, l := range run.latB {
			if l < 0 {
				worst = -1
				break
			}
			worst = max(worst, l)
		}
		worstText := "never"
		if worst >= 0 {
			worstText = ms(worst)
		}
		row(n, "tenant B create → arrival, max", worstText, "≤ "+ms(targetFairness), worst >= 0 && worst <= targetFairness && len(run.latB) == prodBEvents,
			"each: "+durations(run.latB))
		lagNote := "recordhub_outbox_lag_seconds sampled every 0.5 s (the gauge is refreshed every 5 s)"
		if run.unsettled != "" {
			lagNote += "; " + run.unsettled
		}
		info(n, "outbox lag, max", fmt.Sprintf("%.1f s", run.lagMax), lagNote)
		info(n, "PostgreSQL connections, peak", fmt.Sprintf("%d of %d", run.pg.total, run.pg.limit),
			fmt.Sprintf("client backends; peaks apart: this run's recordhub database %d, rh_temporal_* databases %d (this Temporal server's and any other's), the rest %d",
				run.pg.recordhub, run.pg.temporal, run.pg.rest))
		info(n, "machine", "load "+run.loadBefore+" → "+run.loadAfter, run.cpu)
	}
	if one > 0 {
		for _, run := range r.runs {
			if run.workers == 1 {
				continue
			}
			x := run.rate() / one
			row(fmt.Sprintf("%d vs 1", run.workers), "deliveries/s scale-out", fmt.Sprintf("%.2f×", x), fmt.Sprintf("≥ %s×", trimRatio(targetScaleOut)), x >= targetScaleOut, "")
		}
	}
	tw.Flush()
	runs := make([]throughput, len(r.runs))
	for i, run := range r.runs {
		runs[i] = run.throughput()
	}
	reportFloors(w, "production: recordhub and the floors on the same Temporal server", runs, r.floors)
	fmt.Fprintf(w, "\n%d of %d production targets met\n", total-missed, total)
	return missed
}

// prefixed is s after p, or nothing when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
