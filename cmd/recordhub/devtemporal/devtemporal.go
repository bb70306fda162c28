// Package devtemporal runs a single-node Temporal server, and optionally its
// Web UI, inside the recordhub process, so that `recordhub serve` works on a
// machine with nothing but Go installed. State is one SQLite file in the data
// directory; workflow histories survive restarts and crashes.
//
// Only cmd/recordhub imports this package: it links the whole Temporal server
// and UI (about 14 CPU-minutes of cold build, and most of a 237 MB binary),
// which no other package's tests should pay for.
package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/server/temporal"
)

// Defaults for zero fields of Config.
const (
	DefaultNamespace = "default"
	DefaultRetention = 30 * 24 * time.Hour
)

// minRetention is the shortest retention the server accepts for a local
// namespace (dynamic config system.namespaceMinRetentionLocal).
const minRetention = time.Hour

// startTimeout bounds Start when its context has no earlier deadline.
const startTimeout = time.Minute

// Config describes the embedded server.
type Config struct {
	// DataDir holds temporal.db (created with its schema when missing).
	DataDir string
	// Port is the frontend gRPC port on 127.0.0.1; 0 picks a free port.
	Port int
	// Namespace is registered at the first start; "" means DefaultNamespace.
	Namespace string
	// Retention is how long closed workflow histories are kept; 0 means
	// DefaultRetention. It is applied to the namespace at every start.
	Retention time.Duration
	// UIAddr is host:port of the Web UI; "" means no UI, port 0 a free port.
	// The UI answers only requests addressed to it by this address (see
	// hostGuard).
	UIAddr string
	// UIWrite lets the Web UI change things (start, signal, cancel,
	// terminate, reset workflows, batch operations, namespace settings); off,
	// it only reads (see readOnly).
	UIWrite bool
	// Logger receives the server's warnings and errors; nil discards them.
	Logger *slog.Logger
}

// Server is a running embedded Temporal server. Stop it with Stop.
type Server struct {
	address  string
	uiURL    string
	temporal temporal.Server
	ui       *http.Server
	uiDone   chan struct{} // closed when the UI's Serve returns
	logLevel *slog.LevelVar

	stopOnce sync.Once
	stopErr  error
}

// Start launches the server (and the UI when cfg.UIAddr is set) and returns
// once the frontend answers for cfg.Namespace and the UI answers HTTP. ctx
// bounds only the start; the server runs until Stop.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	logLevel := new(slog.LevelVar)
	logLevel.Set(slog.LevelWarn)
	serverLog := serverSlog(cfg.Logger, logLevel)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	// Check the frontend port and take the UI's address before anything
	// else: a taken frontend port fails deep inside the server.
	frontendPort, err := reservePort("RECORDHUB_TEMPORAL_PORT", "127.0.0.1", cfg.Port)
	if err != nil {
		return nil, err
	}
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(frontendPort))
	var uiListener net.Listener
	var uiHost string
	if cfg.UIAddr != "" {
		if uiListener, uiHost, err = listenUI(cfg.UIAddr); err != nil {
			return nil, err
		}
		defer func() {
			if uiListener != nil { // not handed to startUI
				_ = uiListener.Close()
			}
		}()
	}

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create temporal data dir: %w", err)
	}
	dbPath, err := filepath.Abs(filepath.Join(cfg.DataDir, "temporal.db"))
	if err != nil {
		return nil, fmt.Errorf("temporal database path: %w", err)
	}
	sqlCfg := sqliteConfig(dbPath)
	if err := prepareDatabase(sqlCfg, cfg.Namespace, cfg.Retention); err != nil {
		return nil, err
	}
	if err := trimVisibilityIndexes(ctx, dbPath); err != nil {
		return nil, err
	}

	// Again, now that preparing the database may have taken a while.
	if _, err := reservePort("RECORDHUB_TEMPORAL_PORT", "127.0.0.1", frontendPort); err != nil {
		return nil, err
	}
	srv, err := startTemporal(sqlCfg, frontendPort, serverLog)
	if err != nil {
		return nil, err
	}
	s := &Server{address: address, temporal: srv, logLevel: logLevel}

	if err := awaitFrontend(ctx, address, cfg.Namespace, cfg.Retention, cfg.Logger, serverLog); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if uiListener != nil {
		l := uiListener
		uiListener = nil
		if err := s.startUI(ctx, l, uiHost, cfg.Namespace, cfg.UIWrite, serverLog); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// Address is host:port of the frontend gRPC service, for client.Dial.
func (s *Server) Address() string { return s.address }

// UIURL is the Web UI's base URL, or "" when the UI is off.
func (s *Server) UIURL() string { return s.uiURL }

// Stop stops the UI, then the server. It is safe to call more than once.
// The SQLite file stays open until the process exits: Temporal's SQLite
// plugin keeps one connection per database for the life of the process (and
// reuses it when Start runs again on the same directory).
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.logLevel.Set(slog.LevelError)
		if s.ui != nil {
			_ = s.ui.Close()
			<-s.uiDone
		}
		if err := s.temporal.Stop(); err != nil {
			s.stopErr = fmt.Errorf("stop temporal server: %w", err)
		}
	})
	return s.stopErr
}

func withDefaults(cfg Config) (Config, error) {
	if cfg.DataDir == "" {
		return cfg, errors.New("temporal data dir is empty")
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return cfg, fmt.Errorf("RECORDHUB_TEMPORAL_PORT %d is not a port number", cfg.Port)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Retention < minRetention {
		return cfg, fmt.Errorf("RECORDHUB_TEMPORAL_RETENTION %s is shorter than the server's minimum of %s", cfg.Retention, minRetention)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}
