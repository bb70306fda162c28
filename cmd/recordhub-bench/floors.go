package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"
)

// The floors recordhub's delivery path is compared with, on the same
// Temporal server in the same run: a bare workflow whose one step POSTs
// 1 KB to a receiver, as an activity and as a local activity.
const (
	floorActivity = "bare one-activity workflow"
	floorLocal    = "bare local-activity workflow"
)

// Targets of recordhub's rate as a ratio to each floor.
const (
	targetActivityFloor = 0.80
	targetLocalFloor    = 0.90
)

// throughput is one delivery path's run: deliveries counted at the
// receiver, their rate from the first to the last arrival, and the whole
// machine's CPU (machineCPU) over the run.
type throughput struct {
	label           string
	sent, delivered int
	span            time.Duration // first to last arrival
	cpu             time.Duration
	// cpuDeliveries are the deliveries cpu was spent on; delivered when
	// zero.
	cpuDeliveries int
	note          string
}

func (t throughput) rate() float64 { return rate(t.delivered, t.span) }

// cpuPer is machine CPU per delivery.
func (t throughput) cpuPer() time.Duration {
	n := t.cpuDeliveries
	if n == 0 {
		n = t.delivered
	}
	if n == 0 || t.cpu <= 0 {
		return 0
	}
	return t.cpu / time.Duration(n)
}

// ratio is t's rate as a multiple of floor's; 0 without a floor.
func (t throughput) ratio(floor throughput) float64 {
	if floor.rate() <= 0 {
		return 0
	}
	return t.rate() / floor.rate()
}

// runFloors runs both floors, one after the other, against the Temporal
// frontend at addr, n workflows each, conc starters.
func (b *bench) runFloors(ctx context.Context, tag, addr, namespace string, n, conc int) ([]throughput, error) {
	var out []throughput
	for _, local := range []bool{false, true} {
		label := map[bool]string{false: floorActivity, true: floorLocal}[local]
		fmt.Fprintf(b.out, "%s: %s: %d workflows, %d starters ...\n", tag, label, n, conc)
		f, err := b.runFloor(ctx, tag, addr, namespace, n, conc, local)
		if err != nil {
			return out, fmt.Errorf("%s: %w", label, err)
		}
		f.label = label
		fmt.Fprintf(b.out, "%s: %s: %d completions in %s (%.1f/s), machine CPU %s per workflow\n", tag, label, f.delivered,
			f.span.Round(time.Millisecond), f.rate(), ms(f.cpuPer()))
		out = append(out, f)
	}
	return out, nil
}

// runFloor runs the temporal-baseline sub-command once, its workflows
// POSTing to a receiver of their own.
func (b *bench) runFloor(ctx context.Context, tag, addr, namespace string, n, conc int, local bool) (throughput, error) {
	t := throughput{sent: n}
	rcv, err := startReceiver()
	if err != nil {
		return t, err
	}
	defer rcv.srv.Close()
	self, err := os.Executable()
	if err != nil {
		return t, err
	}
	// A stuck run ends; one at 5/s still finishes.
	fctx, cancel := context.WithTimeout(ctx, time.Minute+time.Duration(n)*200*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(fctx, self, "temporal-baseline", "-addr", addr, "-namespace", namespace,
		"-url", rcv.url("/baseline"), "-n", strconv.Itoa(n), "-c", strconv.Itoa(conc), "-local="+strconv.FormatBool(local))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	_ = os.WriteFile(filepath.Join(b.work, fmt.Sprintf("%s-floor-local=%v.log", tag, local)), stderr.Bytes(), 0o600)
	var br baselineResult
	if err := json.Unmarshal(stdout.Bytes(), &br); err != nil {
		return t, fmt.Errorf("temporal-baseline: %v %v: %s", runErr, err, lastLines(stderr.String(), 10))
	}
	if runErr != nil {
		t.note = fmt.Sprintf("%d failed: %s", br.Failed, br.FirstErr)
	}
	times := rcv.baselineArrivals()
	t.delivered, t.span, t.cpu = len(times), span(times), time.Duration(br.MachineCPU)
	return t, nil
}

// reportFloors prints recordhub's runs beside the floors: rate, machine CPU
// per delivery and recordhub's ratio to each floor, on both.
func reportFloors(w io.Writer, title string, runs, floors []throughput) {
	fmt.Fprintf(w, "\n%s: deliveries/s (first to last arrival) and machine CPU per delivery ((user+nice+system+irq+softirq) of /proc/stat over the run ÷ deliveries; the whole machine, whatever else runs on it)\n\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "path\tdeliveries/s\tCPU/delivery\tdelivered"
	for _, f := range floors {
		head += "\trecordhub ÷ " + f.label + " (rate, CPU)"
	}
	fmt.Fprintln(tw, head+"\tnotes")
	for _, r := range runs {
		line := fmt.Sprintf("%s\t%.1f\t%s\t%d of %d", r.label, r.rate(), ms(r.cpuPer()), r.delivered, r.sent)
		for _, f := range floors {
			cpu := "-"
			if f.cpuPer() > 0 && r.cpuPer() > 0 {
				cpu = fmt.Sprintf("%.2f×", float64(r.cpuPer())/float64(f.cpuPer()))
			}
			line += fmt.Sprintf("\t%.2f×, %s", r.ratio(f), cpu)
		}
		fmt.Fprintln(tw, line+"\t"+r.note)
	}
	for _, f := range floors {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%d of %d%s\t%s\n", f.label, f.rate(), ms(f.cpuPer()), f.delivered, f.sent, repeatTab(len(floors)), f.note)
	}
	tw.Flush()
}

func repeatTab(n int) string { return string(bytes.Repeat([]byte("\t-"), n)) }
