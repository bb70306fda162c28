package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// heyInstallHint is what to do when hey is missing: the contract names
// Debian's hey, so every figure comes from the same generator.
const heyInstallHint = "hey (the load generator) is not on PATH: install it with `apt-get install -y hey`"

// load is one hey invocation.
type load struct {
	URL      string
	Method   string // GET when empty
	Body     string
	Headers  []string
	Duration time.Duration // -z; when zero, Requests (-n) is used
	Requests int
	Workers  int // -c
}

func (l load) args() []string {
	a := []string{"-c", strconv.Itoa(l.Workers), "-t", "30"}
	if l.Duration > 0 {
		a = append(a, "-z", l.Duration.String())
	} else {
		a = append(a, "-n", strconv.Itoa(max(l.Requests, l.Workers)))
	}
	if l.Method != "" && l.Method != "GET" {
		a = append(a, "-m", l.Method)
	}
	if l.Body != "" {
		a = append(a, "-T", "application/json", "-d", l.Body)
	}
	for _, h := range l.Headers {
		a = append(a, "-H", h)
	}
	return append(a, l.URL)
}

// heyResult is what hey's summary says about one run.
type heyResult struct {
	RPS      float64       // all answers and failures per second, as hey counts them
	P99      time.Duration // of every answer, errors included
	Statuses map[int]int   // answers by HTTP status
	Failures int           // requests without an answer (connection errors, timeouts)
	Total    int           // answers plus failures
	// GenCPU is the CPU time hey itself used: on a small machine the load
	// generator takes a large share of it.
	GenCPU time.Duration
}

// OK is the number of 2xx answers.
func (r heyResult) OK() int {
	n := 0
	for code, c := range r.Statuses {
		if code >= 200 && code < 300 {
			n += c
		}
	}
	return n
}

// Errors counts everything that is not a 2xx answer.
func (r heyResult) Errors() int { return r.Total - r.OK() }

// OKRPS is the rate of successful answers: a 429 or a 500 answered fast
// must not make a scenario look quick.
func (r heyResult) OKRPS() float64 {
	if r.Total == 0 {
		return 0
	}
	return r.RPS * float64(r.OK()) / float64(r.Total)
}

// ErrorSummary names the non-2xx answers and failures, such as "429×12".
func (r heyResult) ErrorSummary() string {
	var parts []string
	codes := make([]int, 0, len(r.Statuses))
	for code := range r.Statuses {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	for _, code := range codes {
		if code < 200 || code >= 300 {
			parts = append(parts, fmt.Sprintf("%d×%d", code, r.Statuses[code]))
		}
	}
	if r.Failures > 0 {
		parts = append(parts, fmt.Sprintf("failed×%d", r.Failures))
	}
	return strings.Join(parts, " ")
}

var (
	heyRPS    = regexp.MustCompile(`(?m)^\s*Requests/sec:\s+([0-9.]+)\s*$`)
	heyP99    = regexp.MustCompile(`(?m)^\s*99%\s+in\s+([0-9.]+)\s+secs\s*$`)
	heyStatus = regexp.MustCompile(`(?m)^\s*\[(\d{3})\]\s+(\d+)\s+responses\s*$`)
	heyErrors = regexp.MustCompile(`(?m)^\s*\[(\d+)\]\s+\S`)
)

// parseHey reads hey's default summary.
func parseHey(out string) (heyResult, error) {
	r := heyResult{Statuses: map[int]int{}}
	m := heyRPS.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no Requests/sec in hey's output")
	}
	var err error
	if r.RPS, err = strconv.ParseFloat(m[1], 64); err != nil {
		return r, fmt.Errorf("requests/sec %q: %w", m[1], err)
	}
	if m := heyP99.FindStringSubmatch(out); m != nil {
		secs, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return r, fmt.Errorf("99%% latency %q: %w", m[1], err)
		}
		r.P99 = time.Duration(secs * float64(time.Second))
	}
	statusPart, errorPart := out, ""
	if i := strings.Index(out, "Error distribution:"); i >= 0 {
		statusPart, errorPart = out[:i], out[i:]
	}
	for _, m := range heyStatus.FindAllStringSubmatch(statusPart, -1) {
		code, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		r.Statuses[code] += n
		r.Total += n
	}
	for _, m := range heyErrors.FindAllStringSubmatch(errorPart, -1) {
		n, _ := strconv.Atoi(m[1])
		r.Failures += n
		r.Total += n
	}
	if r.Total == 0 {
		return r, fmt.Errorf("hey reported no answers and no errors")
	}
	return r, nil
}

// runHey runs hey and parses its summary; the raw output is returned too,
// for the log.
func runHey(ctx context.Context, l load) (heyResult, string, error) {
	cmd := exec.CommandContext(ctx, "hey", l.args()...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return heyResult{}, out.String(), fmt.Errorf("hey %s: %w: %s", l.URL, err, lastLines(out.String(), 5))
	}
	r, err := parseHey(out.String())
	r.GenCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if err != nil {
		return r, out.String(), fmt.Errorf("hey %s: %w: %s", l.URL, err, lastLines(out.String(), 5))
	}
	return r, out.String(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
