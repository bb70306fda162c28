package devtemporal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// reservePort checks that host:port can be listened on, or picks a free port
// (FreePort's) when port is 0, and returns the port. The listener is closed again at once:
// the server binds it itself moments later, so this narrows, but cannot
// close, the window in which another process could take it.
func reservePort(setting, host string, port int) (int, error) {
	if port == 0 && host == "127.0.0.1" {
		return FreePort()
	}
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
var internalPort = FreePort

// quietPortsFrom is where FreePort starts drawing from: below the kernel's ephemeral
// range (ip_local_port_range, from 32768 by default), which the kernel
// hands to listeners on port 0 and to outgoing connections. A port is
// picked some time before the server binds it; from the ephemeral range,
// another process's connection or port-0 listener could take it meanwhile
// (seen in tests running side by side: "bind: address already in use").
const quietPortsFrom = 20000

// FreePort returns a port that was free on 127.0.0.1 a moment ago, drawn
// at random below the kernel's ephemeral range, or from that range when
// the kernel leaves nothing below it.
func FreePort() (int, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	if low > quietPortsFrom {
		for range 100 {
			port := quietPortsFrom + rand.IntN(low-quietPortsFrom)
			if _, err := probe(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				return port, nil
			}
		}
	}
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
