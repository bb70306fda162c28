package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Headers is a set of HTTP headers stored as a JSON object.
type Headers map[string][]string

// Value implements driver.Valuer.
func (h Headers) Value() (driver.Value, error) {
	if h == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string][]string(h))
	if err != nil {
		return nil, fmt.Errorf("encode headers: %w", err)
	}
	return string(b), nil
}

// Scan implements sql.Scanner.
func (h *Headers) Scan(src any) error {
	m := map[string][]string{}
	if err := scanJSON(src, &m); err != nil {
		return err
	}
	*h = m
	return nil
}

// Delivery error codes: what went wrong with an attempt, in one word.
const (
	DeliveryErrTimeout            = "timeout"
	DeliveryErrConnectionRefused  = "connection_refused"
	DeliveryErrDNS                = "dns"
	DeliveryErrTLS                = "tls"
	DeliveryErrBlockedDestination = "blocked_destination"
	DeliveryErrHTTPStatus         = "http_status"
	DeliveryErrEndpointGone       = "endpoint_gone"
	DeliveryErrEndpointDisabled   = "endpoint_disabled"
	DeliveryErrConnection         = "connection"
	// DeliveryErrInFlight marks an attempt whose request is being sent:
	// its row is written before the request leaves and given
	// the attempt's outcome afterwards. An error code rather than a column
	// of its own: a row shows one state, the API shows it where readers
	// already look (error, succeeded false), and no migration is needed.
	DeliveryErrInFlight = "in_flight"
	// DeliveryErrWorkerLost: the attempt's outcome was never recorded (its
	// worker died, or could not write it), so the receiver may or may not
	// have received the request. A later attempt of the same workflow run
	// sets it on the rows it finds still in flight.
	DeliveryErrWorkerLost = "worker_lost"
	// DeliveryErrEventGone: the event was not found.
	DeliveryErrEventGone = "event_gone"
	// DeliveryErrCanceled: the attempt was canceled (worker shutdown,
	// workflow canceled) before it finished.
	DeliveryErrCanceled = "canceled"
	// DeliveryErrInternal: the store could not be read or a secret could
	// not be opened; the cause is in the worker's logs, not in the row.
	DeliveryErrInternal = "internal"
	// DeliveryErrSuperseded: a record_snapshot to an endpoint whose
	// ordering is "record" was not sent, because a live event of the
	// record committed after its resync's position (a later version)
	// reached the sequencer first. Its row has attempt 0 and counts as
	// succeeded: the delivery is done, and recoveries leave it alone.
	DeliveryErrSuperseded = "superseded"
	// DeliveryErrAuthFailed: the endpoint's access token could not be
	// had: its token endpoint refused the client or could not be reached.
	// The row's response is the token endpoint's; nothing was sent to the
	// receiver.
	DeliveryErrAuthFailed = "auth_failed"
	// DeliveryErrUnroutable: a broker took the message but nothing would
	// keep it: RabbitMQ returned it (no queue bound to the exchange with
	// the routing key) or has no such exchange; no JetStream stream
	// captures the subject.
	DeliveryErrUnroutable = "unroutable"
	// DeliveryErrBrokerRefused: the broker refused the message or the
	// connection (a nack, a permission, a stream limit); the message
	// says why.
	DeliveryErrBrokerRefused = "broker_refused"
)

// DeliveryErrors lists every delivery error code, the values the
// deliveries list's error filter takes.
var DeliveryErrors = []string{
	DeliveryErrTimeout, DeliveryErrConnectionRefused, DeliveryErrDNS, DeliveryErrTLS,
	DeliveryErrBlockedDestination, DeliveryErrHTTPStatus, DeliveryErrEndpointGone,
	DeliveryErrEndpointDisabled, DeliveryErrConnection, DeliveryErrInFlight, DeliveryErrWorkerLost,
	DeliveryErrEventGone, DeliveryErrCanceled, DeliveryErrInternal, DeliveryErrSuperseded,
	DeliveryErrAuthFailed, DeliveryErrUnroutable, DeliveryErrBrokerRefused,
}

// workerLostMessage is the error message of a worker_lost row.
const workerLostMessage = "the attempt's outcome was never recorded (its worker stopped or could not write it); " +
	"the receiver may have received the request, and later attempts send the same webhook id"

