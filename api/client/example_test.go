package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/recordhub/recordhub/api/client"
)

func Example() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:8080", os.Getenv("RECORDHUB_ADMIN_KEY"))
	m, err := c.CreateModule(ctx, client.ModuleInput{
		Slug: "notes", Name: "Notes",
		Fields: []client.Field{{Name: "title", Type: "string", Required: true}},
	})
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Code == "conflict" {
		fmt.Println("the slug is taken")
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	key, err := c.CreateKey(ctx, client.KeyInput{Name: "notes writer", Permissions: map[string][]string{"notes": {"read", "write"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, err := c.WithKey(key.Secret).CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"title": "hello"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.ID, rec.Version)
}
