package api

import "encoding/json"

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
