package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// An admin makes a module and a key that may write its records; the key
// writes one.
func Example() {
	ctx := context.Background()
	admin := client.New(baseURL, adminKey)
	m, err := admin.CreateModule(ctx, client.ModuleInput{
		Slug: "notes", Name: "Notes",
		Fields: []client.Field{{Name: "title", Type: "string", Required: true}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	key, err := admin.CreateKey(ctx, client.KeyInput{
		Name: "notes writer", Permissions: map[string][]string{m.ID: {"read", "write"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	writer := admin.WithKey(key.Secret)
	rec, err := writer.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"title": "hello"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Fields["title"], rec.Version)
	// Output: hello 1
}

// Records follows the list's pages to its end: here three pages of two.
func ExampleClient_Records() {
	ctx := context.Background()
	c := client.New(baseURL, adminKey)
	m, err := c.CreateModule(ctx, client.ModuleInput{
		Slug: "tasks", Name: "Tasks",
		Fields: []client.Field{{Name: "title", Type: "string"}, {Name: "done", Type: "boolean"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 6 {
		in := client.RecordInput{Fields: map[string]any{"title": fmt.Sprintf("task %d", i), "done": i%3 == 0}}
		if _, err := c.CreateRecord(ctx, m.ID, in); err != nil {
			fmt.Println(err)
			return
		}
	}
	q := client.RecordQuery{Limit: 2, Sort: client.SortOldest}
	for rec, err := range c.Records(ctx, m.ID, q) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(rec.Fields["title"])
	}
	q.Filters = []client.Filter{client.Eq("done", "true")}
	for rec, err := range c.Records(ctx, m.ID, q) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("done:", rec.Fields["title"])
	}
	// Output:
	// task 0
	// task 1
	// task 2
	// task 3
	// task 4
	// task 5
	// done: task 0
	// done: task 3
}

// An answer other than 2xx is an *Error with the API's code, the HTTP
// status and, for a validation failure, a detail per field.
func ExampleError() {
	ctx := context.Background()
	c := client.New(baseURL, adminKey)
	m, err := c.CreateModule(ctx, client.ModuleInput{
		Slug: "invoices", Name: "Invoices",
		Fields: []client.Field{{Name: "amount", Type: "number", Required: true}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"amount": "twelve"}})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code)
		for _, d := range apiErr.Details {
			fmt.Printf("%s: %s\n", d.Field, d.Message)
		}
	}

	rec, err := c.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"amount": 12}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.UpdateRecord(ctx, m.ID, rec.ID, client.RecordPatch{Fields: map[string]any{"amount": 13}}); err != nil {
		fmt.Println(err)
		return
	}
	// A change based on version 1, which is no longer current, is refused.
	_, err = c.UpdateRecord(ctx, m.ID, rec.ID, client.RecordPatch{Fields: map[string]any{"amount": 14}, IfMatch: rec.Version})
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code)
	}
	// Output:
	// 422 validation_failed
	// fields.amount: must be a number
	// 412 precondition_failed
}

// Batch applies several writes in one transaction, all or none: a failing
// operation's error names its index, and nothing of the batch is kept.
func ExampleClient_Batch() {
	ctx := context.Background()
	c := client.New(baseURL, adminKey)
	m, err := c.CreateModule(ctx, client.ModuleInput{
		Slug: "stock", Name: "Stock",
		Fields: []client.Field{{Name: "sku", Type: "string", Required: true}, {Name: "count", Type: "integer"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Batch(ctx, []client.BatchOp{
		client.CreateOp(m.ID, client.RecordInput{Fields: map[string]any{"sku": "A-1", "count": 3}}),
		client.CreateOp(m.ID, client.RecordInput{Fields: map[string]any{"sku": "B-2", "count": 5}}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res {
		fmt.Println(r.Status, r.Record.Fields["sku"], r.ETag)
	}

	_, err = c.Batch(ctx, []client.BatchOp{
		client.UpdateOp(m.ID, res[0].Record.ID, client.RecordPatch{Fields: map[string]any{"count": 2}}),
		client.UpdateOp(m.ID, res[1].Record.ID, client.RecordPatch{Fields: map[string]any{"count": "many"}}),
	})
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Index != nil {
		fmt.Println(apiErr.Code, "at operation", *apiErr.Index)
	}
	rec, err := c.GetRecord(ctx, m.ID, res[0].Record.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Fields["count"], rec.Version)
	// Output:
	// 201 A-1 "1"
	// 201 B-2 "1"
	// validation_failed at operation 1
	// 3 1
}

// FollowChanges follows a module's changes live, resuming by itself after
// a disconnect: here from where the feed ended before a record was
// written, until its first change.
func ExampleClient_FollowChanges() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(baseURL, adminKey)
	m, err := c.CreateModule(ctx, client.ModuleInput{
		Slug: "followed", Name: "Followed", Fields: []client.Field{{Name: "title", Type: "string"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	end, err := c.Changes(ctx, m.ID, client.ChangesQuery{After: client.Latest})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"title": "hello"}}); err != nil {
		fmt.Println(err)
		return
	}
	for ch, err := range c.FollowChanges(ctx, m.ID, client.FollowOptions{After: end.NextCursor}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(ch.Event, ch.Record.Fields["title"])
		break
	}
	// Output: record_created hello
}
