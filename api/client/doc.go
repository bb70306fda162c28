// Package client is a Go client of recordhub's HTTP API.
//
// A Client holds the API's base URL and one key; every method takes a
// context first. An answer other than 2xx comes back as an *Error
// carrying the API's error object (its code, message, request id and field
// details), a request that got no answer as a *TransportError:
//
//	c := client.New("http://127.0.0.1:8080", os.Getenv("RECORDHUB_ADMIN_KEY"))
//	m, err := c.CreateModule(ctx, client.ModuleInput{
//		Slug: "notes", Name: "Notes",
//		Fields: []client.Field{{Name: "title", Type: "string", Required: true}},
//	})
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == "conflict" {
//		// the slug is taken
//	}
//	rec, err := c.WithKey(recordKey).CreateRecord(ctx, m.ID, client.RecordInput{
//		Fields: map[string]any{"title": "hello"},
//	})
//
// Several record writes that must be applied together, or not at all, go
// in one Batch (CreateOp, UpdateOp, DeleteOp); a failing operation's error
// names it in Error.Index.
//
// Lists come a page at a time (QueryRecords, ListDeliveries, …) or as
// iterators that follow the pages to the end (Records, Deliveries,
// AccessLogs): range over them with two variables, and stop at the first
// non-nil error. A module's change feed comes a page at a time (Changes),
// page after page to its end (AllChanges), or live: FollowChanges streams
// it and resumes by itself after a disconnect, from the last change it
// yielded.
//
// # Retries
//
// By default the client sends each request once: what may be repeated
// depends on the caller (a POST that starts a recovery may have started it
// before a network error), so callers retry with Error.RetryAfter and
// Transient. WithRetries has the client repeat, itself, the requests that
// are safe to repeat: after a 429 or 503 (waiting Retry-After, capped by
// WithMaxRetryWait) or no answer, a GET, HEAD or DELETE, and a POST or
// PATCH that carries an Idempotency-Key; such a write is also repeated
// after a 409 with Retry-After, which answers a repeat that arrived while
// the server still ran the write's first try. Such a key is made for every
// write by WithIdempotencyKeys, or given for one write by IdempotencyKey;
// the client sends the same key on each retry of the write, so that the
// server applies it once and answers the retry with the first answer.
//
// The request and answer types are declared here rather than shared with
// the server in package api: that package holds the Gin server, the store
// and Temporal, none of which a client of the API should have to build.
// api/openapi.yaml is the contract both sides follow; the members here
// carry its JSON names.
package client
