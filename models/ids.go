package models

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Id prefixes tell a reader what an id names, as Stripe's do.
const (
	PrefixTenant    = "ten_"
	PrefixKey       = "key_"
	PrefixModule    = "mod_"
	PrefixRecord    = "rec_"
	PrefixAccessLog = "log_"
	PrefixRequest   = "req_"
	// PrefixDispatcher names a dispatcher, the owner of the events it
	// claims.
	PrefixDispatcher = "dsp_"
)

var (
	entropyMu sync.Mutex
	entropy   = ulid.Monotonic(rand.Reader, 0)
)

// NewID returns prefix followed by a lower-case ULID: unique, and ordered by
// creation time so that ids sort like created_at.
func NewID(prefix string) string {
	entropyMu.Lock()
	id := ulid.MustNew(ulid.Timestamp(time.Now()), entropy)
	entropyMu.Unlock()
	return prefix + strings.ToLower(id.String())
}
