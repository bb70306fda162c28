package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/recordhub/recordhub/models"
)

func TestPprofAddrConfig(t *testing.T) {
	for _, c := range []struct {
		value, want string
		ok          bool
	}{
		{"", "", true},
		{"127.0.0.1:6060", "127.0.0.1:6060", true},
		{"[::1]:6060", "[::1]:6060", true},
		{"0.0.0.0:6060", "0.0.0.0:6060", true}, // every interface, asked for by name
		{":6060", "", false},                   // every interface, by omission
		{"127.0.0.1", "", false},
	} {
		env := map[string]string{"RECORDHUB_PPROF_ADDR": c.value}
		cfg, err := configFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if (err == nil) != c.ok {
			t.Errorf("RECORDHUB_PPROF_ADDR=%q: error %v, want ok %v", c.value, err, c.ok)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "RECORDHUB_PPROF_ADDR") {
				t.Errorf("RECORDHUB_PPROF_ADDR=%q: error %q does not name the variable", c.value, err)
			}
			continue
		}
		if cfg.PprofAddr != c.want {
			t.Errorf("RECORDHUB_PPROF_ADDR=%q: PprofAddr %q, want %q", c.value, cfg.PprofAddr, c.want)
		}
	}
}

// TestServeProfiler: with RECORDHUB_PPROF_ADDR the profiler answers on that
// address and not on the API's; without it nothing listens there and the
// API's port has no profiler either.
func TestServeProfiler(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("set=%v", on), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, models.SQLite)
			// An API replica needs no Temporal to start.
			cfg.Role = RoleAPI
			cfg.TemporalAddress = fmt.Sprintf("127.0.0.1:%d", freePort(t))
			addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			if on {
				cfg.PprofAddr = addr
			}
			base, _ := startService(t, cfg, io.Discard)

			res, err := http.Get("http://" + addr + "/debug/pprof/")
			switch {
			case on && err != nil:
				t.Fatalf("profiler at %s: %v", addr, err)
			case on:
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
					t.Errorf("GET /debug/pprof/ on %s: %d %.200s", addr, res.StatusCode, body)
				}
			case err == nil:
				res.Body.Close()
				t.Errorf("without RECORDHUB_PPROF_ADDR something answers on %s: %s", addr, res.Status)
			case !errors.Is(err, syscall.ECONNREFUSED):
				t.Errorf("without RECORDHUB_PPROF_ADDR, %s: %v, want connection refused", addr, err)
			}

			if st, _ := call(t, "GET", base+"/debug/pprof/", "", ""); st != http.StatusNotFound {
				t.Errorf("the API's port answers /debug/pprof/ with %d, want 404", st)
			}
		})
	}
}

func TestPprofListenerStops(t *testing.T) {
	bound, stop, err := startPprof("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get("http://" + bound + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("cmdline: %s", res.Status)
	}
	stop()
	if c, err := net.Dial("tcp", bound); err == nil {
		c.Close()
		t.Errorf("the profiler still listens on %s after stop", bound)
	}
}
