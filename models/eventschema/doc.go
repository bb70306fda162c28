// Package eventschema describes the bodies of a module's webhook events as
// one JSON Schema (draft 2020-12) document, typed from the module's fields,
// so that receivers can generate types and validate what they get. The API
// serves it (GET /api/admin/modules/:id/event-schemas) and the CLI prints
// it (recordhub webhooks schema MODULE).
//
// The document is built from the same definitions the store checks record
// values against (models.Field), and it describes the bodies the store
// writes (models' event.go, resync.go, endpoint_disabled.go): a change to
// either must change it too. Its tests validate real bodies against it, and
// cmd/recordhub's end-to-end test validates every body a receiver gets
// against the document the API served at that moment.
//
// What it can and cannot promise:
//
//   - Values are typed by the module's fields as they are now. A record is
//     checked against the fields when it is written, and never rewritten
//     when the module changes: until its next write, a record may keep a
//     field the module no longer has (so record.fields allows other keys),
//     lack a field made required since, or hold a value of a type changed
//     since; and an event written before the change keeps its body.
//   - "format" (date-time, email, uri) is an annotation, as draft 2020-12
//     has it by default: recordhub checks values with Go's RFC 3339 parser,
//     net/mail and net/url, which take a few values a strict format check
//     refuses (a comma before fractional seconds, an internationalised
//     address). Every type, enum, pattern and required member is asserted.
package eventschema
