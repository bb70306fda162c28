package models

import (
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// endpointDisabledBody is the JSON body of an endpoint_disabled event
// sent to subscribers. It names no module and no record: the event is about an
// endpoint, so module filters do not apply to it.
type endpointDisabledBody struct {
	ID         string        `json:"id"`
	Event      string        `json:"event"`
	OccurredAt string        `json:"occurred_at"`
	TenantID   string        `json:"tenant_id"`
	Endpoint   eventEndpoint `json:"endpoint"`
	Reason     string        `json:"reason"`
}

type eventEndpoint struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

// endpointDisabledEvent returns the outbox row that tells subscribers that
// ep was disabled at at for reason.
func endpointDisabledEvent(ep *WebhookEndpoint, reason string, at time.Time) (Event, error) {
	id := NewID(PrefixEvent)
	body, err := json.Marshal(endpointDisabledBody{
		ID: id, Event: EventEndpointDisabled, OccurredAt: at.UTC().Format(time.RFC3339Nano), TenantID: ep.TenantID,
		Endpoint: eventEndpoint{ID: ep.ID, URL: ep.URL}, Reason: reason,
	})
	if err != nil {
		return Event{}, fmt.Errorf("encode endpoint_disabled event: %w", err)
	}
	return Event{ID: id, TenantID: ep.TenantID, Type: EventEndpointDisabled, Payload: string(body), OccurredAt: at}, nil
}

// DisabledEndpointID returns the endpoint an endpoint_disabled event is
// about, which must never receive it; "" for events of other types. The
// body is the only place that names it: the events table has no column
// for it, and the body is written by this package in the transaction
// that disabled the endpoint, so it always holds the id.
func (e *Event) DisabledEndpointID() (string, error) {
	if e.Type != EventEndpointDisabled {
		return "", nil
	}
	var body struct {
		Endpoint struct {
			ID string `json:"id"`
		} `json:"endpoint"`
	}
	if err := json.Unmarshal([]byte(e.Payload), &body); err != nil {
		return "", fmt.Errorf("event %s: read its endpoint: %w", e.ID, err)
	}
	if body.Endpoint.ID == "" {
		return "", fmt.Errorf("event %s: its body names no endpoint", e.ID)
	}
	return body.Endpoint.ID, nil
}

// disableEndpointTx disables the tenant's endpoint id in tx for reason at
// at, when it is enabled and cond (SQL on the endpoint's columns, with
// args) holds, setting the columns of set as well; and then writes its
// endpoint_disabled event in tx. It reports whether it disabled the
// endpoint: false when the endpoint is disabled already, cond does not
// hold, or there is no such endpoint. The UPDATE's own condition decides,
// so of concurrent disables exactly one sees its row change (PostgreSQL
// re-checks the condition on the row the first one committed; SQLite has
// one writer): the change is recorded, and announced, once.
//
// The caller wakes the dispatcher (eventsWritten) after the commit.
func (s *Store) disableEndpointTx(tx *gorm.DB, tenantID, id, reason string, at time.Time, cond string, args []any, set map[string]any) (bool, error) {
	u := map[string]any{"enabled": false, "disabled_at": at, "disabled_reason": reason}
	for k, v := range set {
		u[k] = v
	}
	q := tx.Model(&WebhookEndpoint{}).Where("tenant_id = ? AND id = ? AND enabled", tenantID, id)
	if cond != "" {
		q = q.Where(cond, args...)
	}
	res := q.Updates(u)
	if res.Error != nil {
		return false, fmt.Errorf("disable endpoint: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	var ep WebhookEndpoint
	if err := tx.Select("id", "tenant_id", "url").Where("tenant_id = ? AND id = ?", tenantID, id).Take(&ep).Error; err != nil {
		return false, fmt.Errorf("load disabled endpoint: %w", err)
	}
	ev, err := endpointDisabledEvent(&ep, reason, at)
	if err != nil {
		return false, err
	}
	if err := s.insertEvents(tx, []Event{ev}); err != nil {
		return false, err
	}
	return true, nil
}
