package models

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// Position is a place in a list ordered newest first by a time and then
// by id (deliveries, access logs, inbound events): the sort key of the
// last row of a page. The next page holds the rows strictly after it.
//
// Reading from a position costs the same at any depth, where an offset
// makes the database read and drop every row before the page.
type Position struct {
	At time.Time
	ID string
}

// after keeps the rows of db that come after p in the order "column DESC,
// id DESC"; db unchanged when p is nil. The condition is written so that
// both databases read it as a range on column, which the lists' (tenant or
// module, time) indexes serve, rather than as a row comparison an index
// on column alone cannot. The time is bound as the lists' time filters
// bind theirs, so that SQLite compares it with stored times alike.
func after(db *gorm.DB, column string, p *Position) *gorm.DB {
	if p == nil {
		return db
	}
	at := p.At.UTC()
	return db.Where(column+" <= ? AND ("+column+" < ? OR id < ?)", at, at, p.ID)
}

// page orders db newest first by column, then id, and selects one page:
// the rows after a position when there is one, else p's offset.
func page(db *gorm.DB, column string, p Page, a *Position) *gorm.DB {
	db = db.Order(column + " DESC, id DESC").Limit(p.Limit)
	if a != nil {
		return after(db, column, a)
	}
	return db.Offset(p.Offset())
}

// count counts the rows of db. With upTo > 0 it stops after upTo+1 rows,
// so that its cost is bounded however many match: a total above upTo
// only says that more than upTo rows match. db is left as it was.
func (s *Store) count(ctx context.Context, db *gorm.DB, upTo int64) (int64, error) {
	var n int64
	if upTo <= 0 {
		err := db.Session(&gorm.Session{}).Count(&n).Error
		return n, err
	}
	sub := db.Session(&gorm.Session{}).Select("1").Limit(int(upTo + 1))
	err := s.r.WithContext(ctx).Table("(?) AS counted", sub).Count(&n).Error
	return n, err
}
