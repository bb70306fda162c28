package models

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// RecordValues are a new record's fields and custom data.
type RecordValues struct {
	Fields     map[string]any
	CustomData map[string]any
}

// ItemError is the error of one of several items written together
// (CreateRecords); Index names it, from 0.
type ItemError struct {
	Index int
	Err   error
}

func (e *ItemError) Error() string { return fmt.Sprintf("item %d: %v", e.Index, e.Err) }

func (e *ItemError) Unwrap() error { return e.Err }

// CreateRecords validates and inserts records of one module, in order,
// with their events, as CreateRecord does each: in one transaction (ctx's
// when it is in one) of three statements however many records there are,
// where CreateRecord takes three a record on SQLite, or one round trip a
// record on PostgreSQL. It is what a batch's run of creates costs little
// with. A record that fails validation fails them all: the error is an
// *ItemError naming it, and nothing is written.
func (s *Store) CreateRecords(ctx context.Context, m *Module, values []RecordValues) ([]*Record, error) {
	if len(values) == 0 {
		return nil, nil
	}
	records := make([]Record, len(values))
	var events []Event
	for i, v := range values {
		r, evs, err := s.newRecord(m, v.Fields, v.CustomData)
		if err != nil {
			return nil, &ItemError{Index: i, Err: err}
		}
		records[i] = *r
		events = append(events, evs...)
	}
	stampTrace(ctx, events)
	var err error
	if s.dialect == Postgres {
		err = s.insertRecordsPostgres(s.writer(ctx), records, events)
	} else {
		err = s.write(ctx, func(tx *gorm.DB) error { return s.insertRecordsTx(tx, m, records, events) })
	}
	if err != nil {
		return nil, err
	}
	s.eventsWritten()
	out := make([]*Record, len(records))
	for i := range records {
		out[i] = &records[i]
	}
	return out, nil
}

// insertRecordsTx inserts records of module m, counts them and writes
// their events in tx.
func (s *Store) insertRecordsTx(tx *gorm.DB, m *Module, records []Record, events []Event) error {
	if err := s.insertRecordRows(tx, records); err != nil {
		return err
	}
	if err := s.insertEvents(tx, events); err != nil {
		return err
	}
	return s.addToCount(tx, m.ID, len(records))
}