// WebhookDelivery is one attempt to deliver an event to an endpoint.
//
// An attempt that sends a request has its row written twice, under one id:
// in flight (Error DeliveryErrInFlight) with the request as it will be sent,
// before it is sent, then with its outcome (FinishAttempt). Until then
// FinishedAt equals StartedAt: finished_at is NOT NULL, and making it
// nullable would rebuild the table on SQLite; InFlight tells the two apart.
type WebhookDelivery struct {
	ID        string `gorm:"primaryKey"`
	TenantID  string
	EventID   string
	EventType string
	// RecordID is the record of the event, copied into every row so that a
	// record's deliveries are found after retention purged its events; ""
	// for an event about no record (endpoint_disabled) and for an attempt
	// whose event could not be read.
	RecordID        string
	EndpointID      string
	WorkflowID      string
	RunID           string
	Attempt         int
	ReplayOf        *string
	RequestURL      string  `gorm:"column:request_url"`
	RequestHeaders  Headers `gorm:"type:text"`
	RequestBody     string
	ResponseStatus  *int
	ResponseHeaders Headers `gorm:"type:text"`
	// ResponseBody holds at most the first 4 KiB.
	ResponseBody string
	Error        string
	ErrorMessage string
	RemoteIP     string   `gorm:"column:remote_ip"`
	DurationMS   float64  `gorm:"column:duration_ms"`
	DNSMS        *float64 `gorm:"column:dns_ms"`
	ConnectMS    *float64 `gorm:"column:connect_ms"`
	TLSMS        *float64 `gorm:"column:tls_ms"`
	FirstByteMS  *float64 `gorm:"column:first_byte_ms"`
	StartedAt    time.Time
	FinishedAt   time.Time
	Succeeded    bool
}

// utc puts the row's times in UTC: SQLite stores a time as text in its
// zone and compares text, so a row written in another zone would fall
// out of the time filters (deliveries list, recovery, retention).
func (d *WebhookDelivery) utc() {
	d.StartedAt, d.FinishedAt = d.StartedAt.UTC(), d.FinishedAt.UTC()
}

// MaxResponseBody bounds the stored response body.
const MaxResponseBody = 4 << 10

// storable makes the row's text columns storable (StorableText), in place:
// they hold what a receiver answered, the error that came of it, and the
// request as it was sent.
func (d *WebhookDelivery) storable() {
	d.RequestURL, d.RequestBody = StorableText(d.RequestURL, 0), StorableText(d.RequestBody, 0)
	d.RequestHeaders, d.ResponseHeaders = storableHeaders(d.RequestHeaders), storableHeaders(d.ResponseHeaders)
	d.ResponseBody = StorableText(d.ResponseBody, MaxResponseBody)
	d.Error, d.ErrorMessage = StorableText(d.Error, 0), StorableText(d.ErrorMessage, MaxErrorMessage)
	d.RemoteIP = StorableText(d.RemoteIP, 0)
}

// InFlight reports whether the attempt's outcome is not recorded yet: its
// request is being sent, or its worker died while sending it and no later
// attempt has noticed.
func (d *WebhookDelivery) InFlight() bool { return d.Error == DeliveryErrInFlight }

// InsertAttempt stores the row of a delivery attempt: in flight, before its
// request is sent, or finished when it sends none (its endpoint is gone, its
// destination is blocked). A missing id is generated.
//
// In the same transaction, rows of earlier attempts of the same workflow run
// that are still in flight become worker_lost, finished when d started:
// Temporal starts attempt n only after attempt n-1 ended, so an earlier row
// still in flight is one whose worker died mid-request. Should that worker
// be alive after all and record its outcome late, FinishAttempt overwrites
// worker_lost with it: the real outcome is the better record. The lookup
// names the event and endpoint, which every workflow id is derived from, so
// it is served by webhook_deliveries_event_idx over a few rows; first
// attempts skip it.
func (s *Store) InsertAttempt(ctx context.Context, d *WebhookDelivery) error {
	if d.ID == "" {
		d.ID = NewID(PrefixDelivery)
	}
	d.utc()
	d.storable()
	// A first attempt's row in flight, the common case, is one INSERT:
	// there are no earlier rows to mark, and it counts in no rollup yet.
	write := s.write
	if !d.statsState().counted() && (d.Attempt <= 1 || d.WorkflowID == "") {
		write = s.writeOne
	}
	err := write(ctx, func(tx *gorm.DB) error {
		ds := statsDeltas{}
		if d.Attempt > 1 && d.WorkflowID != "" {
			_, err := markLost(tx, ds, d.StartedAt, "event_id = ? AND endpoint_id = ? AND workflow_id = ? AND run_id = ? AND attempt < ?",
				d.EventID, d.EndpointID, d.WorkflowID, d.RunID, d.Attempt)
			if err != nil {
				return fmt.Errorf("mark lost attempts: %w", err)
			}
		}
		if err := tx.Create(d).Error; err != nil {
			return err
		}
		ds.add(d.statsState(), 1)
		return ds.apply(tx)
	})
	if err != nil {
		return fmt.Errorf("insert delivery attempt: %w", err)
	}
	return nil
}

