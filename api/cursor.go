package api

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Lists that grow without bound (deliveries, access logs, inbound events)
// page by cursor: a page starts after the last row of the previous one,
// which the database finds through an index whatever the depth. page
// still reads the first maxPagedRows rows; deeper offsets would make the
// database read and drop every row before the page, and are refused.
const maxPagedRows = 10_000

// maxCounted bounds the count behind these lists' total, which would
// otherwise read every matching row on every page: past it, total is
// maxCounted and total_capped true.
const maxCounted = maxPagedRows

// cursorList names the list a cursor belongs to, so that a cursor of one
// list is refused by another rather than read as a position in it.
type cursorList byte

const (
	listDeliveries     cursorList = 'd'
	listAccessLogs     cursorList = 'a'
	listInboundEvents  cursorList = 'i'
	cursorVersion      byte       = 1
	maxCursorIDLen                = 128
	maxCursorLen                  = 256
	cursorFixedLen                = 1 + 1 + 8 + 4 // version, list, seconds, nanoseconds
	cursorChecksumSize            = 4
)

// encodeCursor writes p as an opaque cursor of list l: base64url (no
// padding) of a version byte, the list, the time as Unix seconds and
// nanoseconds, the id, and a CRC-32 of all of it. The checksum catches a
// cursor that was cut or edited, which would otherwise page from
// somewhere else without a word; it is not a secret: a cursor only says
// where a page the caller has read ended.
func encodeCursor(l cursorList, p models.Position) string {
	at := p.At.UTC()
	b := make([]byte, 0, cursorFixedLen+len(p.ID)+cursorChecksumSize)
	b = append(b, cursorVersion, byte(l))
	b = binary.BigEndian.AppendUint64(b, uint64(at.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(at.Nanosecond()))
	b = append(b, p.ID...)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return base64.RawURLEncoding.EncodeToString(b)
}

// errBadCursor answers every cursor that cannot be read, whatever is wrong
// with it: the caller can only have edited it, or taken it from another
// list.
func errBadCursor() error {
	return invalid("cursor is not a next_cursor this list answered; pass next_cursor exactly as it was given, or start again without cursor")
}

// decodeCursor reads a cursor of list l.
func decodeCursor(l cursorList, s string) (models.Position, error) {
	if len(s) > maxCursorLen {
		return models.Position{}, errBadCursor()
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < cursorFixedLen+1+cursorChecksumSize || len(b) > cursorFixedLen+maxCursorIDLen+cursorChecksumSize {
		return models.Position{}, errBadCursor()
	}
	body, sum := b[:len(b)-cursorChecksumSize], b[len(b)-cursorChecksumSize:]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(sum) || body[0] != cursorVersion || cursorList(body[1]) != l {
		return models.Position{}, errBadCursor()
	}
	secs, nanos := int64(binary.BigEndian.Uint64(body[2:10])), binary.BigEndian.Uint32(body[10:14])
	id := string(body[cursorFixedLen:])
	if nanos >= uint32(time.Second) || !utf8.ValidString(id) {
		return models.Position{}, errBadCursor()
	}
	at := time.Unix(secs, int64(nanos)).UTC()
	// Rows are written with times of years 1 to 9999 only; a time outside
	// them could only be forged, and SQLite would compare it as text.
	if y := at.Year(); y < 1 || y > 9999 {
		return models.Position{}, errBadCursor()
	}
	return models.Position{At: at, ID: id}, nil
}

// cursorPage is the page a list that pages by cursor is asked for: after
// a position (After set, Page.Page 1) or at an offset of at most
// maxPagedRows rows.
type cursorPage struct {
	models.Page
	After *models.Position
}

// query is the page to ask the store for: with a cursor, one row more
// than the page holds, which says whether a next page exists.
func (p cursorPage) query() models.Page {
	if p.After != nil {
		return models.Page{Page: 1, Limit: p.Limit + 1}
	}
	return p.Page
}

// cursorPageOf reads limit and either cursor or page of list l.
func cursorPageOf(c *gin.Context, l cursorList) (cursorPage, error) {
	cur, byCursor := c.GetQuery("cursor")
	_, byPage := c.GetQuery("page")
	if byCursor && byPage {
		return cursorPage{}, invalid("give cursor or page, not both: cursor continues from where the page that answered it ended")
	}
	p, err := pageAndLimit(c)
	if err != nil {
		return cursorPage{}, err
	}
	if byCursor {
		pos, err := decodeCursor(l, cur)
		if err != nil {
			return cursorPage{}, err
		}
		return cursorPage{Page: p, After: &pos}, nil
	}
	if p.Page > maxPagedRows/p.Limit {
		return cursorPage{}, invalid("page reaches only the first %d rows (page × limit ≤ %d); to read further, pass the next_cursor of a page as cursor, instead of page", maxPagedRows, maxPagedRows)
	}
	return cursorPage{Page: p}, nil
}

// pageOut builds the envelope of rows, as the store answered them for p's
// query, and counted, the store's count bounded by maxCounted. By cursor
// the store returned one row beyond the page if there are more; by page
// there are more when the rows before and on the page are fewer than
// counted (page reaches no further than maxCounted rows).
func pageOut[R, T any](l cursorList, p cursorPage, rows []R, counted int64, key func(*R) models.Position, out func(*R) T) cursorListOf[T] {
	more := false
	if p.After != nil {
		more = len(rows) > p.Limit
		rows = rows[:min(len(rows), p.Limit)]
	} else {
		more = int64(p.Offset()+len(rows)) < counted && len(rows) > 0
	}
	res := cursorListOf[T]{Data: make([]T, len(rows)), Total: min(counted, maxCounted), TotalCapped: counted > maxCounted, Limit: p.Limit}
	if p.After == nil {
		res.Page = p.Page.Page
	}
	for i := range rows {
		res.Data[i] = out(&rows[i])
	}
	if more {
		next := encodeCursor(l, key(&rows[len(rows)-1]))
		res.NextCursor = &next
	}
	return res
}
