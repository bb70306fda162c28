package api

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/recordhub/recordhub/api/inbound"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/mapping"
)

type ruleJSON struct {
	Source string `json:"source"`
	Field  string `json:"field"`
}

type inboundJSON struct {
	ID              string     `json:"id"`
	ModuleID        string     `json:"module_id"`
	URL             string     `json:"url"`
	Token           string     `json:"token"`
	SecretSet       bool       `json:"secret_set"`
	SignatureScheme string     `json:"signature_scheme"`
	Mapping         []ruleJSON `json:"mapping"`
	MatchFields     []string   `json:"match_fields"`
	Enabled         bool       `json:"enabled"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// inboundInput is the body of PUT …/inbound-webhook. Secret is raw so that
// absent (keep the secret), null (remove it) and a string (set it) differ.
type inboundInput struct {
	Secret          json.RawMessage `json:"secret"`
	SignatureScheme *string         `json:"signature_scheme"`
	Mapping         *[]ruleJSON     `json:"mapping"`
	MatchFields     []string        `json:"match_fields"`
	Enabled         *bool           `json:"enabled"`
}

func (in inboundInput) model() (models.InboundInput, error) {
	out := models.InboundInput{Enabled: true, MatchFields: in.MatchFields}
	var errs []models.FieldError
	switch {
	case in.Secret == nil:
	case bytes.Equal(in.Secret, []byte("null")):
		out.ClearSecret = true
	default:
		var secret string
		if err := json.Unmarshal(in.Secret, &secret); err != nil {
			errs = append(errs, models.FieldError{Field: "secret", Message: "must be a string, or null to remove the secret"})
		} else {
			out.Secret = &secret
		}
	}
	out.SignatureScheme = string(inbound.SchemeSHA256)
	if in.SignatureScheme != nil {
		out.SignatureScheme = *in.SignatureScheme
	}
	if in.Mapping != nil {
		out.Mapping = make([]mapping.Rule, len(*in.Mapping))
		for i, r := range *in.Mapping {
			out.Mapping[i] = mapping.Rule(r)
		}
	}
	if in.Enabled != nil {
		out.Enabled = *in.Enabled
	}
	if len(errs) > 0 {
		return out, models.ValidationError(errs)
	}
	return out, nil
}

type inboundErrorJSON struct {
	Code    string              `json:"code"`
	Message string              `json:"message"`
	Details []models.FieldError `json:"details"`
}

type inboundEventJSON struct {
	ID            string              `json:"id"`
	ModuleID      string              `json:"module_id"`
	RequestID     string              `json:"request_id"`
	ReceivedAt    time.Time           `json:"received_at"`
	Status        int                 `json:"status"`
	Action        *string             `json:"action"`
	RecordID      *string             `json:"record_id"`
	Error         *inboundErrorJSON   `json:"error"`
	Headers       map[string][]string `json:"headers"`
	Body          string              `json:"body"`
	BodySize      int                 `json:"body_size"`
	BodyTruncated bool                `json:"body_truncated"`
	IP            string              `json:"ip"`
	DeliveryID    *string             `json:"delivery_id"`
	DuplicateOf   *string             `json:"duplicate_of"`
	ReplayOf      *string             `json:"replay_of"`
	// Replayable tells whether POST …/replay would apply the call again
	// (rather than answer 409): so the console offers Replay only there.
	Replayable bool `json:"replayable"`
}

func inboundEventOut(ev *models.InboundEvent) inboundEventJSON {
	out := inboundEventJSON{
		ID: ev.ID, ModuleID: ev.ModuleID, RequestID: ev.RequestID, ReceivedAt: ev.ReceivedAt, Status: ev.Status,
		Action: ev.Action, RecordID: ev.RecordID, Headers: nonNilHeaders(ev.Headers), Body: ev.Body,
		BodySize: ev.BodySize, BodyTruncated: ev.BodyTruncated, IP: ev.IP,
		DeliveryID: ev.DeliveryID, DuplicateOf: ev.DuplicateOf, ReplayOf: ev.ReplayOf,
		Replayable: ev.Replayable(),
	}
	if ev.Error != "" {
		out.Error = &inboundErrorJSON{Code: ev.Error, Message: ev.ErrorMessage, Details: ev.ErrorDetails}
		if out.Error.Details == nil {
			out.Error.Details = []models.FieldError{}
		}
	}
	return out
}

// inboundEventList is a page of a module's inbound calls, with the module.
type inboundEventList struct {
	cursorListOf[inboundEventJSON]
	Module moduleRefJSON `json:"module"`
}

// inboundAnswer answers an inbound call that was applied.
type inboundAnswer struct {
	RecordID string `json:"recordId"`
	Action   string `json:"action"`
}