// NextAttempt returns the number after the highest attempt of a workflow
// run's rows: 1 when the run has none. It numbers an attempt that cannot
// tell from Temporal how many went before it: a local activity run again
// after its worker was lost starts from attempt 1 each time, while the lost
// run may have written its row and reached the receiver. It reads the
// rows of the event and endpoint, which every workflow id is derived
// from: webhook_deliveries_event_idx serves it over a few rows.
func (s *Store) NextAttempt(ctx context.Context, eventID, endpointID, workflowID, runID string) (int, error) {
	var n int
	err := s.r.WithContext(ctx).Model(&WebhookDelivery{}).Select("COALESCE(MAX(attempt), 0)").
		Where("event_id = ? AND endpoint_id = ? AND workflow_id = ? AND run_id = ?", eventID, endpointID, workflowID, runID).
		Scan(&n).Error
	if err != nil {
		return 0, fmt.Errorf("number the delivery attempt: %w", err)
	}
	return n + 1, nil
}

// markLost makes the in-flight rows matching where worker_lost, finished
// at at, and adds them to ds (an attempt without latency each).
func markLost(tx *gorm.DB, ds statsDeltas, at time.Time, where string, args ...any) (int64, error) {
	var lost []attemptState
	err := tx.Raw("UPDATE webhook_deliveries SET error = ?, error_message = ?, finished_at = ? WHERE "+where+
		" AND error = ? RETURNING tenant_id, endpoint_id, started_at, attempt, error, succeeded, duration_ms",
		append(append([]any{DeliveryErrWorkerLost, workerLostMessage, at.UTC()}, args...), DeliveryErrInFlight)...).
		Scan(&lost).Error
	for _, a := range lost {
		ds.add(a, 1)
	}
	return int64(len(lost)), err
}

// SettleLostAttempts marks the rows of a workflow run still in flight
// worker_lost, finished at at, and returns how many it changed. It is for a
// run that is over: its last attempt left its row in flight (its worker
// died, or hung past its timeout), and no later attempt will. Conditional
// on the row being in flight, so a second call changes nothing; and, as
// with InsertAttempt, a late outcome of such an attempt still replaces
// worker_lost.
func (s *Store) SettleLostAttempts(ctx context.Context, eventID, endpointID, workflowID, runID string, at time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		ds := statsDeltas{}
		var err error
		n, err = markLost(tx, ds, at, "event_id = ? AND endpoint_id = ? AND workflow_id = ? AND run_id = ?",
			eventID, endpointID, workflowID, runID)
		if err != nil {
			return err
		}
		return ds.apply(tx)
	})
	if err != nil {
		return 0, fmt.Errorf("settle lost delivery attempts: %w", err)
	}
	return n, nil
}

// FinishAttempt records the outcome of an attempt whose row InsertAttempt
// wrote in flight: one UPDATE by primary key of the outcome's columns. The
// request's columns are left as written before it was sent.
func (s *Store) FinishAttempt(ctx context.Context, d *WebhookDelivery) error {
	d.utc()
	d.storable()
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		n, err = finishAttempt(tx, s.lockForUpdate, d)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish delivery attempt: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("finish delivery attempt %s: %w", d.ID, ErrNotFound)
	}
	return nil
}

// DeliveryEnd says that a delivery ended with an attempt, for the
// endpoint's health (see RecordDeliveryEnd).
type DeliveryEnd struct {
	Succeeded bool
	At        time.Time
	// DisableAfter: see RecordDeliveryEnd; 0 never disables.
	DisableAfter time.Duration
}

