package devtemporal

import (
	"net"
	"net/http"
	"strconv"
	"strings"
)

// hostGuard answers 421 Misdirected Request to a request whose Host is not an
// address of the UI's listener. The UI has no login; without this check a web
// page whose own host name an attacker points at 127.0.0.1 after it has
// loaded (DNS rebinding) could read and drive it as a same-origin page. A
// rebound name is always the attacker's, so the names and addresses accepted
// are the listener's own:
//
//   - the listen host and port, as configured (127.0.0.1:8233);
//   - when the listen host is loopback or unspecified (127.0.0.1, ::1,
//     localhost, 0.0.0.0, ::, ""): localhost and any loopback IP literal
//     (127.0.0.1, [::1]) with the listen port;
//   - when it is unspecified: also the IP literals of this machine's
//     interfaces with the listen port, which is how another machine reaches
//     it. No other name: a name of this machine in DNS is refused too.
//
// A Host without a port stands for port 80.
type hostGuard struct {
	next        http.Handler
	port        string
	host        string // listen host, lower case
	ip          net.IP // listen host as an IP, nil for a name
	loopback    bool   // listen host is loopback or unspecified
	unspecified bool
	want        string // what to tell a refused client
}

func newHostGuard(host string, port int, next http.Handler) *hostGuard {
	g := &hostGuard{
		next: next,
		port: strconv.Itoa(port),
		host: strings.ToLower(host),
		ip:   net.ParseIP(host),
		want: uiHostPort(host, port),
	}
	g.unspecified = host == "" || (g.ip != nil && g.ip.IsUnspecified())
	g.loopback = g.unspecified || g.host == "localhost" || (g.ip != nil && g.ip.IsLoopback())
	return g
}

func (g *hostGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.allowed(r.Host) {
		http.Error(w, "misdirected request: this Temporal Web UI answers only at http://"+g.want, http.StatusMisdirectedRequest)
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *hostGuard) allowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), "80"
	}
	if host == "" || port != g.port {
		return false
	}
	host = strings.ToLower(host)
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host == g.host || (g.loopback && host == "localhost")
	case g.ip != nil && ip.Equal(g.ip):
		return true
	case g.loopback && ip.IsLoopback():
		return true
	case g.unspecified:
		return isInterfaceIP(ip)
	}
	return false
}

// isInterfaceIP reports whether ip is an address of one of this machine's
// network interfaces now (they come and go with DHCP, VPNs, Wi-Fi).
func isInterfaceIP(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// readOnly answers 403 to every request that could change something through
// the UI: any method but GET, HEAD and OPTIONS, except POST to a workflow
// query, the one read of the Temporal HTTP API that is a POST (the UI's stack
// trace and query tabs). The ui-server refuses writes itself when
// DisableWriteActions is set, but it exempts queries by looking for
// "/workflows/" and "/query/" anywhere in the decoded path, which an id with
// encoded slashes satisfies (POST .../batch-operations/x%2Fworkflows%2Fy%2Fquery%2Fz
// starts a batch job), so this check stands on its own: it matches the
// escaped path segment by segment, as the API's router does.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isRead(r) {
			http.Error(w, "forbidden: write actions are off in this Temporal Web UI (RECORDHUB_TEMPORAL_UI_WRITE=true turns them on)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isRead(r *http.Request) bool {
	// The API's router turns a form POST into another method with this
	// header; nothing the UI sends carries it.
	if r.Header.Get("X-HTTP-Method-Override") != "" {
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	case http.MethodPost:
		return isQueryPath(r.URL.EscapedPath())
	}
	return false
}

// isQueryPath reports whether path is
// /api/v1/namespaces/{namespace}/workflows/{workflow_id}/query/{query_type}.
func isQueryPath(path string) bool {
	seg := strings.Split(path, "/")
	return len(seg) == 9 && seg[0] == "" && seg[1] == "api" && seg[2] == "v1" &&
		seg[3] == "namespaces" && seg[4] != "" && seg[5] == "workflows" && seg[6] != "" &&
		seg[7] == "query" && seg[8] != ""
}
