package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/recordhub/recordhub/models"
)

// openStore opens the configured database for serve and migrate, creating
// what a first run lacks: the data directory, the SQLite file and the
// secret key. It applies migrations when migrate is set.
func openStore(ctx context.Context, cfg Config, migrate bool) (*models.Store, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	key, err := secretKey(cfg, true)
	if err != nil {
		return nil, err
	}
	return openDatabase(ctx, cfg, key, migrate)
}

// openExistingStore opens the database of "recordhub serve" for the
// commands that administer it, and creates nothing: run in the wrong
// directory, a command that made a database and a secret key there would
// seem to work while the server never saw what it did.
func openExistingStore(ctx context.Context, cfg Config) (*models.Store, error) {
	if cfg.DatabaseURL == "" {
		path := sqlitePath(cfg)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf(`no database at %s: run this where "recordhub serve" runs, or set RECORDHUB_DATA_DIR (or DATABASE_URL) to the server's`, path)
		} else if err != nil {
			return nil, fmt.Errorf("database: %w", err)
		}
	}
	key, err := secretKey(cfg, false)
	if err != nil {
		return nil, err
	}
	return openDatabase(ctx, cfg, key, cfg.AutoMigrate)
}

// openDatabase opens PostgreSQL when DATABASE_URL is set, else the SQLite
// file in the data directory, sealing secrets with key.
func openDatabase(ctx context.Context, cfg Config, key []byte, migrate bool) (*models.Store, error) {
	box, err := models.NewSecretBox(key)
	if err != nil {
		return nil, err
	}
	opts := models.Options{SecretBox: box, MaxEndpointsPerTenant: cfg.MaxEndpointsPerTenant, BulkRunning: cfg.BulkRunning, BulkRate: cfg.BulkRate}
	var store *models.Store
	if cfg.DatabaseURL != "" {
		opts.MaxOpenConns = cfg.DatabaseMaxConns
		// Events this process commits wake the dispatchers of workers
		// elsewhere (their ListenEvents, in startWebhooks).
		opts.AnnounceEvents = true
		store, err = models.OpenPostgres(ctx, cfg.DatabaseURL, opts)
	} else {
		store, err = models.OpenSQLite(ctx, sqlitePath(cfg), opts)
	}
	if err != nil {
		return nil, err
	}
	if migrate {
		if err := store.Migrate(ctx); err != nil {
			store.Close()
			return nil, err
		}
	}
	return store, nil
}

func sqlitePath(cfg Config) string { return filepath.Join(cfg.DataDir, "recordhub.db") }

// secretKey returns RECORDHUB_SECRET_KEY, or the key file in the data
// directory, generating it when create is set and it does not exist.
func secretKey(cfg Config, create bool) ([]byte, error) {
	if cfg.SecretKey != "" {
		return models.ParseSecretKey(cfg.SecretKey)
	}
	path := filepath.Join(cfg.DataDir, "secret.key")
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := models.ParseSecretKey(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read secret key: %w", err)
	}
	if !create {
		// A new key would seal secrets that the server cannot open.
		return nil, fmt.Errorf(`no secret key at %s: run this where "recordhub serve" runs, or set RECORDHUB_SECRET_KEY (or RECORDHUB_DATA_DIR) to the server's`, path)
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("generate secret key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write secret key: %w", err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		return nil, fmt.Errorf("write secret key: %w", err)
	}
	return k, nil
}

func migrate(ctx context.Context, cfg Config, stdout io.Writer) error {
	store, err := openStore(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer store.Close()
	fmt.Fprintf(stdout, "migrations applied (%s)\n", store.Dialect())
	return nil
}
