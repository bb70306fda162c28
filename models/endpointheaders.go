package models

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Custom headers: an endpoint may give its requests headers of its own (an
// Authorization or X-Api-Key for the receiver's gateway, say). They are
// credentials, so they are kept like the signing secret: sealed at rest,
// never answered in clear but by the reveal route, never logged, and masked
// in the request headers of the attempts' rows.
// Their bounds are in bounds.go.
//
// HeaderMask stands for a custom header's value wherever it is shown:
// endpoint answers, the console, and the attempts' stored request headers.
const HeaderMask = "<redacted>"

// Why a header name cannot be a custom header, by its lower-case name.
const (
	reasonHopByHop  = "is a hop-by-hop header, about the connection rather than the request"
	reasonTransport = "is set by the HTTP client from the URL and the body"
	reasonBody      = "describes the body, which recordhub writes"
	reasonOwn       = "is set by recordhub on every request"
	reasonSignature = "is one of recordhub's identity and signature headers"
	reasonTrace     = "carries the trace context recordhub sends"
	reasonExchange  = "changes how the request and its answer are transferred, which recordhub decides"
)

var reservedHeaders = map[string]string{
	"connection": reasonHopByHop, "keep-alive": reasonHopByHop, "te": reasonHopByHop, "trailer": reasonHopByHop,
	"trailers": reasonHopByHop, "transfer-encoding": reasonHopByHop, "upgrade": reasonHopByHop, "http2-settings": reasonHopByHop,
	"host": reasonTransport, "content-length": reasonTransport,
	"user-agent":  reasonOwn,
	"traceparent": reasonTrace, "tracestate": reasonTrace, "baggage": reasonTrace,
	"expect": reasonExchange, "accept-encoding": reasonExchange,
}

var reservedHeaderPrefixes = []struct{ prefix, reason string }{
	{"proxy-", reasonHopByHop},
	{"content-", reasonBody},
	{"x-webhook-", reasonSignature},
	{"webhook-", reasonSignature},
}

// ReservedHeader reports whether name (in any case, with "_" for "-") is a
// header an endpoint may not set, and why: hop-by-hop and transport
// headers, those describing the body, and every header recordhub sets
// itself (User-Agent, X-Webhook-*, the Standard Webhooks webhook-*, the
// trace context). So a custom header can never override a header recordhub
// sends, and every header of a request that is not reserved is a custom
// one. CGI and WSGI receivers (and the proxies in front of many others)
// read "_" as "-": X_Webhook_Signature would reach them as a second value
// of X-Webhook-Signature.
func ReservedHeader(name string) (reason string, reserved bool) {
	l := headerKey(name)
	if r, ok := reservedHeaders[l]; ok {
		return r, true
	}
	for _, p := range reservedHeaderPrefixes {
		if strings.HasPrefix(l, p.prefix) {
			return p.reason, true
		}
	}
	return "", false
}

// headerKey is the name a receiver may read name as: lower case, "_" as "-".
func headerKey(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// CustomHeaderRule says what custom headers must be, for error messages.
var CustomHeaderRule = fmt.Sprintf("at most %d headers, names of letters, digits and !#$%%&'*+-.^_`|~ (at most %d bytes, unique ignoring case and reading _ as -), "+
	"values of at most %d bytes without control characters, %d bytes in all", MaxEndpointHeaders, MaxHeaderNameBytes, MaxHeaderValueBytes, MaxHeadersBytes)

// checkHeaders validates custom headers and returns them under their
// canonical names (X-Api-Key for x-api-key), or what is wrong with them.
func checkHeaders(in map[string]string) (map[string]string, []FieldError) {
	var errs []FieldError
	if len(in) > MaxEndpointHeaders {
		return nil, []FieldError{{Field: "headers", Message: fmt.Sprintf("at most %d headers, got %d", MaxEndpointHeaders, len(in))}}
	}
	out := make(map[string]string, len(in))
	given := make(map[string]string, len(in))
	total := 0
	for _, name := range slices.Sorted(maps.Keys(in)) {
		value := in[name]
		field := "headers." + name
		total += len(name) + len(value)
		if name == "" || len(name) > MaxHeaderNameBytes || !httpguts.ValidHeaderFieldName(name) {
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("is not a valid header name: 1 to %d of letters, digits and !#$%%&'*+-.^_`|~", MaxHeaderNameBytes)})
			continue
		}
		if reason, ok := ReservedHeader(name); ok {
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("%s cannot be a custom header: it %s", name, reason)})
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if first, dup := given[headerKey(name)]; dup {
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("names the same header as %q: header names are case-insensitive, and receivers may read \"_\" as \"-\"", first)})
			continue
		}
		given[headerKey(name)] = name
		switch {
		case value == "":
			errs = append(errs, FieldError{Field: field, Message: "must not be empty; leave the header out instead"})
		case len(value) > MaxHeaderValueBytes:
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("must be at most %d bytes, got %d", MaxHeaderValueBytes, len(value))})
		case !httpguts.ValidHeaderFieldValue(value):
			errs = append(errs, FieldError{Field: field, Message: "must not contain CR, LF, NUL or other control characters (a tab is allowed)"})
		case value == HeaderMask:
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("is %q, the mask that answers show instead of a value: send the real value, or leave headers out to keep the stored ones", HeaderMask)})
		}
		out[canon] = value
	}
	if total > MaxHeadersBytes && len(errs) == 0 {
		errs = append(errs, FieldError{Field: "headers", Message: fmt.Sprintf("names and values must be at most %d bytes in all, got %d", MaxHeadersBytes, total)})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// headersAD binds an endpoint's sealed headers to the endpoint.
func headersAD(endpointID string) string { return "webhook-headers:" + endpointID }

// setEndpointHeaders validates in, the whole new set of e's custom headers
// (empty: none), and writes it into e sealed, with its names in clear.
func (s *Store) setEndpointHeaders(e *WebhookEndpoint, in map[string]string) []FieldError {
	h, errs := checkHeaders(in)
	if len(errs) > 0 {
		return errs
	}
	e.Headers, e.HeaderNames = "", StringList{}
	if len(h) == 0 {
		return nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		panic(fmt.Sprintf("encode headers: %v", err)) // a map of strings always encodes
	}
	e.Headers = s.box.SealBytes(b, headersAD(e.ID))
	e.HeaderNames = slices.Sorted(maps.Keys(h))
	return nil
}

// EndpointHeaders returns the endpoint's custom headers in clear, under
// their canonical names; nil when it has none.
func (s *Store) EndpointHeaders(e *WebhookEndpoint) (map[string]string, error) {
	if e.Headers == "" {
		return nil, nil
	}
	plain, err := s.box.Open(e.Headers, headersAD(e.ID))
	if err != nil {
		return nil, fmt.Errorf("endpoint headers: %w", err)
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(plain), &h); err != nil {
		return nil, fmt.Errorf("endpoint headers: %w", err)
	}
	return h, nil
}
