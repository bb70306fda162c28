package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The production group's cost counts: what each delivery costs, by
// process and by database, counted rather than timed, so that a machine
// shared with other work still gives the same figures. Statements come
// from pg_stat_statements when the PostgreSQL server has it loaded
// (shared_preload_libraries) and the extension exists in its postgres
// database; without it only the CPU figures are printed. CPU is read from
// /proc: the bench's own descendants (the Temporal server, recordhub's
// processes, the floors' worker) by command, and the PostgreSQL backends
// by the database their process title names. Backends that exit during a
// run take their time with them, so those are lower bounds; the pools
// keep theirs open.

// costDBs names the databases a run's statements and backends are
// counted in, by role: "recordhub", "temporal", "visibility".
type costDBs map[string]string

// role returns the role of database db; "" for one not counted.
func (d costDBs) role(db string) string { return d[db] }

// stmtKey is one normalized statement of one database.
type stmtKey struct{ db, query string }

// stmtStat is a statement's counters.
type stmtStat struct {
	calls, rows int64
	execMS      float64
}

// costSnapshot is the counters at one moment.
type costSnapshot struct {
	stmts map[stmtKey]stmtStat // nil without pg_stat_statements
	pgCPU map[string]time.Duration
	procs map[string]time.Duration
}

// takeCost reads the counters; admin is a connection to the server's
// postgres database (nil: no statements).
func takeCost(ctx context.Context, admin *sql.DB) costSnapshot {
	s := costSnapshot{pgCPU: backendCPU(), procs: descendantCPU()}
	if admin == nil {
		return s
	}
	rows, err := admin.QueryContext(ctx, `SELECT d.datname, s.query, sum(s.calls)::bigint, sum(s.rows)::bigint, sum(s.total_exec_time)
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid GROUP BY 1, 2`)
	if err != nil {
		return s
	}
	defer rows.Close()
	s.stmts = map[stmtKey]stmtStat{}
	for rows.Next() {
		var (
			k  stmtKey
			st stmtStat
		)
		if rows.Scan(&k.db, &k.query, &st.calls, &st.rows, &st.execMS) == nil {
			s.stmts[k] = st
		}
	}
	if rows.Err() != nil {
		s.stmts = nil
	}
	return s
}

// costRun is what a run cost between two snapshots, per delivery.
type costRun struct {
	label      string
	deliveries int
	// stmts by role, then statement; calls and exec time in all.
	stmts map[string]map[string]stmtStat
	pgCPU map[string]time.Duration // by role
	procs map[string]time.Duration // by command
}

// costSince returns what was spent since before on deliveries
// deliveries, counting the databases of dbs.
func costSince(ctx context.Context, admin *sql.DB, before costSnapshot, dbs costDBs, label string, deliveries int) costRun {
	after := takeCost(ctx, admin)
	c := costRun{label: label, deliveries: deliveries, pgCPU: map[string]time.Duration{}, procs: map[string]time.Duration{}}
	for db, t := range after.pgCPU {
		if r := dbs.role(db); r != "" {
			c.pgCPU[r] += t - before.pgCPU[db]
		}
	}
	for comm, t := range after.procs {
		c.procs[comm] = t - before.procs[comm]
	}
	if after.stmts == nil || before.stmts == nil {
		return c
	}
	c.stmts = map[string]map[string]stmtStat{}
	for k, st := range after.stmts {
		r := dbs.role(k.db)
		if r == "" {
			continue
		}
		b := before.stmts[k]
		d := stmtStat{calls: st.calls - b.calls, rows: st.rows - b.rows, execMS: st.execMS - b.execMS}
		if d.calls <= 0 {
			continue
		}
		if c.stmts[r] == nil {
			c.stmts[r] = map[string]stmtStat{}
		}
		q := strings.Join(strings.Fields(k.query), " ")
		s := c.stmts[r][q]
		s.calls, s.rows, s.execMS = s.calls+d.calls, s.rows+d.rows, s.execMS+d.execMS
		c.stmts[r][q] = s
	}
	return c
}

var costRoles = []string{"recordhub", "temporal", "visibility"}

// report prints the run's cost per delivery and, with verbose, each
// database's statements (top first).
func (c costRun) report(w io.Writer, top int) {
	if c.deliveries == 0 {
		return
	}
	n := float64(c.deliveries)
	per := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", d.Seconds()*1000/n) }
	fmt.Fprintf(w, "\n%s: cost per delivery (%d deliveries; counts from pg_stat_statements, CPU from /proc)\n", c.label, c.deliveries)
	var procs []string
	for _, comm := range slices.Sorted(maps.Keys(c.procs)) {
		if c.procs[comm] > 0 {
			procs = append(procs, comm+" "+per(c.procs[comm]))
		}
	}
	var pg []string
	for _, r := range costRoles {
		if t, ok := c.pgCPU[r]; ok {
			pg = append(pg, r+" "+per(t))
		}
	}
	fmt.Fprintf(w, "  CPU: %s; PostgreSQL backends ≥ %s\n", strings.Join(procs, ", "), strings.Join(pg, ", "))
	if c.stmts == nil {
		fmt.Fprintln(w, "  statements: pg_stat_statements is not available on this server")
		return
	}
	for _, r := range costRoles {
		m := c.stmts[r]
		if len(m) == 0 {
			continue
		}
		var calls int64
		var exec float64
		for _, s := range m {
			calls += s.calls
			exec += s.execMS
		}
		fmt.Fprintf(w, "  %s database: %.2f statements, %.3f ms executing\n", r, float64(calls)/n, exec/n)
		qs := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(cmp.Compare(m[b].calls, m[a].calls), strings.Compare(a, b)) })
		for i, q := range qs {
			if i == top {
				fmt.Fprintf(w, "    … %d more\n", len(qs)-top)
				break
			}
			s := m[q]
			share := 0.0
			if exec > 0 {
				share = s.execMS / exec * 100
			}
			fmt.Fprintf(w, "    %6.2f  %4.0f%%  %s\n", float64(s.calls)/n, share, clip(q, 140))
		}
	}
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// backendCPU sums the CPU of PostgreSQL backends by the database in their
// process title ("postgres: user database host(port) state").
func backendCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	for pid := range procPIDs() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(strings.ReplaceAll(string(b), "\x00", " "))
		if len(f) < 4 || f[0] != "postgres:" {
			continue
		}
		if d, err := processCPU(pid); err == nil {
			out[f[2]] += d
		}
	}
	return out
}

// descendantCPU sums the CPU of this process's descendants by command
// name.
func descendantCPU() map[string]time.Duration {
	parent := map[int]int{}
	comm := map[int]string{}
	for pid := range procPIDs() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[pid], comm[pid] = pp, s[i+1:j]
	}
	self := os.Getpid()
	out := map[string]time.Duration{}
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == self {
				if d, err := processCPU(pid); err == nil {
					out[comm[pid]] += d
				}
				break
			}
		}
	}
	return out
}

// procPIDs yields the pids in /proc.
func procPIDs() func(func(int) bool) {
	return func(yield func(int) bool) {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		for _, e := range entries {
			if pid, err := strconv.Atoi(e.Name()); err == nil && !yield(pid) {
				return
			}
		}
	}
}
