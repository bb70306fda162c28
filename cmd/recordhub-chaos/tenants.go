package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"time"

	"github.com/recordhub/recordhub/models"
)

// setUpTenant gives the tenant of adminKey a key without a practical rate
// limit, a module and an endpoint on the receiver for record_created.
func setUpTenant(ctx context.Context, api *service, name, adminKey, receiverURL string) (tenant, error) {
	t := tenant{name: name}
	var key struct {
		Key string `json:"key"`
	}
	err := call(ctx, api, "POST", "/api/admin/keys", adminKey, map[string]any{
		"name":                  "chaos",
		"permissions":           map[string][]string{"*": {"read", "write"}},
		"rate_limit_per_minute": models.MaxRateLimitPerMinute,
	}, &key)
	if err != nil {
		return t, fmt.Errorf("tenant %s: create key: %w", name, err)
	}
	t.key = key.Key
	var mod struct {
		ID string `json:"id"`
	}
	err = call(ctx, api, "POST", "/api/admin/modules", adminKey, map[string]any{
		"slug": "chaos", "name": "chaos",
		"fields": []map[string]any{{"name": "title", "type": "string", "required": true}},
	}, &mod)
	if err != nil {
		return t, fmt.Errorf("tenant %s: create module: %w", name, err)
	}
	t.moduleID = mod.ID
	var ep struct {
		ID string `json:"id"`
	}
	err = call(ctx, api, "POST", "/api/admin/webhook-endpoints", adminKey, map[string]any{
		"url": receiverURL + "/" + name, "events": []string{"record_created"}, "module_ids": []string{t.moduleID},
	}, &ep)
	if err != nil {
		return t, fmt.Errorf("tenant %s: create endpoint: %w", name, err)
	}
	t.endpoint = ep.ID
	return t, nil
}

// createTenant runs `recordhub tenant create NAME --json` with the
// services' environment and returns the new tenant's admin key.
func createTenant(ctx context.Context, bin string, env []string, name string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "tenant", "create", name, "--json")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("recordhub tenant create: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var t struct {
		AdminKey string `json:"admin_key"`
	}
	if err := json.Unmarshal(out, &t); err != nil || t.AdminKey == "" {
		return "", fmt.Errorf("recordhub tenant create printed %q", out)
	}
	return t.AdminKey, nil
}

// call sends a JSON request with a bearer key and decodes a 2xx answer into
// out.
func call(ctx context.Context, api *service, method, path, key string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, api.url(path), bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(body))
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}
