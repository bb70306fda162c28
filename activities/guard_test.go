package activities

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// testZone is what the fake DNS answers. Nothing here is ever dialled
// unless the dialer is expected to refuse it first.
var testZone = map[string][]string{
	"public.example.test":    {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:a8c8"},
	"private.example.test":   {"10.0.0.5"},
	"v6private.example.test": {"fd00::5"},
	"mapped.example.test":    {"::ffff:127.0.0.1"},
	"metadata.example.test":  {"169.254.169.254"},
	"mixed.example.test":     {"93.184.215.14", "10.0.0.7"},
	"foo.localhost":          {"127.0.0.1"},
}

// ssrfCases are URL forms that must never be reached. why is part of the
// refusal's message; dial says the dialer refuses it on its own too (an IP
// literal, or a name the fake DNS answers with only blocked addresses).
var ssrfCases = []struct {
	url  string
	why  string
	dial bool
}{
	{"http://10.0.0.1/", "10.0.0.1, a private address", true},
	{"http://172.16.5.4/", "a private address", true},
	{"http://172.31.255.255:8080/", "a private address", true},
	{"http://192.168.1.1/", "a private address", true},
	{"http://127.0.0.1/", "a loopback address", true},
	{"http://127.255.255.254:8080/hook", "a loopback address", true},
	{"http://[::1]/", "a loopback address", true},
	{"http://169.254.1.1/", "a link-local address", true},
	{"http://169.254.169.254/latest/meta-data/", "the cloud metadata address", true},
	{"http://[fe80::1]/", "a link-local address", true},
	{"http://100.64.0.1/", "CGNAT", true},
	{"http://100.127.255.254/", "CGNAT", true},
	{"http://224.0.0.1/", "a multicast address", true},
	{"http://[ff02::1]/", "a multicast address", true},
	{"http://0.0.0.0/", "an unspecified address", true},
	{"http://0.1.2.3/", "an unspecified address", true},
	{"http://[::]/", "an unspecified address", true},
	{"http://192.0.2.10/", "a documentation address", true},
	{"http://198.51.100.7/", "a documentation address", true},
	{"https://203.0.113.9/", "a documentation address", true},
	{"http://[2001:db8::1]/", "a documentation address", true},
	{"http://240.0.0.1/", "reserved", true},
	{"http://255.255.255.255/", "reserved", true},
	{"http://198.18.0.1/", "reserved", true},
	{"http://[2002:7f00:1::]/", "reserved", true},
	{"http://[fc00::1]/", "a private address", true},
	{"http://[fd12:3456::1]/", "a private address", true},
	{"http://[::ffff:127.0.0.1]/", "IPv4-mapped", true},
	{"http://[::ffff:10.0.0.1]/", "IPv4-mapped", true},
	{"http://[64:ff9b::a00:1]/", "NAT64", true},
	{"http://[64:ff9b::7f00:1]/", "NAT64", true},
	{"http://[fe80::1%25eth0]/", "zone", false},
	{"http://2130706433/", "four decimal numbers", false},
	{"http://0177.0.0.1/", "four decimal numbers", false},
	{"http://0x7f.0.0.1/", "four decimal numbers", false},
	{"http://0x7f000001/", "four decimal numbers", false},
	{"http://017700000001/", "four decimal numbers", false},
	{"http://127.1/", "four decimal numbers", false},
	{"http://127.0.0.1./", "four decimal numbers", false},
	{"http://10.0.0.010/", "four decimal numbers", false},
	{"http://localhost/", "a loopback address", true},
	{"http://localhost:8080/x", "a loopback address", true},
	{"http://LOCALHOST./", "a loopback address", false},
	{"http://foo.localhost/", "a loopback address", true},
	{"http://private.example.test/", `"private.example.test" resolves to 10.0.0.5, a private address`, true},
	{"http://v6private.example.test/", "a private address", true},
	{"http://mapped.example.test/", "a loopback address", true},
	{"http://metadata.example.test/", "the cloud metadata address", true},
	// One public address does not make the private one safe. Not dialled:
	// the dialer would try the public address, and tests reach nothing
	// beyond loopback.
	{"http://mixed.example.test/", "10.0.0.7, a private address", false},
	{"http://nxdomain.example.test/", "does not resolve", false},
	{"ftp://example.com/", "only http and https", false},
	{"file:///etc/passwd", "only http and https", false},
	{"gopher://127.0.0.1:70/_GET", "only http and https", false},
	{"javascript:alert(1)", "only http and https", false},
	{"http:example.com", "absolute", false},
	{"http:///hook", "absolute", false},
	{"/hook", "only http and https", false},
	{"http://example.com@127.0.0.1/", "user information", true},
	{"http://user:pass@public.example.test/", "user information", false},
	{"http://127.0.0.1:0/", "out of range", false},
	{"http://public.example.test:99999/", "out of range", false},
	{"http://exa mple.test/", "cannot be parsed", false},
}

func TestCheckURLRefuses(t *testing.T) {
	dns := newFakeDNS(t, testZone)
	g := &Guard{Resolver: dns.resolver()}
	for _, tc := range ssrfCases {
		t.Run(tc.url, func(t *testing.T) {
			err := g.CheckURL(t.Context(), tc.url)
			assertInvalidURL(t, err, tc.why)
		})
	}
}

func TestDialerRefuses(t *testing.T) {
	dns := newFakeDNS(t, testZone)
	d, err := NewDeliverer(nopStore{}, Config{Resolver: dns.resolver()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range ssrfCases {
		if !tc.dial {
			continue
		}
		t.Run(tc.url, func(t *testing.T) {
			// Straight to the client, past the checks Attempt makes first:
			// the dialer alone must refuse.
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, tc.url, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := d.client.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("POST %s: connected (status %d), want refused by the dialer", tc.url, resp.StatusCode)
			}
			if got := classify(err, d.schedule.AttemptTimeout, false, nil); got.code != models.DeliveryErrBlockedDestination || got.retry {
				t.Errorf("POST %s: classified %s (retry %v), want %s, not retried; error: %v", tc.url, got.code, got.retry, models.DeliveryErrBlockedDestination, err)
			}
		})
	}
}

func TestCheckURLAccepts(t *testing.T) {
	dns := newFakeDNS(t, testZone)
	tests := []struct {
		url   string
		allow []netip.Prefix
	}{
		{url: "http://public.example.test/"},
		{url: "https://public.example.test:8443/hooks/recordhub?tenant=1#frag"},
		{url: "HTTPS://Public.Example.Test./"},
		{url: "http://93.184.215.14/"},
		{url: "https://[2606:4700::1111]/"},
		// The allow list is the only exemption.
		{url: "http://10.1.2.3:8080/", allow: prefixes("10.0.0.0/8")},
		{url: "http://private.example.test/", allow: prefixes("10.0.0.0/8")},
		{url: "http://localhost/", allow: prefixes("127.0.0.0/8", "::1/128")},
		{url: "http://[fd00::5]/", allow: prefixes("fd00::/8")},
		{url: "http://v6private.example.test/", allow: prefixes("fd00::/8")},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			g := &Guard{Resolver: dns.resolver(), Allow: tc.allow}
			if err := g.CheckURL(t.Context(), tc.url); err != nil {
				t.Errorf("CheckURL(%q) = %v, want nil", tc.url, err)
			}
		})
	}
}

