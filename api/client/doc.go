// Package client is a Go client of recordhub's HTTP API.
//
// A Client holds the API's base URL and one key; every method takes a
// context first and sends one request. An answer other than 2xx comes
// back as an *Error carrying the API's error object (its code, message,
// request id and field details), a request that got no answer as a
// *TransportError:
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
// The client does not retry: what may be repeated depends on the caller
// (a POST that starts a recovery may have started it before a network
// error), so callers retry with Error.RetryAfter and Transient.
//
// The request and answer types are declared here rather than shared with
// the server in package api: that package holds the Gin server, the store
// and Temporal, none of which a client of the API should have to build.
// api/openapi.yaml is the contract both sides follow.
package client