// FinishDelivery is FinishAttempt for the attempt that ends its delivery,
// followed by RecordDeliveryEnd, in one transaction: one commit where
// there were two, on the path of every delivery that succeeds at once.
// The endpoint's health stays best effort, as with RecordDeliveryEnd
// alone: should the shared transaction fail, the outcome is written
// alone, and healthErr reports the health update's own failure, which
// leaves the outcome written. err is FinishAttempt's. d names its tenant
// and endpoint, whose health it updates.
func (s *Store) FinishDelivery(ctx context.Context, d *WebhookDelivery, end DeliveryEnd) (healthErr, err error) {
	d.utc()
	d.storable()
	var (
		n        int64
		disabled bool
	)
	err = s.write(ctx, func(tx *gorm.DB) error {
		var err error
		if n, err = finishAttempt(tx, s.lockForUpdate, d); err != nil || n == 0 {
			return err
		}
		disabled, err = s.recordDeliveryEnd(tx, d.TenantID, d.EndpointID, end)
		return err
	})
	if err == nil && n == 0 {
		return nil, fmt.Errorf("finish delivery attempt %s: %w", d.ID, ErrNotFound)
	}
	if err == nil {
		if disabled {
			s.eventsWritten()
		}
		return nil, nil
	}
	// Either write may have failed: the outcome alone, then the health.
	if err := s.FinishAttempt(ctx, d); err != nil {
		return nil, err
	}
	return s.RecordDeliveryEnd(ctx, d.TenantID, d.EndpointID, end.Succeeded, end.At, end.DisableAfter), nil
}

// finishColumns are the outcome's columns, which finishing an attempt sets.
const finishColumns = "response_status = ?, response_headers = ?, response_body = ?, error = ?, error_message = ?, remote_ip = ?, " +
	"duration_ms = ?, dns_ms = ?, connect_ms = ?, tls_ms = ?, first_byte_ms = ?, finished_at = ?, succeeded = ?"

// finishAttempt writes d's outcome into its row in tx and returns the rows
// changed (0: no such row).
//
// The row is almost always as InsertAttempt wrote it, in flight, which
// counts in no rollup: one UPDATE conditional on that, returning what the
// rollups key on, is then the whole write. Only when it changes nothing
// (a finish retried, a row marked worker_lost meanwhile, no such row) is
// the row locked and read, so that the rollups take back what it counted
// before (worker_lost, or this same outcome when a finish is retried).
func finishAttempt(tx *gorm.DB, lockForUpdate func(*gorm.DB) *gorm.DB, d *WebhookDelivery) (int64, error) {
	set := map[string]any{
		"response_status": d.ResponseStatus, "response_headers": d.ResponseHeaders, "response_body": d.ResponseBody,
		"error": d.Error, "error_message": d.ErrorMessage, "remote_ip": d.RemoteIP,
		"duration_ms": d.DurationMS, "dns_ms": d.DNSMS, "connect_ms": d.ConnectMS, "tls_ms": d.TLSMS,
		"first_byte_ms": d.FirstByteMS, "finished_at": d.FinishedAt, "succeeded": d.Succeeded,
	}
	var was []attemptState
	err := tx.Raw("UPDATE webhook_deliveries SET "+finishColumns+" WHERE id = ? AND error = ?"+
		" RETURNING tenant_id, endpoint_id, started_at, attempt",
		d.ResponseStatus, d.ResponseHeaders, d.ResponseBody, d.Error, d.ErrorMessage, d.RemoteIP,
		d.DurationMS, d.DNSMS, d.ConnectMS, d.TLSMS, d.FirstByteMS, d.FinishedAt, d.Succeeded,
		d.ID, DeliveryErrInFlight).Scan(&was).Error
	if err != nil {
		return 0, err
	}
	var old attemptState
	if len(was) == 1 {
		old = was[0]
		old.Error = DeliveryErrInFlight // counted nowhere yet
	} else {
		found := lockForUpdate(tx.Model(&WebhookDelivery{})).
			Select("tenant_id, endpoint_id, started_at, attempt, error, succeeded, duration_ms").
			Where("id = ?", d.ID).Limit(1).Find(&old)
		if found.Error != nil || found.RowsAffected == 0 {
			return 0, found.Error
		}
		if err := tx.Model(&WebhookDelivery{}).Where("id = ?", d.ID).Updates(set).Error; err != nil {
			return 0, err
		}
	}
	now := old
	now.Error, now.Succeeded, now.DurationMS = d.Error, d.Succeeded, d.DurationMS
	ds := statsDeltas{}
	ds.change(old, now)
	return 1, ds.apply(tx)
}

