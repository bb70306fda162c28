package models

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Destinations beyond HTTP: an endpoint's url may name a message broker
// instead of an HTTP receiver. Its scheme says which:
//
//	amqp://user:password@host:5672/vhost?exchange=records&routing_key={module}.{event_type}
//	amqps://… (the same over TLS, port 5671 by default)
//	nats://user:password@host:4222/records.{module}.{event_type}
//
// For AMQP 0-9-1 (RabbitMQ) the path is the virtual host (one segment,
// "%2F" for "/"; none: the default "/"), exchange the exchange published
// to (absent: the default exchange, where the routing key names a queue),
// and routing_key the routing key, required. For NATS the path is the
// JetStream subject published to, required. The routing key and the
// subject may hold the placeholders {event_type} and {module} (the
// module's slug; "_" for an event of no module, endpoint_disabled), written
// as they are or percent-encoded; anything else in braces is refused.
// Credentials in the URL are the broker's login (a NATS token is written
// as the user alone); they are sealed and shown masked, see
// Store.EndpointURL.

// Kinds of destination, by the URL's scheme.
const (
	DestinationHTTP = "http"
	DestinationAMQP = "amqp"
	DestinationNATS = "nats"
)

// Placeholders of a routing key or a subject.
const (
	PlaceholderEventType = "{event_type}"
	PlaceholderModule    = "{module}"
	// NoModule is what {module} becomes for an event of no module.
	NoModule = "_"
)

// DestinationKind returns the kind of destination a URL names by its
// scheme: DestinationAMQP for amqp and amqps, DestinationNATS for nats,
// else DestinationHTTP (whose own rules refuse any other scheme).
func DestinationKind(rawURL string) string {
	scheme, _, ok := strings.Cut(strings.TrimSpace(rawURL), "://")
	if !ok {
		return DestinationHTTP
	}
	switch strings.ToLower(scheme) {
	case "amqp", "amqps":
		return DestinationAMQP
	case "nats":
		return DestinationNATS
	}
	return DestinationHTTP
}

// IsBrokerURL reports whether a URL names a message broker.
func IsBrokerURL(rawURL string) bool { return DestinationKind(rawURL) != DestinationHTTP }

// BrokerURL is a broker destination read from an endpoint's url.
type BrokerURL struct {
	// Kind is DestinationAMQP or DestinationNATS; TLS is set for amqps.
	Kind string
	TLS  bool
	// Host is the host name or address, without brackets; Port is always
	// set (the scheme's default when the URL has none).
	Host string
	Port int
	// User and Password are the login, decoded; a URL with a user and no
	// password (a NATS token) has HasPassword false.
	User, Password string
	HasPassword    bool
	// VHost, Exchange and RoutingKey are AMQP's; RoutingKey may hold
	// placeholders.
	VHost, Exchange, RoutingKey string
	// Subject is NATS's; it may hold placeholders.
	Subject string
}

// Address is host:port, what is dialled.
func (b *BrokerURL) Address() string {
	return netJoin(b.Host, b.Port)
}

