package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// rssSampler polls a process's resident set size and keeps the peak of
// the current window.
type rssSampler struct {
	pid    int
	peak   atomic.Int64 // bytes, since the last window began
	max    atomic.Int64 // bytes, over the process's life
	quit   chan struct{}
	closed sync.Once
}

func newRSSSampler(pid int, every time.Duration) *rssSampler {
	r := &rssSampler{pid: pid, quit: make(chan struct{})}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v, err := readRSS(pid); err == nil {
				for p := r.peak.Load(); v > p && !r.peak.CompareAndSwap(p, v); p = r.peak.Load() {
				}
				for p := r.max.Load(); v > p && !r.max.CompareAndSwap(p, v); p = r.max.Load() {
				}
			}
			select {
			case <-r.quit:
				return
			case <-t.C:
			}
		}
	}()
	return r
}

// window returns the peak since the last call and starts a new window at
// the current size.
func (r *rssSampler) window() int64 {
	cur, _ := readRSS(r.pid)
	return r.peak.Swap(cur)
}

func (r *rssSampler) stop() { r.closed.Do(func() { close(r.quit) }) }

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// processCPU reads the user plus system CPU time a process has used from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis, from field 3 (state).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// commandCPU sums the CPU time of every process whose command name is
// comm, such as the local PostgreSQL server's backends. Processes that exit
// between two readings take their time with them, so it is a lower bound.
func commandCPU(comm string) time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		if d, err := processCPU(pid); err == nil {
			total += d
		}
	}
	return total
}

// readRSS reads VmRSS from /proc/PID/status, in bytes.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, errors.New("no VmRSS line")
}

// cpuSnapshot is CPU time by process kind at one moment, to say where a
// run's CPU went on a machine of few cores.
type cpuSnapshot struct {
	api     *service
	workers []*service
	at      map[string]time.Duration
}

func startCPU(api *service, ws []*service) *cpuSnapshot {
	c := &cpuSnapshot{api: api, workers: ws}
	c.at = c.read()
	return c
}

func (c *cpuSnapshot) read() map[string]time.Duration {
	m := map[string]time.Duration{
		"temporal": commandCPU("temporal-server"),
		"postgres": commandCPU("postgres"),
	}
	m["api"], _ = processCPU(c.api.cmd.Process.Pid)
	for i, w := range c.workers {
		m[fmt.Sprintf("worker %d", i+1)], _ = processCPU(w.cmd.Process.Pid)
	}
	return m
}

// report prints the CPU used since the snapshot.
func (c *cpuSnapshot) report(wall time.Duration) string {
	now := c.read()
	parts := []string{fmt.Sprintf("api %.0f s", (now["api"] - c.at["api"]).Seconds())}
	for i := range c.workers {
		k := fmt.Sprintf("worker %d", i+1)
		parts = append(parts, fmt.Sprintf("%s %.0f s", k, (now[k]-c.at[k]).Seconds()))
	}
	parts = append(parts,
		fmt.Sprintf("Temporal %.0f s", (now["temporal"]-c.at["temporal"]).Seconds()),
		fmt.Sprintf("postgres ≥ %.0f s", (now["postgres"]-c.at["postgres"]).Seconds()))
	return fmt.Sprintf("CPU %s in %.0f s wall", strings.Join(parts, ", "), wall.Seconds())
}

// loadAverage is the machine's 1-minute load average, from /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// machineCPU is the CPU time the whole machine has spent working since
// boot: the user, nice, system, irq and softirq jiffies of /proc/stat's
// cpu line (idle, iowait and steal are not work; guest time is counted in
// user already). Differences of two readings are what a run cost every
// process on the machine, other tenants of a shared machine included.
func machineCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var jiffies int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system [idle iowait] irq softirq
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		jiffies += v
	}
	return time.Duration(jiffies) * time.Second / clockTicks, nil
}
