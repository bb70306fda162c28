package main

import (
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestTakenHTTPAddrNamesTheSetting: when the API's address is taken, run
// fails with an error that names RECORDHUB_HTTP_ADDR, as the embedded
// Temporal server's port errors name theirs.
func TestTakenHTTPAddrNamesTheSetting(t *testing.T) {
	skipShort(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := testConfig(t, models.SQLite)
	cfg.HTTPAddr = taken.Addr().String()

	err = run(t.Context(), cfg, Env{Stdout: io.Discard, Stderr: io.Discard})
	want := fmt.Sprintf("RECORDHUB_HTTP_ADDR %s is in use; set another address", cfg.HTTPAddr)
	if err == nil || err.Error() != want {
		t.Errorf("run error = %v, want %q", err, want)
	}
}
