package devtemporal

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// startUI serves the Web UI on host:port and waits until it answers. Its
// pages are embedded in the ui-server module: nothing is downloaded at run
// time.
func (s *Server) startUI(ctx context.Context, host string, port int, namespace string) error {
	// Start checked the address before the server started; check again now,
	// a moment before the UI binds it, as the server took a while.
	if _, _, err := reserveUIAddr(net.JoinHostPort(host, strconv.Itoa(port))); err != nil {
		return err
	}
	bindHost := host
	if strings.Contains(host, ":") {
		bindHost = "[" + host + "]" // the UI joins host and port with a bare ":"
	}
	ui := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                bindHost,
		Port:                port,
		TemporalGRPCAddress: s.address,
		DefaultNamespace:    namespace,
		EnableUI:            true,
		// Served over plain HTTP on a local address.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
		// The browser would otherwise fetch Temporal's news feed.
		DisableNewsFetch: true,
	}))
	s.ui = ui
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		// Returns nil once Stop closes it. Any other failure to serve ends
		// the process inside the library (echo's Logger.Fatal); the port
		// check in Start is what keeps that from happening.
		_ = ui.Start()
	}()

	urlHost := host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		urlHost = "127.0.0.1"
	}
	s.uiURL = "http://" + net.JoinHostPort(urlHost, strconv.Itoa(port))
	return awaitHTTP(ctx, s.uiURL+"/healthz")
}

// awaitHTTP polls url until it answers 200 or ctx ends.
func awaitHTTP(ctx context.Context, url string) error {
	httpClient := &http.Client{Timeout: 2 * time.Second}
	var lastErr error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("temporal UI health check: %w", err)
		}
		resp, err := httpClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal UI at %s did not answer before the start deadline: %w", url, lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
