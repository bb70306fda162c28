package models

import "database/sql"

// HeavyPool returns the store's heavy-read pool, so that tests can hold its
// connections or run a statement of their own on it.
func (s *Store) HeavyPool() *sql.DB { return s.heavy }

// MergeLatenciesSQL is PostgreSQL's query that adds two latency
// histograms held as text, its two parameters.
func MergeLatenciesSQL() string {
	return "SELECT " + mergeLatencies("CAST($1 AS TEXT)", "CAST($2 AS TEXT)")
}

// AddHistograms adds two latency histograms held as text, in Go.
func AddHistograms(a, b string) (string, error) {
	h, err := parseHistogram(a)
	if err != nil {
		return "", err
	}
	o, err := parseHistogram(b)
	if err != nil {
		return "", err
	}
	h.add(o)
	return h.String(), nil
}
