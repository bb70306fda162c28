package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/api/console"
)

func get(t *testing.T, srv *httptest.Server, method, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := *srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// TestConsoleServes: the page carries its configuration escaped, every
// answer the strict policy, assets their type; nothing outside the
// embedded files is served and nothing but GET and HEAD is answered.
func TestConsoleServes(t *testing.T) {
	h, err := console.New("/console", console.Config{TemporalUIURL: `http://ui.example"><script>alert(1)</script>`, TemporalNamespace: "de&fault"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console", h)
	mux.Handle("/console/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	res, body := get(t, srv, "GET", "/console/")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, `content="http://ui.example&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"`) ||
		!strings.Contains(body, `content="de&amp;fault"`) {
		t.Errorf("the configuration is not escaped into the page:\n%s", body)
	}
	if strings.Contains(body, "{{") {
		t.Errorf("an unrendered template action in the page:\n%s", body)
	}
	if strings.Contains(body, " style=") || strings.Contains(body, "<style") || strings.Contains(body, "<script>") {
		t.Errorf("inline script or style in the page, which the policy refuses:\n%s", body)
	}
	for _, p := range []string{"/console/", "/console/index.html", "/console/app.js", "/console/app.css", "/console/nope.js", "/console"} {
		res, _ := get(t, srv, "GET", p)
		if res.Header.Get("Content-Security-Policy") != console.Policy || res.Header.Get("X-Content-Type-Options") != "nosniff" ||
			res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", p, res.Header)
		}
	}
	for _, c := range []struct{ path, ctype string }{{"/console/app.js", "text/javascript"}, {"/console/app.css", "text/css"}} {
		res, body := get(t, srv, "GET", c.path)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), c.ctype) || body == "" {
			t.Errorf("%s: %d %q, %d bytes", c.path, res.StatusCode, res.Header.Get("Content-Type"), len(body))
		}
	}
	if res, _ := get(t, srv, "GET", "/console"); res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/console/" {
		t.Errorf("/console: %d to %q, want a redirect to /console/", res.StatusCode, res.Header.Get("Location"))
	}
	for _, p := range []string{"/console/nope.js", "/console/console.go", "/console/static/app.js", "/console/..%2fconsole.go", "/console/app"} {
		if res, _ := get(t, srv, "GET", p); res.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", p, res.StatusCode)
		}
	}
	if res, _ := get(t, srv, "POST", "/console/"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", res.StatusCode)
	}
	if res, body := get(t, srv, "HEAD", "/console/app.js"); res.StatusCode != 200 || body != "" {
		t.Errorf("HEAD: %d with %d bytes", res.StatusCode, len(body))
	}
}
