package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/models"
)

// CreateTenant runs `recordhub tenant create NAME --json` with the
// service's environment and returns the new tenant's admin key.
func CreateTenant(ctx context.Context, bin string, env []string, name string) (string, error) {
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

// UnlimitedKey creates a key of admin's tenant named name that may do ops
// on every module without meeting its rate limit, and returns its secret.
func UnlimitedKey(ctx context.Context, admin *client.Client, name string, ops ...string) (string, error) {
	k, err := admin.CreateKey(ctx, client.KeyInput{
		Name:               name,
		Permissions:        map[string][]string{"*": ops},
		RateLimitPerMinute: models.MaxRateLimitPerMinute,
	})
	if err != nil {
		return "", fmt.Errorf("create key %s: %w", name, err)
	}
	return k.Secret, nil
}