func TestAllowListExemptsOnlyWhatItNames(t *testing.T) {
	dns := newFakeDNS(t, testZone)
	g := &Guard{Resolver: dns.resolver(), Allow: prefixes("10.0.0.0/8")}
	tests := []struct{ url, why string }{
		{"http://192.168.1.1/", "a private address"},
		{"http://127.0.0.1/", "a loopback address"},
		// The mapped form of an allowed address stays refused: write the
		// IPv4 address.
		{"http://[::ffff:10.0.0.1]/", "IPv4-mapped"},
		{"http://012.0.0.1/", "four decimal numbers"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			assertInvalidURL(t, g.CheckURL(t.Context(), tc.url), tc.why)
		})
	}
}

// TestInvalidURLNamesTheAllowList: a refusal of an address a genuine
// receiver may live on (a developer's loopback, an on-premise network) says
// which setting exempts it, with the address as the example; a refusal of
// an address nobody should exempt suggests nothing.
func TestInvalidURLNamesTheAllowList(t *testing.T) {
	dns := newFakeDNS(t, testZone)
	g := &Guard{Resolver: dns.resolver()}
	const knob = "RECORDHUB_WEBHOOK_ALLOW_CIDRS"
	tests := []struct {
		url  string
		want string // "" when no hint may appear
	}{
		{"http://127.0.0.1:8099/webhooks", "a loopback address; receivers on private or loopback networks must be allowed by the server's operator with RECORDHUB_WEBHOOK_ALLOW_CIDRS (e.g. 127.0.0.1/32)"},
		{"http://localhost:8099/", knob + " (e.g. 127.0.0.1/32)"},
		{"http://[::1]/", knob + " (e.g. ::1/128)"},
		{"http://192.168.1.20/", knob + " (e.g. 192.168.1.20/32)"},
		{"http://private.example.test/", `"private.example.test" resolves to 10.0.0.5, a private address; receivers on private or loopback networks must be allowed by the server's operator with ` + knob + " (e.g. 10.0.0.5/32)"},
		{"http://100.64.0.1/", knob + " (e.g. 100.64.0.1/32)"},
		{"http://169.254.169.254/", ""},
		{"http://metadata.example.test/", ""},
		{"http://224.0.0.1/", ""},
		{"http://[::ffff:127.0.0.1]/", ""},
		{"http://nxdomain.example.test/", ""},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			var me *models.Error
			if err := g.CheckURL(t.Context(), tc.url); !errors.As(err, &me) {
				t.Fatalf("CheckURL(%q) = %v, want a *models.Error", tc.url, err)
			}
			if tc.want == "" {
				if strings.Contains(me.Message, knob) {
					t.Errorf("message %q suggests %s for an address nobody should exempt", me.Message, knob)
				}
				return
			}
			if !strings.Contains(me.Message, tc.want) {
				t.Errorf("message %q does not say %q", me.Message, tc.want)
			}
		})
	}
}

