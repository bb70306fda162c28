package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// pathID is what the API knows of the ids a path segment holds: their
// prefix, what they name, and where a caller finds them.
type pathID struct {
	prefix, noun, hint string
}

// pathIDs are the typed ids of the routes, by the collection segment in
// front of them (/api/modules/:id, /api/admin/keys/:id, …).
var pathIDs = map[string]pathID{
	"modules":            {models.PrefixModule, "module", "module routes take the module's id (mod_…), not its slug — GET /api/modules lists them"},
	"records":            {models.PrefixRecord, "record", "record ids start with rec_ — GET /api/modules/{id}/records lists them"},
	"keys":               {models.PrefixKey, "key", "key routes take the key's id (key_…), not the key itself — GET /api/admin/keys lists them"},
	"webhook-endpoints":  {models.PrefixEndpoint, "webhook endpoint", "endpoint ids start with whe_ — GET /api/admin/webhook-endpoints lists them"},
	"webhook-deliveries": {models.PrefixDelivery, "webhook delivery", "delivery ids start with whd_ — GET /api/admin/webhook-deliveries lists them"},
	"inbound-events":     {models.PrefixInboundEvent, "inbound event", "inbound event ids start with ibe_ — GET /api/admin/modules/{id}/inbound-events lists them"},
	"recoveries":         {models.PrefixRecovery, "recovery", "recovery ids start with rcv_, as POST …/recover answered"},
	"resyncs":            {models.PrefixResync, "resync", "resync ids start with rsy_, as POST …/resync answered"},
}

// checkPathIDs answers 404, saying what the route takes, for a path id
// without its type's prefix: no such id exists, and the caller most likely
// sent something else (a module's slug, a key's secret) where the id
// belongs. It looks nothing up, so it tells a caller nothing of what
// exists; an id with its prefix goes on to the handler.
func (s *Server) checkPathIDs(c *gin.Context) {
	segs := strings.Split(strings.Trim(c.FullPath(), "/"), "/")
	for i := 1; i < len(segs); i++ {
		name, ok := strings.CutPrefix(segs[i], ":")
		if !ok {
			continue
		}
		kind, ok := pathIDs[segs[i-1]]
		if !ok {
			continue
		}
		v := c.Param(name)
		if strings.HasPrefix(v, kind.prefix) {
			continue
		}
		// Answered before the route's own handlers run, noStore among
		// them: such a refusal is not kept either.
		c.Header("Cache-Control", "no-store")
		failCode(c, http.StatusNotFound, codeNotFound, kind.refusal(v))
		return
	}
	c.Next()
}

// refusal is the message of the 404 that answers v, a path value without
// the prefix of k's ids.
func (k pathID) refusal(v string) string {
	shown := "that id"
	if echoable(v) {
		shown = "id " + strconv.Quote(v)
	}
	return fmt.Sprintf("no %s with %s; %s", k.noun, shown, k.hint)
}

// echoable reports whether a path value may be quoted back: a short,
// slug-shaped value (the slug sent for a module's id), never what could be
// a secret pasted in the wrong place (API keys have at least 32
// characters), as answers are logged and shown by clients.
func echoable(v string) bool {
	return len(v) < 32 && slugShaped(v) && !strings.HasPrefix(v, apiKeyPrefix) && !strings.HasPrefix(v, models.PrefixWebhookSecret)
}

// apiKeyPrefix starts every API key (models.NewAPIKeySecret).
const apiKeyPrefix = "rh_"
