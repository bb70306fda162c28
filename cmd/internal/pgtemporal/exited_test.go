package pgtemporal

import (
	"context"
	"testing"
	"time"
)

// TestExited: a server that dies behind the package's back is reported
// exited; one ended by Kill, or running again after Restart, is not.
func TestExited(t *testing.T) {
	pgURL := postgresURL(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	srv, err := Start(ctx, Options{PostgresURL: pgURL, LogLevel: "warn", MaxConns: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	if srv.Exited() {
		t.Fatal("Exited() = true for a running server")
	}

	// A crash: the process is killed by someone else.
	srv.mu.Lock()
	p := srv.proc
	srv.mu.Unlock()
	if err := kill(p.cmd.Process); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if !srv.Exited() {
		t.Error("Exited() = false after the process died")
	}

	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if srv.Exited() {
		t.Error("Exited() = true after Restart")
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if srv.Exited() {
		t.Error("Exited() = true after Kill: a planned stop is no crash")
	}
}