// TestCheckURLDefaultResolver covers the package-level function with
// literals only: nothing is resolved or sent.
func TestCheckURLDefaultResolver(t *testing.T) {
	assertInvalidURL(t, CheckURL(t.Context(), "http://10.0.0.1/", nil), "a private address")
	assertInvalidURL(t, CheckURL(t.Context(), "http://localhost:8080/", nil), "a loopback address")
	if err := CheckURL(t.Context(), "https://93.184.215.14/hook", nil); err != nil {
		t.Errorf("public literal: %v", err)
	}
	if err := CheckURL(t.Context(), "http://127.0.0.1:9/", prefixes("127.0.0.0/8")); err != nil {
		t.Errorf("allowed loopback: %v", err)
	}
}

func TestParseAllowCIDRs(t *testing.T) {
	tests := []struct {
		in      string
		want    []netip.Prefix
		wantErr bool
	}{
		{in: "", want: nil},
		{in: " , ", want: nil},
		{in: "10.0.0.0/8", want: prefixes("10.0.0.0/8")},
		{in: "10.1.2.3/8, 192.168.1.20 ,::1", want: prefixes("10.0.0.0/8", "192.168.1.20/32", "::1/128")},
		{in: "fd00::/8,127.0.0.0/8", want: prefixes("fd00::/8", "127.0.0.0/8")},
		{in: "10.0.0.0/33", wantErr: true},
		{in: "intranet", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAllowCIDRs(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseAllowCIDRs(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(got, tc.want, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("ParseAllowCIDRs(%q) (-got +want):\n%s", tc.in, diff)
			}
		})
	}
}

func assertInvalidURL(t *testing.T, err error, why string) {
	t.Helper()
	var me *models.Error
	if !errors.As(err, &me) || me.Kind != models.KindInvalidURL {
		t.Fatalf("error = %v, want a *models.Error of kind %s", err, models.KindInvalidURL)
	}
	if !strings.Contains(me.Message, why) {
		t.Errorf("message %q does not say %q", me.Message, why)
	}
}

// TestCheckURLBrokers: broker URLs pass the same address rules as HTTP
// ones, their login allowed, their form judged by models.ParseBrokerURL.
func TestCheckURLBrokers(t *testing.T) {
	for _, tc := range []struct {
		url, says string
	}{
		{"amqp://app:pw@8.8.8.8/?exchange=records&routing_key={module}.{event_type}", ""},
		{"nats://tok3n@[2606:4700:4700::1111]:4222/records.{event_type}", ""},
		{"amqps://app:pw@127.0.0.1/?routing_key=x", "a loopback address"},
		{"nats://10.0.0.7/records", "a private address"},
		{"nats://169.254.169.254/records", "the cloud metadata address"},
		{"amqp://localhost/?routing_key=x", "a loopback address"},
		{"amqp://0x7f.1/?routing_key=x", "not a valid host name"},
		{"amqp://8.8.8.8/?exchange=records", "needs routing_key"},
	} {
		err := CheckURL(t.Context(), tc.url, nil)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tc.url, err)
		case tc.says != "" && (models.ErrorKind(err) != models.KindInvalidURL || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("%s: %v, want invalid_url saying %q", tc.url, err, tc.says)
		}
	}
}
