package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report prints the table and returns how many targets were missed.
func report(w io.Writer, o options, first, last measurement, results []measurement, peaks map[string]int64, skipped []string) int {
	bare := (first.res.OKRPS() + last.res.OKRPS()) / 2
	fmt.Fprintf(w, "\nhey -z %s -c %d; bare gin /ping: %.0f req/s before, %.0f after, mean %.0f (every ratio is to the mean)\n",
		o.duration, o.workers, first.res.OKRPS(), last.res.OKRPS(), bare)
	if drift := math.Abs(first.res.OKRPS()-last.res.OKRPS()) / bare; drift > 0.10 {
		fmt.Fprintf(w, "note: the bare handler's rate moved by %.0f%% of the mean during the run: the machine was busier at one end, and ratios that near a target are within the noise\n", 100*drift)
	}
	if o.role == "api" {
		fmt.Fprintf(w, "shape: serve --role api (built -tags noembedtemporal) against a second process that holds the worker and the embedded Temporal server; figures and RSS are the API process's\n")
	}
	fmt.Fprintf(w, "GET reads one record by id; POST creates one (and its access-log row); list reads page 1 (limit 20, newest first, exact total) of a module of %d records\n", o.records)
	fmt.Fprintf(w, "CPU/req: CPU time per request of the server's process (the service's, or the bare handler's), of hey, and of every local process named postgres (SQLite runs inside the service)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tdb\treq/s\tratio\tp99\ttarget\tresult\terrors\tpeak RSS\tCPU/req server\tCPU/req hey\tCPU/req postgres\tnotes")
	bareRow := func(label string, m measurement) {
		fmt.Fprintf(tw, "%s\t-\t%.0f\t%.2f×\t%s\t-\t-\t%d\t-\t%s\t%s\t-\t\n", label, m.res.OKRPS(), m.res.OKRPS()/bare, ms(m.res.P99), m.res.Errors(),
			perRequest(m.cpu, m.res.Total), perRequest(m.res.GenCPU, m.res.Total))
	}
	bareRow("bare /ping (before)", first)
	missed := 0
	for _, m := range results {
		ratio := m.res.OKRPS() / bare
		ok := ratio >= m.scenario.minRatio
		target := fmt.Sprintf("≥ %s×", trimRatio(m.scenario.minRatio))
		if m.scenario.maxP99 > 0 {
			target += fmt.Sprintf(", p99 < %s", ms(m.scenario.maxP99))
			ok = ok && m.res.P99 < m.scenario.maxP99
		}
		var notes []string
		if m.res.Errors() > 0 {
			ok = false
			notes = append(notes, "non-2xx: "+m.res.ErrorSummary())
		}
		if m.dropped > 0 {
			ok = false
			notes = append(notes, fmt.Sprintf("%.0f access-log rows dropped", m.dropped))
		}
		if m.note != "" {
			notes = append(notes, m.note)
		}
		if !ok {
			missed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.3f×\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", m.scenario.label, m.db, m.res.OKRPS(), ratio, ms(m.res.P99),
			target, verdict(ok), m.res.Errors(), mb(m.peakRSS), perRequest(m.cpu, m.res.Total), perRequest(m.res.GenCPU, m.res.Total),
			perRequest(m.dbCPU, m.res.Total), strings.Join(notes, "; "))
	}
	for _, db := range o.databases {
		peak, ok := peaks[db]
		if !ok {
			continue
		}
		pass := peak < targetRSS
		if !pass {
			missed++
		}
		fmt.Fprintf(tw, "service RSS\t%s\t\t\t\t< %s\t%s\t\t%s\t\t\t\tpeak over all scenarios\n", db, mb(targetRSS), verdict(pass), mb(peak))
	}
	bareRow("bare /ping (after)", last)
	tw.Flush()
	for _, db := range skipped {
		fmt.Fprintf(w, "%s: skipped (unreachable)\n", db)
	}
	total := len(results) + len(peaks)
	fmt.Fprintf(w, "\n%d of %d targets met\n", total-missed, total)
	return missed
}

func perRequest(cpu time.Duration, requests int) string {
	if requests == 0 || cpu == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f µs", float64(cpu)/float64(time.Microsecond)/float64(requests))
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func trimRatio(r float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", r), "0"), ".")
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func mb(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MB", float64(b)/1e6)
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// durations prints latencies in milliseconds, "never" for -1.
func durations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		if d < 0 {
			parts[i] = "never"
		} else {
			parts[i] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	return strings.Join(parts, ", ") + " ms"
}
