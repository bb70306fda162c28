package devtemporal

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// reservePort checks that host:port can be listened on, or picks a free port
// when port is 0, and returns the port. The listener is closed again at once:
// the server binds it itself moments later, so this narrows, but cannot
// close, the window in which another process could take it.
func reservePort(setting, host string, port int) (int, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	got, err := probe(addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return 0, fmt.Errorf("%s %d is in use; set another port", setting, port)
	}
	if err != nil {
		return 0, fmt.Errorf("%s %d: %w", setting, port, err)
	}
	return got, nil
}

// listenUI listens on the UI's host:port (port 0 picks a free port) and
// returns the listener and the host. Start holds it from its first step, so
// nothing can take the address while the Temporal server starts.
func listenUI(addr string) (net.Listener, string, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("RECORDHUB_TEMPORAL_UI_ADDR %q: %w", addr, err)
	}
	if _, err := strconv.ParseUint(portText, 10, 16); err != nil {
		return nil, "", fmt.Errorf("RECORDHUB_TEMPORAL_UI_ADDR %q: port is not a number from 0 to 65535", addr)
	}
	l, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, "", fmt.Errorf(`RECORDHUB_TEMPORAL_UI_ADDR %s is in use; set another address or "" to turn the UI off`, addr)
	}
	if err != nil {
		return nil, "", fmt.Errorf("RECORDHUB_TEMPORAL_UI_ADDR %s: %w", addr, err)
	}
	return l, host, nil
}

// internalPort picks the port of one of the server's internal services;
// a variable, so that a test can hand out a port that is taken.
var internalPort = freeLoopbackPort

// freeLoopbackPort returns a port that was free on 127.0.0.1 a moment ago.
func freeLoopbackPort() (int, error) {
	port, err := probe("127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for temporal: %w", err)
	}
	return port, nil
}

// probe listens on addr, closes the listener and returns the port it got.
func probe(addr string) (int, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}
