// Package inbound verifies the signatures of calls to recordhub's inbound
// webhooks. It is a leaf: it knows headers and bytes, not gin or the store.
package inbound

import (
	"slices"
	"time"
)

// Scheme names how a sender signs inbound calls.
type Scheme string

const (
	// SchemeSHA256: header X-Webhook-Signature: sha256=<hex HMAC-SHA256 of
	// the raw body>, what recordhub itself sends. The default. A call whose
	// X-Webhook-Signature-Previous (sent by recordhub during a rotation's
	// grace period, the previous secret's digest) matches is accepted too.
	SchemeSHA256 Scheme = "sha256"
	// SchemeGitHub: GitHub's X-Hub-Signature-256: sha256=<hex>, the same
	// digest under GitHub's header name.
	SchemeGitHub Scheme = "github"
	// SchemeStandard: Standard Webhooks (https://www.standardwebhooks.com):
	// headers webhook-id, webhook-timestamp (unix seconds) and
	// webhook-signature, a space-separated list of "v1,<base64 HMAC-SHA256
	// of "<id>.<timestamp>.<body>">"; any v1 entry matching accepts. The
	// timestamp must be within Tolerance of now, in both directions.
	SchemeStandard Scheme = "standard_webhooks"
)

// Schemes lists every scheme, the default first.
var Schemes = []Scheme{SchemeSHA256, SchemeGitHub, SchemeStandard}

// Tolerance is how far webhook-timestamp may be from now: it bounds how long
// a captured Standard Webhooks call can be replayed.
const Tolerance = 5 * time.Minute

// ParseScheme returns the scheme named s; the empty string names the
// default, SchemeSHA256.
func ParseScheme(s string) (Scheme, bool) {
	if s == "" {
		return SchemeSHA256, true
	}
	if slices.Contains(Schemes, Scheme(s)) {
		return Scheme(s), true
	}
	return "", false
}
