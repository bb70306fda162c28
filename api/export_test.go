package api

import (
	"time"

	"github.com/recordhub/recordhub/models"
)

// DeliveriesCursor is the deliveries list's cursor of a position, for
// benchmarks that start deep in the list without walking to it.
func DeliveriesCursor(at time.Time, id string) string {
	return encodeCursor(listDeliveries, models.Position{At: at, ID: id})
}
