package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"time"
	"unsafe"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// startUI serves the Web UI on l, which it owns from now on, and waits until
// it answers. Its pages are embedded in the ui-server module: nothing is
// downloaded at run time.
func (s *Server) startUI(ctx context.Context, l net.Listener, host, namespace string, write bool, log *slog.Logger) error {
	port := l.Addr().(*net.TCPAddr).Port
	handler, err := newUIHandler(s.address, namespace, host, port, write)
	if err != nil {
		_ = l.Close()
		return err
	}
	s.ui = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		_ = s.ui.Serve(l) // returns once Stop closes it
	}()
	s.uiURL = "http://" + uiHostPort(host, port)
	return awaitHTTP(ctx, s.uiURL+"/healthz")
}

// newUIHandler is the Web UI for the frontend at frontend: the ui-server's
// routes behind hostGuard for the listen address host:port and, unless write,
// behind readOnly.
func newUIHandler(frontend, namespace, host string, port int, write bool) (http.Handler, error) {
	ui := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		// No Host or Port: this package listens, not the UI (see uiRoutes).
		TemporalGRPCAddress: frontend,
		DefaultNamespace:    namespace,
		EnableUI:            true,
		// Hides the UI's write buttons and makes the ui-server refuse
		// writes itself; readOnly below is the check this package relies on.
		DisableWriteActions: !write,
		// Served over plain HTTP on a local address.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
		// The browser would otherwise fetch Temporal's news feed.
		DisableNewsFetch: true,
	}))
	routes, err := uiRoutes(ui)
	if err != nil {
		return nil, err
	}
	if !write {
		routes = readOnly(routes)
	}
	return newHostGuard(host, port, routes), nil
}

// uiRoutes returns the http.Handler of the ui-server's routes (an
// *echo.Echo), read from an unexported field. The ui-server offers no hook
// for middleware in front of its routes, and its Start opens a listener of
// its own (and ends the process through echo's Logger.Fatal when that
// fails). Serving its routes on our listener puts hostGuard in front of every
// request, pages and the /api/v1 proxy alike, with no second, unguarded port
// behind a reverse proxy for a rebound browser to find. Should a ui-server
// upgrade move the field, Start fails with this error and the tests with it.
func uiRoutes(ui *uiserver.Server) (http.Handler, error) {
	f := reflect.ValueOf(ui).Elem().FieldByName("httpServer")
	if !f.IsValid() || f.Kind() != reflect.Pointer || !f.Type().Implements(reflect.TypeFor[http.Handler]()) || f.IsNil() {
		return nil, errors.New("temporal UI: this ui-server version keeps no http.Handler in Server.httpServer; update devtemporal/ui.go")
	}
	routes, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(http.Handler)
	if !ok {
		return nil, errors.New("temporal UI: Server.httpServer is not an http.Handler")
	}
	return routes, nil
}

// uiHostPort is the address to reach a UI listening on host:port at:
// loopback when it listens on every address.
func uiHostPort(host string, port int) string {
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
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
