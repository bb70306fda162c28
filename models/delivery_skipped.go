package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// skippedMessage is the error message of a skipped delivery's row.
const skippedMessage = "the endpoint was disabled when the event was dispatched; no request was sent"

// skippedPrefix starts the id of a skipped delivery's row. Other rows are
// "whd_" and a ULID, whose alphabet has no "_", so the two never meet.
const skippedPrefix = PrefixDelivery + "skip_"

// SkippedDeliveryID is the id of the row that records ev as skipped for
// endpoint: derived from the pair alone, so that a dispatcher handling the
// event again (after a crash, or a lost claim) finds the row there already.
// 128 bits of a SHA-256 keep it short and unique.
func SkippedDeliveryID(eventID, endpointID string) string {
	sum := sha256.Sum256([]byte(eventID + "/" + endpointID))
	return skippedPrefix + hex.EncodeToString(sum[:16])
}

// InsertSkippedDeliveries records that ev was not delivered to endpoints
// because they were disabled when it was dispatched: one row
// each, error endpoint_disabled, attempt 0, no workflow, nothing sent,
// started and finished now; what a recovery of the endpoint later finds
// and sends. One INSERT for all of them; a row already there (the event
// dispatched again) is left as it is, with its first dispatch time.
func (s *Store) InsertSkippedDeliveries(ctx context.Context, ev *Event, endpoints []WebhookEndpoint) error {
	if len(endpoints) == 0 {
		return nil
	}
	now := s.now()
	rows := make([]WebhookDelivery, len(endpoints))
	for i, ep := range endpoints {
		rows[i] = WebhookDelivery{
			ID: SkippedDeliveryID(ev.ID, ep.ID), TenantID: ev.TenantID, EventID: ev.ID, EventType: ev.Type, RecordID: ev.RecordID, EndpointID: ep.ID,
			RequestURL: ep.URL, RequestHeaders: Headers{}, ResponseHeaders: Headers{},
			Error: DeliveryErrEndpointDisabled, ErrorMessage: skippedMessage,
			StartedAt: now, FinishedAt: now,
		}
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error
	})
	if err != nil {
		return fmt.Errorf("record skipped deliveries of event %s: %w", ev.ID, err)
	}
	return nil
}
