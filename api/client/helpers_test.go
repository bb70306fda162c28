package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

type discardLogs struct{}

func (discardLogs) Enqueue(models.AccessLog) bool { return true }

// handler is the real API over store.
func handler(store *models.Store) http.Handler {
	return api.New(api.Deps{
		Store: store, Limiter: ratelimit.NewMemory(nil), Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		CheckURL: func(context.Context, string) error { return nil },
	}).Handler()
}

// newAPI serves the real API on SQLite and returns a client with the
// admin key of its one tenant.
func newAPI(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	c, _, _ := newAPIStore(t, opts...)
	return c
}

// newAPIStore is newAPI that also returns the API's store and the tenant's
// id, for tests that write rows no route writes (delivery attempts, access
// logs).
func newAPIStore(t *testing.T, opts ...client.Option) (*client.Client, *models.Store, string) {
	t.Helper()
	store := storetest.Open(t, models.SQLite)
	tenant, _, adminKey, err := store.CreateTenant(context.Background(), "acme", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler(store))
	t.Cleanup(srv.Close)
	return client.New(srv.URL+"/", adminKey, opts...), store, tenant.ID
}

// baseURL and adminKey address the API that TestMain serves for the
// examples, which have no *testing.T to start one: the real API on SQLite,
// with one tenant, whose admin key adminKey is. Each example uses module
// slugs of its own.
var baseURL, adminKey string

func TestMain(m *testing.M) {
	code, err := runWithExampleAPI(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve the examples' API:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runWithExampleAPI(m *testing.M) (int, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "recordhub-client-examples")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	box, err := models.NewSecretBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		return 0, err
	}
	store, err := models.OpenSQLite(ctx, filepath.Join(dir, "recordhub.db"), models.Options{SecretBox: box, MaxOpenConns: 4})
	if err != nil {
		return 0, err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	_, _, key, err := store.CreateTenant(ctx, "examples", 1_000_000)
	if err != nil {
		return 0, fmt.Errorf("create tenant: %w", err)
	}
	srv := httptest.NewServer(handler(store))
	defer srv.Close()
	baseURL, adminKey = srv.URL, key
	return m.Run(), nil
}
