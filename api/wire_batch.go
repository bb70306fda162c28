package api

import (
	"encoding/json"
	"strconv"

	"github.com/recordhub/recordhub/models"
)

// batchJSON is the body of POST /api/batch. Its operations are kept raw
// and decoded one at a time, so that every refusal of one names its index.
type batchJSON struct {
	Requests []json.RawMessage `json:"requests"`
}

// batchOpJSON is one operation of a batch: a record route's method, its
// path, its body and its If-Match header.
type batchOpJSON struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Body    json.RawMessage   `json:"body"`
	Headers map[string]string `json:"headers"`
}

// batchQuickJSON is batchJSON read in one pass (quickBatch), each
// operation's body decoded with it.
type batchQuickJSON struct {
	Requests []batchOpQuickJSON `json:"requests"`
}

type batchOpQuickJSON struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Body    *recordInput      `json:"body"`
	Headers map[string]string `json:"headers"`
}

// batchItemJSON answers one operation of a batch that was applied: what
// its route would have answered.
type batchItemJSON struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    any               `json:"body"`
}

func batchItemOut(a recordAnswer) batchItemJSON {
	h := map[string]string{}
	if a.etag != "" {
		h["ETag"] = a.etag
	}
	if a.location != "" {
		h["Location"] = a.location
	}
	return batchItemJSON{Status: a.status, Headers: h, Body: a.body}
}

// A batch answers up to MaxBatchOps records in one body, each holding its
// fields and custom data as the JSON they were stored as. c.JSON would
// reflect over every item and validate and compact that JSON again; the
// items are appended instead, byte for byte what c.JSON writes of
// []batchItemJSON (wire_batch_test.go holds them to it).

// appendBatchItems appends the JSON array of a batch's answers, as
// json.Marshal writes their []batchItemJSON, and reports false, with b as
// it was, when one holds what appendAnswerBody does not write.
func appendBatchItems(b []byte, answers []recordAnswer) ([]byte, bool) {
	n0 := len(b)
	b = append(b, '[')
	for i := range answers {
		if i > 0 {
			b = append(b, ',')
		}
		a := &answers[i]
		b = append(b, `{"status":`...)
		b = strconv.AppendInt(b, int64(a.status), 10)
		// The headers are a map, which json.Marshal writes in the order
		// of its keys.
		b = append(b, `,"headers":{`...)
		if a.etag != "" {
			b = append(b, `"ETag":`...)
			b = models.AppendJSONString(b, a.etag)
		}
		if a.location != "" {
			if a.etag != "" {
				b = append(b, ',')
			}
			b = append(b, `"Location":`...)
			b = models.AppendJSONString(b, a.location)
		}
		b = append(b, `},"body":`...)
		var ok bool
		if b, ok = appendAnswerBody(b, a.body); !ok {
			return b[:n0], false
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendAnswerBody appends the JSON of a record write's answer body as
// json.Marshal writes it, and reports false, with b as it was, for a body
// it does not know or that does not encode.
func appendAnswerBody(b []byte, body any) ([]byte, bool) {
	switch v := body.(type) {
	case recordJSON:
		return appendRecordJSON(b, &v)
	case deletedJSON:
		b = append(b, `{"deleted":`...)
		b = strconv.AppendBool(b, v.Deleted)
		b = append(b, `,"id":`...)
		b = models.AppendJSONString(b, v.ID)
		return append(b, '}'), true
	}
	return b, false
}

// appendRecordJSON appends r as json.Marshal writes it. Its fields and
// custom data, when they are the record's JSON (recordOut), were written
// by json.Marshal, compact and escaped as it escapes: they go out as they
// are.
func appendRecordJSON(b []byte, r *recordJSON) ([]byte, bool) {
	n0 := len(b)
	var ok bool
	b = append(b, `{"id":`...)
	b = models.AppendJSONString(b, r.ID)
	b = append(b, `,"module_id":`...)
	b = models.AppendJSONString(b, r.ModuleID)
	b = append(b, `,"fields":`...)
	if b, ok = appendRecordObject(b, r.Fields); !ok {
		return b[:n0], false
	}
	b = append(b, `,"custom_data":`...)
	if b, ok = appendRecordObject(b, r.CustomData); !ok {
		return b[:n0], false
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, r.Version, 10)
	b = append(b, `,"created_at":`...)
	if b, ok = models.AppendJSONTime(b, r.CreatedAt); !ok {
		return b[:n0], false
	}
	b = append(b, `,"updated_at":`...)
	if b, ok = models.AppendJSONTime(b, r.UpdatedAt); !ok {
		return b[:n0], false
	}
	return append(b, '}'), true
}

// appendRecordObject appends a record's fields or custom data: its JSON
// as it is, or else the object as json.Marshal writes it.
func appendRecordObject(b []byte, v any) ([]byte, bool) {
	if raw, ok := v.(json.RawMessage); ok && len(raw) > 0 {
		return append(b, raw...), true
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, out...), true
}
