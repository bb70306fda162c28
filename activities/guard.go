package activities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"code.dny.dev/ssrf"

	"github.com/recordhub/recordhub/models"
)

// Guard decides which destinations outbound webhooks may reach (against
// SSRF). Its method CheckURL has the shape of models.URLChecker, for the
// subscription-time check; the delivery attempt applies the same rules again
// to every address it dials.
//
// What is blocked is decided by code.dny.dev/ssrf, whose lists are built from
// the IANA special-purpose registries: for IPv4 every special-purpose prefix
// (this network, private, CGNAT, loopback, link-local with the metadata
// address, documentation, benchmarking, reserved, multicast, broadcast); for
// IPv6 everything outside global unicast 2000::/3 (loopback, unspecified,
// link-local, ULA, multicast, IPv4-mapped, NAT64) and the special-purpose
// prefixes inside it (documentation, 6to4, Teredo, ...). Allow is the only
// exemption.
type Guard struct {
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Allow lists networks exempted from the block list
	// (RECORDHUB_WEBHOOK_ALLOW_CIDRS): on-premise receivers, and tests.
	Allow []netip.Prefix
}

// CheckURL refuses, with a *models.Error of kind models.KindInvalidURL whose
// message names the reason, a webhook URL that is not an absolute http or
// https URL with a host and without user information (nor a broker URL of
// the form models.ParseBrokerURL reads, whose login is allowed), whose
// host is an IPv4 address in a non-standard spelling, or whose host literal
// or any of the addresses its name resolves to is blocked. It resolves names with the
// default resolver; allow lists the exempted networks.
func CheckURL(ctx context.Context, rawURL string, allow []netip.Prefix) error {
	g := Guard{Allow: allow}
	return g.CheckURL(ctx, rawURL)
}

// CheckURL is the package-level CheckURL with g's resolver and allow list.
// A name that does not resolve is refused too: nothing says where it would
// lead, and it is most often a typing mistake.
func (g *Guard) CheckURL(ctx context.Context, rawURL string) error {
	eg := newEgress(g.Allow)
	dest, err := eg.checkStatic(rawURL)
	if err != nil {
		return invalidURL(err)
	}
	if dest.literal {
		return nil
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", dest.host)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("resolve %s: %w", dest.host, ctx.Err())
		}
		return models.Errorf(models.KindInvalidURL, "host %q does not resolve", dest.host)
	}
	if len(addrs) == 0 {
		return models.Errorf(models.KindInvalidURL, "host %q does not resolve", dest.host)
	}
	for _, a := range addrs {
		// The resolver returns A records as IPv4-mapped IPv6 addresses; the
		// dialer connects to them as IPv4, so they are judged as IPv4 here.
		if err := eg.checkAddr(a.Unmap()); err != nil {
			b := err.(*blockedError)
			return models.Errorf(models.KindInvalidURL, "host %q resolves to %s%s", dest.host, b.describe(), allowHint(b.addr))
		}
	}
	return nil
}

func invalidURL(err error) error {
	var b *blockedError
	if errors.As(err, &b) {
		return models.Errorf(models.KindInvalidURL, "the URL's host is %s%s", b.describe(), allowHint(b.addr))
	}
	return models.Errorf(models.KindInvalidURL, "%s", err.Error())
}

// allowHint names the setting that exempts a refused address, for the kinds
// a genuine receiver lives on: loopback (a developer's own machine), private
// and CGNAT networks (on premise). Nothing is suggested for the metadata
// address, multicast and the like, nor for an IPv4-mapped form, which the
// allow list does not exempt.
func allowHint(a netip.Addr) string {
	if !a.IsValid() || a.Is4In6() || !(a.IsLoopback() || a.IsPrivate() || cgnat.Contains(a)) {
		return ""
	}
	return fmt.Sprintf("; receivers on private or loopback networks must be allowed by the server's operator with RECORDHUB_WEBHOOK_ALLOW_CIDRS (e.g. %s)", netip.PrefixFrom(a, a.BitLen()))
}

// egress applies the block list; built once per Deliverer, and per CheckURL.
type egress struct {
	guardian *ssrf.Guardian
}

func newEgress(allow []netip.Prefix) *egress {
	var v4, v6 []netip.Prefix
	for _, p := range allow {
		if p.Addr().Is4() {
			v4 = append(v4, p.Masked())
		} else {
			v6 = append(v6, p.Masked())
		}
	}
	return &egress{guardian: ssrf.New(
		// Receivers listen on any port (8080, 8443, ...); the address is what
		// matters. Networks stay at the library's default, tcp4 and tcp6.
		ssrf.WithAnyPort(),
		ssrf.WithAllowedV4Prefixes(v4...),
		ssrf.WithAllowedV6Prefixes(v6...),
	)}
}

// destination is a webhook URL that passed the checks that need no DNS.
type destination struct {
	url *url.URL
	// host is lower case, without brackets, port or trailing dot.
	host string
	// literal is set when host is an IP address, already checked.
	literal bool
}

