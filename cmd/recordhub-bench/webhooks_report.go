package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// reportWebhooks prints the webhook group's tables and returns how many of
// its targets were missed, and how many there are.
func reportWebhooks(w io.Writer, o options, r webhookResult) (missed, total int) {
	fmt.Fprintf(w, "\nwebhooks (sqlite, embedded Temporal server and Web UI in the service's process; receiver in the bench process answering 204)\n")
	fmt.Fprintf(w, "latency: %d changes/s for %s, from the create's response to the receiver's first request; throughput: %d records created %d at a time, first to last arrival, against %d workflows of each floor (one POST of 1 KB) on the same server\n\n",
		webhookRate, webhookRateFor, o.webhookN, webhookCreators, o.webhookN)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tvalue\ttarget\tresult\tnotes")
	row := func(label, value, target string, ok bool, note string) {
		total++
		if !ok {
			missed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", label, value, target, verdict(ok), note)
	}
	row("idle RSS (API, worker, Temporal, UI)", mb(r.idleRSS), "< "+mb(targetWebhookRSS), r.idleRSS > 0 && r.idleRSS < targetWebhookRSS,
		fmt.Sprintf("VmRSS %s after ready", webhookIdleWait))
	latNote := fmt.Sprintf("%d changes, max %s", r.latencySent, ms(r.max))
	hasLat := r.latencySent > r.latencyMissing
	row("change → delivery p50", ms(r.p50), "< "+ms(targetWebhookP50), hasLat && r.p50 < targetWebhookP50, latNote)
	row("change → delivery p99", ms(r.p99), "< "+ms(targetWebhookP99), hasLat && r.p99 < targetWebhookP99, "")
	row("missing deliveries", fmt.Sprintf("%d of %d", r.latencyMissing, r.latencySent), "0", r.latencySent > 0 && r.latencyMissing == 0,
		fmt.Sprintf("waited %s after the last change", webhookGrace))
	s := r.service
	fmt.Fprintf(tw, "service deliveries/s\t%.1f\t-\t-\t%d delivered in %s, %d missing; creates took %s\n", s.rate(), s.delivered,
		s.span.Round(time.Millisecond), s.sent-s.delivered, r.serviceCreate.Round(time.Millisecond))
	peersRows(tw, "", r.peers)
	for _, f := range r.floors {
		target, ok := floorTarget(f.label)
		if !ok {
			continue
		}
		x := s.ratio(f)
		row("deliveries/s ratio to "+f.label, fmt.Sprintf("%.2f×", x), fmt.Sprintf("≥ %s×", trimRatio(target)),
			x >= target && s.delivered == s.sent, fmt.Sprintf("%.1f/s", f.rate()))
	}
	tw.Flush()
	reportFloors(w, "webhooks: recordhub and the floors on the same embedded server", []throughput{s}, r.floors)
	fmt.Fprintf(w, "\n%d of %d webhook targets met\n", total-missed, total)
	return missed, total
}

// webhookGroupFailed is printed when the group cannot run.
func webhookGroupFailed(w io.Writer, err error) {
	fmt.Fprintf(w, "\nwebhooks: FAIL: %s\n", strings.TrimSpace(err.Error()))
}