// DeliveryQuery filters a tenant's deliveries.
type DeliveryQuery struct {
	// Page is the page to read; with After, only its Limit counts.
	Page Page
	// After, when set, reads the rows after this position (a previous
	// page's last row) instead of skipping Page's offset.
	After *Position
	// CountUpTo, when above 0, bounds the count: the total answered is
	// at most CountUpTo+1, and above CountUpTo means "more than that".
	CountUpTo  int64
	EndpointID string
	EventID    string
	EventType  string
	// RecordID selects the attempts of the events of one record.
	RecordID  string
	Succeeded *bool
	// Since and Until bound started_at: Since inclusive, Until exclusive,
	// so adjacent windows never share a row.
	Since, Until *time.Time
	// Error is a delivery error code (DeliveryErrors).
	Error string
}

// ListDeliveries returns a page of the tenant's delivery attempts, newest
// first (started_at, then id), and how many match q's filters (After
// aside).
func (s *Store) ListDeliveries(ctx context.Context, tenantID string, q DeliveryQuery) ([]WebhookDelivery, int64, error) {
	db := s.r.WithContext(ctx).Model(&WebhookDelivery{}).Where("tenant_id = ?", tenantID)
	if q.EndpointID != "" {
		db = db.Where("endpoint_id = ?", q.EndpointID)
	}
	if q.EventID != "" {
		db = db.Where("event_id = ?", q.EventID)
	}
	if q.EventType != "" {
		db = db.Where("event_type = ?", q.EventType)
	}
	if q.RecordID != "" {
		db = db.Where("record_id = ?", q.RecordID)
	}
	if q.Succeeded != nil {
		db = db.Where("succeeded = ?", *q.Succeeded)
	}
	if q.Since != nil {
		db = db.Where("started_at >= ?", q.Since.UTC())
	}
	if q.Until != nil {
		db = db.Where("started_at < ?", q.Until.UTC())
	}
	if q.Error != "" {
		db = db.Where("error = ?", q.Error)
	}
	total, err := s.count(ctx, db, q.CountUpTo)
	if err != nil {
		return nil, 0, fmt.Errorf("count deliveries: %w", err)
	}
	out := []WebhookDelivery{}
	if err := page(db, "started_at", q.Page, q.After).Find(&out).Error; err != nil {
		return nil, 0, fmt.Errorf("list deliveries: %w", err)
	}
	return out, total, nil
}

// GetDelivery returns one of the tenant's delivery attempts.
func (s *Store) GetDelivery(ctx context.Context, tenantID, id string) (*WebhookDelivery, error) {
	var d WebhookDelivery
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenantID, id).Take(&d).Error; err != nil {
		return nil, notFoundOr(err, "load delivery")
	}
	return &d, nil
}

// NextReplay reserves the next replay number of an (event, endpoint) pair
// and records the workflow id that workflowID derives from it.
func (s *Store) NextReplay(ctx context.Context, eventID, endpointID string, workflowID func(n int) string) (int, string, error) {
	var (
		n  int
		id string
	)
	err := s.write(ctx, func(tx *gorm.DB) error {
		var max *int
		if err := tx.Raw("SELECT MAX(n) FROM webhook_replays WHERE event_id = ? AND endpoint_id = ?", eventID, endpointID).Scan(&max).Error; err != nil {
			return fmt.Errorf("last replay: %w", err)
		}
		n = 1
		if max != nil {
			n = *max + 1
		}
		id = workflowID(n)
		return tx.Exec("INSERT INTO webhook_replays (event_id, endpoint_id, n, workflow_id, created_at) VALUES (?, ?, ?, ?, ?)",
			eventID, endpointID, n, id, s.now()).Error
	})
	if isUniqueViolation(err) {
		return 0, "", Errorf(KindConflict, "another replay of this delivery was started at the same moment; try again")
	}
	if err != nil {
		return 0, "", err
	}
	return n, id, nil
}
