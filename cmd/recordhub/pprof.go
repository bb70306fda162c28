package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// The profiler is opt-in (RECORDHUB_PPROF_ADDR) and served on a listener
// of its own with a private mux: never on the API's port, where every
// caller could read goroutine stacks and heap profiles, and never through
// http.DefaultServeMux, which net/http/pprof also fills and which nothing
// in the service serves.

// pprofMux is the handlers of net/http/pprof under /debug/pprof/.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// checkPprofAddr accepts host:port with an explicit host: an address
// without one (":6060") would listen on every interface, which an
// operator must ask for by name (0.0.0.0:6060).
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return errors.New("RECORDHUB_PPROF_ADDR must be host:port with a host, such as 127.0.0.1:6060 (0.0.0.0:6060 to listen on every interface)")
	}
	return nil
}

// startPprof serves the profiler on addr until stop is called; it returns
// the address it listens on (addr with port 0 gets a free port).
func startPprof(addr string, log *slog.Logger) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("pprof: listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           pprofMux(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	bound = ln.Addr().String()
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		log.Warn("pprof listening beyond this machine: goroutine stacks and heap profiles are readable by anyone who reaches it", "addr", bound)
	} else {
		log.Info("pprof listening", "addr", bound)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof server stopped", "error", err)
		}
	}()
	return bound, func() {
		// A CPU profile in progress would hold a graceful shutdown for
		// its whole duration: close at once.
		_ = srv.Close()
		<-done
	}, nil
}

// servePprof starts the profiler when cfg asks for it; stop is a no-op
// otherwise.
func servePprof(cfg Config, log *slog.Logger) (stop func(), err error) {
	if cfg.PprofAddr == "" {
		return func() {}, nil
	}
	_, stop, err = startPprof(cfg.PprofAddr, log)
	return stop, err
}
