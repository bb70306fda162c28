package api

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Records are read far more than anything else, and most of their bytes
// are the stored JSON of fields and custom_data. encoding/json would
// validate and compact those bytes again on every read; they were valid
// JSON when written, so the read path writes them out as they are.

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// writeRecordViews answers a record, or a page of records with its
// envelope when page is set.
func writeRecordViews(c *gin.Context, views []models.RecordView, page *list[recordJSON]) {
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	if page == nil {
		b = appendRecordView(b, &views[0])
	} else {
		b = append(b, `{"data":[`...)
		for i := range views {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendRecordView(b, &views[i])
		}
		b = append(b, `],"total":`...)
		b = strconv.AppendInt(b, page.Total, 10)
		b = append(b, `,"page":`...)
		b = strconv.AppendInt(b, int64(page.Page), 10)
		b = append(b, `,"limit":`...)
		b = strconv.AppendInt(b, int64(page.Limit), 10)
		b = append(b, '}')
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", b)
	*bp = b
	bufPool.Put(bp)
}

func appendRecordView(b []byte, v *models.RecordView) []byte {
	b = append(b, `{"id":`...)
	b = models.AppendJSONString(b, v.ID)
	b = append(b, `,"module_id":`...)
	b = models.AppendJSONString(b, v.ModuleID)
	b = append(b, `,"fields":`...)
	b = append(b, rawObject(v.Fields)...)
	b = append(b, `,"custom_data":`...)
	b = append(b, rawObject(v.CustomData)...)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, v.Version, 10)
	b = append(b, `,"created_at":"`...)
	b = v.CreatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","updated_at":"`...)
	b = v.UpdatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}
