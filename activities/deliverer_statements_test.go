package activities

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// statements records what a store sends to its database (Options.OnStatement).
type statements struct {
	mu  sync.Mutex
	all []string
}

func (s *statements) add(query string) {
	s.mu.Lock()
	s.all = append(s.all, query)
	s.mu.Unlock()
}

// take returns the statements recorded since the last take, and forgets them.
func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.all
	s.all = nil
	return out
}

// TestAttemptStatements counts what a delivery accepted at its first attempt
// costs recordhub's database through the real attempt activity: statements
// (BEGIN, COMMIT, and on SQLite the group commit's SAVEPOINT and RELEASE
// included) and transactions, as the store reports them
// (Options.OnStatement) and, on PostgreSQL, as the server receives them. The figures are ceilings: a change that
// adds a statement to this path fails here. The outcome is checked too,
// so that fewer statements cannot mean a write left out.
func TestAttemptStatements(t *testing.T) {
	// Before the event and its endpoint were read together, the in-flight
	// row was finished without a lock and read, and PostgreSQL merged the
	// rollup's histogram in its upsert: PostgreSQL 10 statements in 1
	// transaction, SQLite 16 in 2.
	limits := map[models.Dialect]struct{ statements, transactions int }{
		models.Postgres: {7, 1},
		models.SQLite:   {14, 2},
	}
	for _, dialect := range storetest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			var seen statements
			db := storetest.NewDB(t, dialect)
			// On PostgreSQL the store talks through a proxy that counts
			// what the server receives, which the store's own count must
			// match.
			var proxy *storetest.Proxy
			if dialect == models.Postgres {
				proxy, db = storetest.NewProxy(t, db)
			}
			store := db.Open(t, models.Options{OnStatement: seen.add})
			recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
			f := newFixture(t, store, recv.URL)
			d := newDeliverer(t, store, Config{AllowCIDRs: loopback})

			seen.take()
			if proxy != nil {
				proxy.ResetSent()
			}
			out, err := d.Attempt(t.Context(), f.input())
			if err != nil {
				t.Fatalf("Attempt: %v", err)
			}
			got := seen.take()
			begins := 0
			for _, q := range got {
				if strings.EqualFold(strings.TrimSpace(q), "BEGIN") {
					begins++
				}
			}
			t.Logf("%s: %d statements, %d transactions:\n  %s", dialect, len(got), begins, strings.Join(got, "\n  "))
			if proxy != nil {
				wire := proxy.Sent()
				t.Logf("the server received %d statements in %d transactions", wire.Statements, wire.Transactions)
				if wire != (storetest.Wire{Statements: len(got), Transactions: begins}) {
					t.Errorf("the server received %d statements in %d transactions; the store counted %d in %d",
						wire.Statements, wire.Transactions, len(got), begins)
				}
			}
			limit := limits[dialect]
			if len(got) > limit.statements || begins > limit.transactions {
				t.Errorf("a first attempt's success took %d statements in %d transactions, want at most %d in %d",
					len(got), begins, limit.statements, limit.transactions)
			}
			if slices.Contains(got, "ROLLBACK") {
				t.Errorf("a transaction was rolled back")
			}

			// What those statements must have written.
			row := f.onlyRow(t)
			if row.ID != out.DeliveryID || !row.Succeeded || row.Error != "" || row.Attempt != 1 {
				t.Errorf("row %+v: want attempt 1 of %s, succeeded", row, out.DeliveryID)
			}
			stats, err := store.EndpointStatsAt(t.Context(), f.tenantID, []string{f.endpoint.ID}, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if st := stats[f.endpoint.ID]; st.Attempts != 1 || st.Succeeded != 1 || st.P50MS == nil {
				t.Errorf("rollup: %d attempts, %d succeeded, p50 %v; want 1, 1 and a latency", st.Attempts, st.Succeeded, st.P50MS)
			}
			ep, err := store.GetEndpoint(t.Context(), f.tenantID, f.endpoint.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ep.LastSuccessAt == nil || !ep.LastSuccessAt.Equal(testNow) {
				t.Errorf("endpoint's last success = %v, want %v", ep.LastSuccessAt, testNow)
			}
		})
	}
}