// checkStatic applies every rule that needs no DNS: the shape of the URL,
// IP literals, odd IPv4 spellings and localhost names. The delivery attempt
// runs it before dialling, so a URL stored before a rule existed is refused
// too; names are then checked address by address by the dialer.
//
// A broker URL (amqp, amqps, nats) follows models.ParseBrokerURL's rules
// instead of HTTP's, user information included; its host is judged alike.
func (e *egress) checkStatic(rawURL string) (destination, error) {
	if models.IsBrokerURL(rawURL) {
		b, err := models.ParseBrokerURL(rawURL)
		if err != nil {
			return destination{}, err
		}
		return e.checkHost(nil, b.Host)
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return destination{}, errors.New("the URL cannot be parsed")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return destination{}, errors.New("only http and https URLs are accepted")
	}
	if u.Opaque != "" || u.Host == "" {
		return destination{}, errors.New("the URL must be absolute, with a host")
	}
	if u.User != nil {
		return destination{}, errors.New("the URL must not contain user information (user@ or user:password@)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return destination{}, fmt.Errorf("port %s is out of range", p)
		}
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return destination{}, errors.New("the URL must be absolute, with a host")
	}
	return e.checkHost(u, host)
}

// checkHost applies checkStatic's rules of the host, lower case and
// without brackets or port.
func (e *egress) checkHost(u *url.URL, host string) (destination, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return destination{}, errors.New("IPv6 zone identifiers are not accepted")
		}
		if err := e.checkAddr(a); err != nil {
			return destination{}, err
		}
		return destination{url: u, host: host, literal: true}, nil
	}
	name := strings.TrimSuffix(host, ".")
	if endsInNumber(name) {
		// Go hands "2130706433", "0177.0.0.1", "0x7f.1", "127.1" to the
		// resolver as names, and C resolvers read them as IPv4 addresses.
		// Either way they are only ever a disguise: refuse them.
		return destination{}, fmt.Errorf("host %q is not a valid host name or IPv4 address; write IPv4 addresses as four decimal numbers", host)
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761: these names always mean this machine.
		for _, a := range loopbacks {
			if err := e.checkAddr(a); err != nil {
				return destination{}, err
			}
		}
	}
	return destination{url: u, host: name, literal: false}, nil
}

var loopbacks = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}

// endsInNumber reports whether the last label of a host name is a number,
// decimal or hex, as the WHATWG URL standard's "ends in a number" checker:
// such a host is an IPv4 address or invalid, never a DNS name.
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.Trim(last, "0123456789") == "" {
		return true
	}
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return false
}

// checkAddr returns a *blockedError when a may not be reached.
func (e *egress) checkAddr(a netip.Addr) error {
	if err := e.guardian.SafeAddr(a); err != nil {
		return &blockedError{addr: a, err: err}
	}
	return nil
}

// control is the net.Dialer Control hook: it runs after the socket is made
// and before it connects, for every address the dialer tries, so what the
// name resolved to at dial time is what is checked (DNS rebinding closed).
func (e *egress) control(network, address string, c syscall.RawConn) error {
	if err := e.guardian.Safe(network, address, c); err != nil {
		b := &blockedError{err: err}
		if ap, perr := netip.ParseAddrPort(address); perr == nil {
			b.addr = ap.Addr()
		}
		return b
	}
	return nil
}

// blockedError is a destination that may not be reached: an address the
// block list refuses (wrapping the ssrf library's error), or, at attempt
// time, a URL that the subscription-time rules refuse (reason).
type blockedError struct {
	addr   netip.Addr
	reason string
	err    error
}

func (b *blockedError) Error() string { return "blocked destination: " + b.describe() }
func (b *blockedError) Unwrap() error { return b.err }

// describe names the address and why it is blocked, for people; the
// decision itself is the ssrf library's.
func (b *blockedError) describe() string {
	switch {
	case b.addr.IsValid():
		return b.addr.String() + ", " + addrKind(b.addr)
	case b.reason != "":
		return b.reason
	default:
		return b.err.Error()
	}
}

var (
	metadataV4 = netip.MustParseAddr("169.254.169.254")
	metadataV6 = netip.MustParseAddr("fd00:ec2::254")
	cgnat      = netip.MustParsePrefix("100.64.0.0/10")
	thisNet    = netip.MustParsePrefix("0.0.0.0/8")
	docs       = []netip.Prefix{
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("3fff::/20"),
	}
)

func addrKind(a netip.Addr) string {
	switch {
	case a.Is4In6():
		return "an IPv4-mapped IPv6 address"
	case ssrf.IPv6NAT64Prefix.Contains(a):
		return "a NAT64 address"
	case a == metadataV4 || a == metadataV6:
		return "the cloud metadata address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified() || thisNet.Contains(a):
		return "an unspecified address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case cgnat.Contains(a):
		return "a shared (CGNAT) address"
	}
	for _, p := range docs {
		if p.Contains(a) {
			return "a documentation address"
		}
	}
	return "a reserved or special-purpose address"
}

// ParseAllowCIDRs reads RECORDHUB_WEBHOOK_ALLOW_CIDRS: comma-separated
// networks ("10.0.0.0/8") or single addresses ("192.168.1.20").
func ParseAllowCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("allowed network %q is neither a CIDR prefix nor an IP address", part)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
