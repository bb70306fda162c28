package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/recordhub/recordhub/models"
)

// fixture is what the scenarios need: a key that may do everything without
// meeting its rate limit, a module holding the seeded records and an empty
// one that takes the POSTs (so the list module keeps its exact total).
type fixture struct {
	key         string
	listModule  string
	writeModule string
	recordID    string // one seeded record, read by the GET scenario
}

// benchFields are the modules' fields; recordBody fits them.
var benchFields = []map[string]any{
	{"name": "title", "type": "string", "required": true},
	{"name": "amount", "type": "integer"},
	{"name": "done", "type": "boolean"},
}

const recordBody = `{"fields":{"title":"bench record","amount":42,"done":false},"custom_data":{"source":"recordhub-bench"}}`

// setUp creates the bench key and modules through the admin API.
func setUp(ctx context.Context, s *service, adminKey string) (fixture, error) {
	var f fixture
	var key struct {
		Key string `json:"key"`
	}
	err := s.call(ctx, "POST", "/api/admin/keys", adminKey, map[string]any{
		"name":                  "bench",
		"permissions":           map[string][]string{"*": {"read", "write", "delete"}},
		"rate_limit_per_minute": models.MaxRateLimitPerMinute,
	}, &key)
	if err != nil {
		return f, fmt.Errorf("create bench key: %w", err)
	}
	f.key = key.Key
	for slug, dst := range map[string]*string{"bench_list": &f.listModule, "bench_write": &f.writeModule} {
		var m struct {
			ID string `json:"id"`
		}
		err := s.call(ctx, "POST", "/api/admin/modules", adminKey, map[string]any{
			"slug": slug, "name": slug, "fields": benchFields,
		}, &m)
		if err != nil {
			return f, fmt.Errorf("create module %s: %w", slug, err)
		}
		*dst = m.ID
	}
	return f, nil
}

// seedRecords inserts n records into the module straight into the
// database, in batches, with the columns and values the store writes
// (models.CreateRecord) and the module's counter raised by as many, since
// list totals are read from module_record_counts. Through the API the same
// rows would take minutes. It returns the id of the record in the middle.
func seedRecords(ctx context.Context, db *sql.DB, postgres bool, moduleID string, n int) (string, error) {
	var tenantID string
	q := "SELECT tenant_id FROM modules WHERE id = ?"
	if postgres {
		q = "SELECT tenant_id FROM modules WHERE id = $1"
	}
	if err := db.QueryRowContext(ctx, q, moduleID).Scan(&tenantID); err != nil {
		return "", fmt.Errorf("module %s: %w", moduleID, err)
	}
	const (
		perStatement = 500 // 8 columns: 4,000 parameters, under both databases' limits
		perTx        = 10_000
		columns      = 8
	)
	fields := `{"amount":42,"done":false,"title":"seeded record"}`
	custom := `{"source":"recordhub-bench"}`
	var middle string
	for done := 0; done < n; {
		txRows := min(perTx, n-done)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return "", fmt.Errorf("seed: %w", err)
		}
		for inTx := 0; inTx < txRows; {
			rows := min(perStatement, txRows-inTx)
			var sb strings.Builder
			sb.WriteString("INSERT INTO records (id, tenant_id, module_id, fields, custom_data, version, created_at, updated_at) VALUES ")
			args := make([]any, 0, rows*columns)
			for i := range rows {
				if i > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString(placeholders(postgres, len(args), columns))
				// The store's clock: UTC, whole microseconds.
				now := time.Now().UTC().Truncate(time.Microsecond)
				id := models.NewID(models.PrefixRecord)
				if done+inTx+i == n/2 {
					middle = id
				}
				args = append(args, id, tenantID, moduleID, fields, custom, 1, now, now)
			}
			if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
				_ = tx.Rollback()
				return "", fmt.Errorf("seed records: %w", err)
			}
			inTx += rows
		}
		count := `INSERT INTO module_record_counts (module_id, shard, count) VALUES (?, 0, ?)
			ON CONFLICT (module_id, shard) DO UPDATE SET count = module_record_counts.count + excluded.count`
		if postgres {
			count = strings.Replace(strings.Replace(count, "?", "$1", 1), "?", "$2", 1)
		}
		if _, err := tx.ExecContext(ctx, count, moduleID, txRows); err != nil {
			_ = tx.Rollback()
			return "", fmt.Errorf("seed record count: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return "", fmt.Errorf("seed: commit: %w", err)
		}
		done += txRows
	}
	if postgres {
		// Fresh statistics, as autovacuum would gather them in production.
		if _, err := db.ExecContext(ctx, "ANALYZE records"); err != nil {
			return "", fmt.Errorf("analyze: %w", err)
		}
	}
	return middle, nil
}

func placeholders(postgres bool, first, n int) string {
	var sb strings.Builder
	sb.WriteByte('(')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		if postgres {
			fmt.Fprintf(&sb, "$%d", first+i+1)
		} else {
			sb.WriteByte('?')
		}
	}
	sb.WriteByte(')')
	return sb.String()
}

// checkSeed asks the API what a client would see: the exact total on page
// 1, and the record the GET scenario reads.
func checkSeed(ctx context.Context, s *service, f fixture, want int) error {
	var page struct {
		Data  []map[string]any `json:"data"`
		Total int64            `json:"total"`
	}
	if err := s.call(ctx, "GET", "/api/modules/"+f.listModule+"/records?page=1&limit=20", f.key, nil, &page); err != nil {
		return fmt.Errorf("list seeded records: %w", err)
	}
	if page.Total != int64(want) || len(page.Data) != min(20, want) {
		return fmt.Errorf("seeded module lists %d records of a total of %d, want %d of %d", len(page.Data), page.Total, min(20, want), want)
	}
	var rec struct {
		ID     string         `json:"id"`
		Fields map[string]any `json:"fields"`
	}
	if err := s.call(ctx, "GET", "/api/modules/"+f.listModule+"/records/"+f.recordID, f.key, nil, &rec); err != nil {
		return fmt.Errorf("read a seeded record: %w", err)
	}
	if rec.ID != f.recordID || rec.Fields["title"] != "seeded record" {
		return fmt.Errorf("seeded record %s reads back as %+v", f.recordID, rec)
	}
	return nil
}
