package models

import "database/sql"

// HeavyPool returns the store's heavy-read pool, so that tests can hold its
// connections or run a statement of their own on it.
func (s *Store) HeavyPool() *sql.DB { return s.heavy }
