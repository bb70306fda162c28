package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// reportNoisy prints one row per scenario: for each binary, tenant B's
// latencies, A's requests in B's window and A's doubled sends.
func reportNoisy(w io.Writer, o options, bins []noisyBinary, rows [][]noisyRun) {
	fmt.Fprintf(w, "\nNoisy neighbour: tenant B's create → first webhook request, p50 / p99 / max of %d creates one every %s,\n", o.noisyBN, o.noisyBEvery)
	shape := "a fresh recordhub serve (SQLite, embedded Temporal)"
	if o.noisyProduction {
		shape = "a fresh production shape (serve --role api and --role worker on PostgreSQL and Redis, a Temporal server of its own on PostgreSQL)"
	}
	fmt.Fprintf(w, "each scenario on %s;\n", shape)
	fmt.Fprintf(w, "A in window: requests A's receivers got between B's first and last create; doubled: (event, attempt) pairs A's receivers got more than once.\n")
	for _, b := range bins {
		fmt.Fprintf(w, "  %s: %s\n", b.label, b.about)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"scenario"}
	for _, b := range bins {
		head = append(head, b.label+" B p50 / p99 / max", "A in window", "doubled")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	var notes []string
	for i, name := range o.noisyScenarios {
		cells := []string{name}
		for j, r := range rows[i] {
			if r.err != nil {
				cells = append(cells, "failed", "-", "-")
				notes = append(notes, fmt.Sprintf("%s, %s: %v", name, bins[j].label, r.err))
				continue
			}
			cells = append(cells, r.b.String(), fmt.Sprint(r.aInWindow), fmt.Sprint(r.doubled))
			note := fmt.Sprintf("%s, %s: %d of A's requests in all; outbox at most %.0f events waiting, oldest %.0f s; run took %s",
				name, bins[j].label, r.aRequests, r.pendingMax, r.lagMax, r.wall.Round(time.Second))
			if r.note != "" {
				note += "; " + r.note
			}
			notes = append(notes, note)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
}
