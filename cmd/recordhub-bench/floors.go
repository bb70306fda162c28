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
// 1 KB to a receiver, as an activity and as a local activity, and the
// local-activity one started with recordhub's five search attributes, so
// that its difference from floorLocal is what those attributes cost.
const (
	floorActivity = "bare one-activity workflow"
	floorLocal    = "bare local-activity workflow"
	floorLocalSA  = "bare local-activity workflow + 5 search attributes"
)

// floorKinds are the floors in the order they run, with the
// temporal-baseline flags of each.
var floorKinds = []struct {
	label     string
	local, sa bool
}{{floorActivity, false, false}, {floorLocal, true, false}, {floorLocalSA, true, true}}

// floorTarget is recordhub's target ratio to a floor; false for a floor
// that is only printed (the search-attribute one).
func floorTarget(label string) (float64, bool) {
	x, ok := map[string]float64{floorActivity: targetActivityFloor, floorLocal: targetLocalFloor}[label]
	return x, ok
}

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
	// processCPU is a floor's own process's CPU (its starters and worker,
	// set-up included; not the receiver, which runs in the bench): what
	// stands beside recordhub's API and worker processes.
	processCPU time.Duration
	note       string
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

// runFloors runs the floors, one after the other, against the Temporal
// frontend at addr, n workflows each, conc starters.
func (b *bench) runFloors(ctx context.Context, tag, addr, namespace string, n, conc int) ([]throughput, error) {
	var out []throughput
	for _, k := range floorKinds {
		label := k.label
		fmt.Fprintf(b.out, "%s: %s: %d workflows, %d starters ...\n", tag, label, n, conc)
		cost0 := takeCost(ctx, b.pgAdmin)
		f, err := b.runFloor(ctx, tag, addr, namespace, n, conc, k.local, k.sa)
		if err != nil {
			return out, fmt.Errorf("%s: %w", label, err)
		}
		f.label = label
		if b.costDBs != nil {
			costSince(ctx, b.pgAdmin, cost0, b.costDBs, tag+": "+label, f.delivered).report(b.out, 25)
		}
		var own string
		if f.delivered > 0 && f.processCPU > 0 {
			own = fmt.Sprintf("; its own process (starters and worker) %s per workflow", ms(f.processCPU/time.Duration(f.delivered)))
		}
		fmt.Fprintf(b.out, "%s: %s: %d completions in %s (%.1f/s), machine CPU %s per workflow%s\n", tag, label, f.delivered,
			f.span.Round(time.Millisecond), f.rate(), ms(f.cpuPer()), own)
		out = append(out, f)
	}
	return out, nil
}

// runFloor runs the temporal-baseline sub-command once (sa: with the
// search attributes), its workflows
// POSTing to a receiver of their own.
func (b *bench) runFloor(ctx context.Context, tag, addr, namespace string, n, conc int, local, sa bool) (throughput, error) {
	t := throughput{sent: n}
	rcv, err := startReceiver()
	if err != nil {
		return t, err
	}
	defer rcv.Close()
	self, err := os.Executable()
	if err != nil {
		return t, err
	}
	// A stuck run ends; one at 5/s still finishes.
	fctx, cancel := context.WithTimeout(ctx, time.Minute+time.Duration(n)*200*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(fctx, self, "temporal-baseline", "-addr", addr, "-namespace", namespace,
		"-url", rcv.URL("/baseline"), "-n", strconv.Itoa(n), "-c", strconv.Itoa(conc), "-local="+strconv.FormatBool(local),
		"-search-attributes="+strconv.FormatBool(sa))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	_ = os.WriteFile(filepath.Join(b.work, fmt.Sprintf("%s-floor-local=%v-sa=%v.log", tag, local, sa)), stderr.Bytes(), 0o600)
	var br baselineResult
	if err := json.Unmarshal(stdout.Bytes(), &br); err != nil {
		return t, fmt.Errorf("temporal-baseline: %v %v: %s", runErr, err, lastLines(stderr.String(), 10))
	}
	if runErr != nil {
		t.note = fmt.Sprintf("%d failed: %s", br.Failed, br.FirstErr)
	}
	times := rcv.baselineArrivals()
	t.delivered, t.span, t.cpu = len(times), span(times), time.Duration(br.MachineCPU)
	if ps := cmd.ProcessState; ps != nil {
		t.processCPU = ps.UserTime() + ps.SystemTime()
	}
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
