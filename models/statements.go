package models

import "gorm.io/gorm"

// observeStatements makes the store call fn after every statement GORM
// runs on its pools (see Options.OnStatement); transactions' BEGIN and
// COMMIT, which GORM runs outside its callbacks, are reported where the
// store begins and ends them (write, commitGroup).
func (s *Store) observeStatements(fn func(query string)) {
	if fn == nil {
		return
	}
	s.onStatement = fn
	after := func(db *gorm.DB) {
		if db.Statement.SQL.Len() > 0 {
			fn(db.Statement.SQL.String())
		}
	}
	pools := []*gorm.DB{s.w}
	if s.r != s.w {
		pools = append(pools, s.r)
	}
	for _, db := range pools {
		cb := db.Callback()
		// Registration fails only on a duplicate name, which these are not.
		_ = cb.Create().After("gorm:create").Register("recordhub:statements", after)
		_ = cb.Query().After("gorm:query").Register("recordhub:statements", after)
		_ = cb.Update().After("gorm:update").Register("recordhub:statements", after)
		_ = cb.Delete().After("gorm:delete").Register("recordhub:statements", after)
		_ = cb.Row().After("gorm:row").Register("recordhub:statements", after)
		_ = cb.Raw().After("gorm:raw").Register("recordhub:statements", after)
	}
}

// observe reports a statement the store ran outside GORM's callbacks.
func (s *Store) observe(query string) {
	if s.onStatement != nil {
		s.onStatement(query)
	}
}

// observeEnd reports how a transaction of write ended: GORM's Transaction
// commits when fn returned nil, and rolls back otherwise.
func (s *Store) observeEnd(err error) {
	if err == nil {
		s.observe("COMMIT")
	} else {
		s.observe("ROLLBACK")
	}
}
