package main

import (
	"context"
	"strings"
	"testing"
)

// TestSchemaCommand: `webhooks schema` wants one MODULE and an admin key,
// and says so before calling anyone; --help prints its usage. (It prints
// the API's document: TestSchemaEndToEnd runs it against the service.)
func TestSchemaCommand(t *testing.T) {
	env := map[string]string{"RECORDHUB_ADMIN_KEY": testAdminKey, "RECORDHUB_API_URL": "http://127.0.0.1:1"}
	if _, stderr, err := runWithEnv(context.Background(), env, "webhooks", "schema"); err == nil || !strings.Contains(err.Error(), "MODULE") || !strings.Contains(stderr, schemaUsage) {
		t.Errorf("no MODULE: %v, stderr %q", err, stderr)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "schema", "a", "b"); err == nil {
		t.Error("two modules: no error")
	}
	if _, _, err := runWithEnv(context.Background(), map[string]string{}, "webhooks", "schema", "orders"); err == nil || !strings.Contains(err.Error(), adminKeyEnv) {
		t.Errorf("no admin key: %v, want it to name %s", err, adminKeyEnv)
	}
	stdout, _, err := runWithEnv(context.Background(), env, "webhooks", "schema", "--help")
	if err != nil || !strings.Contains(stdout, schemaUsage) || !strings.Contains(stdout, "-api") {
		t.Errorf("--help: %v\n%s", err, stdout)
	}
}