func netJoin(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// Target is the routing key (AMQP) or subject (NATS) of an event of type
// eventType on the module whose slug is module ("" for none).
func (b *BrokerURL) Target(eventType, module string) string {
	if module == "" {
		module = NoModule
	}
	t := b.RoutingKey
	if b.Kind == DestinationNATS {
		t = b.Subject
	}
	return strings.NewReplacer(PlaceholderEventType, eventType, PlaceholderModule, module).Replace(t)
}

// Bounds of a broker destination.
const (
	// MaxRoutingKeyBytes is AMQP's bound of a routing key and of an
	// exchange name (a short string).
	MaxRoutingKeyBytes = 255
	// maxTargetModule and maxTargetEventType are the longest values the
	// placeholders take, to bound what a template renders to.
	maxTargetModule    = 63
	maxTargetEventType = len(EventCustomDataUpdated)
)

var exchangePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]*$`)

// ParseBrokerURL reads an amqp, amqps or nats URL, refusing (with a plain
// error whose text says what to change) one that does not follow the
// forms above. Its host is not judged here: the egress guard does that.
func ParseBrokerURL(rawURL string) (*BrokerURL, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, errors.New("the URL cannot be parsed")
	}
	b := &BrokerURL{}
	switch strings.ToLower(u.Scheme) {
	case "amqp":
		b.Kind, b.Port = DestinationAMQP, 5672
	case "amqps":
		b.Kind, b.Port, b.TLS = DestinationAMQP, 5671, true
	case "nats":
		b.Kind, b.Port = DestinationNATS, 4222
	default:
		return nil, errors.New("a broker URL's scheme is amqp, amqps or nats")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, errors.New("the URL must be absolute, with a host")
	}
	if u.Fragment != "" || strings.Contains(rawURL, "#") {
		return nil, errors.New("a broker URL has no fragment (#…)")
	}
	b.Host = strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %s is out of range", p)
		}
		b.Port = n
	}
	if u.User != nil {
		b.User = u.User.Username()
		b.Password, b.HasPassword = u.User.Password()
		if b.User == "" && !b.HasPassword {
			return nil, errors.New("the URL's user information is empty: leave out the \"@\"")
		}
	}
	if b.Kind == DestinationNATS {
		return b, b.parseNATS(u)
	}
	return b, b.parseAMQP(u)
}

func (b *BrokerURL) parseAMQP(u *url.URL) error {
	path := u.EscapedPath()
	if path != "" {
		vhost, err := url.PathUnescape(strings.TrimPrefix(path, "/"))
		if err != nil || strings.Contains(strings.TrimPrefix(path, "/"), "/") {
			return errors.New(`an amqp URL's path is its virtual host, one segment: write the vhost "/" as %2F`)
		}
		b.VHost = vhost
	}
	if b.VHost == "" {
		b.VHost = "/"
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return errors.New("the URL's query cannot be read")
	}
	for k, v := range q {
		if k != "exchange" && k != "routing_key" {
			return fmt.Errorf("unknown parameter %q: an amqp URL takes exchange and routing_key", k)
		}
		if len(v) > 1 {
			return fmt.Errorf("parameter %q is given %d times", k, len(v))
		}
	}
	b.Exchange = q.Get("exchange")
	if len(b.Exchange) > MaxRoutingKeyBytes || !exchangePattern.MatchString(b.Exchange) {
		return fmt.Errorf("exchange %q is not an exchange name: at most %d letters, digits, '-', '_', '.' or ':'", b.Exchange, MaxRoutingKeyBytes)
	}
	if !q.Has("routing_key") {
		return errors.New("an amqp URL needs routing_key, e.g. ?exchange=records&routing_key={module}.{event_type} (any value for a fanout exchange)")
	}
	b.RoutingKey = q.Get("routing_key")
	if err := checkTemplate("routing_key", b.RoutingKey); err != nil {
		return err
	}
	for i := 0; i < len(b.RoutingKey); i++ {
		if c := b.RoutingKey[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("routing_key holds the byte 0x%02X: use printable ASCII", c)
		}
	}
	if n := renderedLen(b.RoutingKey); n > MaxRoutingKeyBytes {
		return fmt.Errorf("routing_key can be %d bytes long once its placeholders are filled in, more than AMQP's %d", n, MaxRoutingKeyBytes)
	}
	return nil
}

func (b *BrokerURL) parseNATS(u *url.URL) error {
	if u.RawQuery != "" || u.ForceQuery {
		return errors.New("a nats URL takes no query: its path is the subject, e.g. nats://host:4222/records.{module}.{event_type}")
	}
	b.Subject = strings.TrimPrefix(u.Path, "/")
	if b.Subject == "" {
		return errors.New("a nats URL's path is the JetStream subject published to, e.g. nats://host:4222/records.{module}.{event_type}")
	}
	if err := checkTemplate("the subject", b.Subject); err != nil {
		return err
	}
	for tok := range strings.SplitSeq(b.Subject, ".") {
		if tok == "" {
			return fmt.Errorf("subject %q has an empty token: tokens are separated by single dots", b.Subject)
		}
		if tok == "*" || tok == ">" {
			return fmt.Errorf("subject %q holds the wildcard %q: a subject published to names one subject", b.Subject, tok)
		}
		for i := 0; i < len(tok); i++ {
			if c := tok[i]; c <= 0x20 || c > 0x7e || c == '/' {
				return fmt.Errorf("subject %q holds %q: a subject's tokens are printable ASCII without spaces or '/'", b.Subject, string(c))
			}
		}
	}
	return nil
}

// checkTemplate refuses braces other than the two placeholders.
func checkTemplate(what, t string) error {
	rest := t
	for {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			return nil
		}
		if rest[i] == '}' {
			return fmt.Errorf("%s has a '}' that closes no placeholder; placeholders are %s and %s", what, PlaceholderEventType, PlaceholderModule)
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("%s has a '{' that is never closed; placeholders are %s and %s", what, PlaceholderEventType, PlaceholderModule)
		}
		if p := rest[i : i+j+1]; p != PlaceholderEventType && p != PlaceholderModule {
			return fmt.Errorf("%s has the unknown placeholder %q; placeholders are %s and %s", what, p, PlaceholderEventType, PlaceholderModule)
		}
		rest = rest[i+j+1:]
	}
}

// renderedLen is the longest a template can be once filled in.
func renderedLen(t string) int {
	return len(t) + strings.Count(t, PlaceholderEventType)*(maxTargetEventType-len(PlaceholderEventType)) +
		strings.Count(t, PlaceholderModule)*(maxTargetModule-len(PlaceholderModule))
}
