package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/mapping"
	"github.com/recordhub/recordhub/models/storetest"
)

// FuzzInboundPayload posts arbitrary bodies to an inbound webhook on each
// database: whatever arrives is accepted (202) or refused with a client
// error (400, 422), never answered 5xx, and SQLite and PostgreSQL agree.
//
//	go test ./api -run '^$' -fuzz FuzzInboundPayload -fuzztime 60s
func FuzzInboundPayload(f *testing.F) {
	for _, seed := range []string{
		`{"order":{"id":"A-1","total":40,"state":"paid","customer":{"email":"ann@example.com"}},"source system":"shop"}`,
		`{"order":{"id":"A-1","total":null}}`,
		`{"order":{"id":"a\u0000b"}}`,
		`{"order":{"id":"A-2"},"source system":{"k":[null,true,1e999999]}}`,
		`{"order":{"id":1e-20000}}`,
		`{"order":{"id":"A-3","total":1.0}}`,
		`[{"order":{"id":"A-4"}}]`,
		`{"order":[]}`,
		`"text"`,
		`{"order":`,
	} {
		f.Add([]byte(seed))
	}
	type target struct {
		d   models.Dialect
		url string
		srv *httptest.Server
	}
	fields := []models.Field{
		{Name: "order_id", Type: models.TypeString, Required: true}, {Name: "total", Type: models.TypeInteger},
		{Name: "email", Type: models.TypeEmail}, {Name: "state", Type: models.TypeStatus, States: []string{"new", "paid"}, Initial: "new"},
	}
	in := models.InboundInput{
		Mapping: []mapping.Rule{
			{Source: "$.payload.order.id", Field: "order_id"}, {Source: "$.payload.order.total", Field: "total"},
			{Source: "$.payload.order.customer.email", Field: "email"}, {Source: "$.payload.order.state", Field: "state"},
			{Source: "$.payload['source system']", Field: "custom_data.source"},
		},
		MatchFields: []string{"order_id"},
	}
	var targets []*target
	for _, d := range storetest.Dialects {
		s := newInboundServer(f, d)
		targets = append(targets, &target{d: d, url: s.hook("orders", fields, in), srv: s.srv})
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		statuses := map[models.Dialect]int{}
		for _, tg := range targets {
			res, err := tg.srv.Client().Post(tg.url, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(res.Body)
			res.Body.Close()
			statuses[tg.d] = res.StatusCode
			switch res.StatusCode {
			case 202:
				var a struct{ RecordID, Action string }
				if json.Unmarshal(answer, &a) != nil || !strings.HasPrefix(a.RecordID, "rec_") || (a.Action != "created" && a.Action != "updated") {
					t.Errorf("%s: 202 %s", tg.d, answer)
				}
			case 400, 422:
			default:
				t.Errorf("%s: body %q answered %d %s", tg.d, body, res.StatusCode, answer)
			}
		}
		if len(statuses) == 2 && statuses[models.SQLite] != statuses[models.Postgres] {
			t.Errorf("body %q: SQLite answered %d, PostgreSQL %d", body, statuses[models.SQLite], statuses[models.Postgres])
		}
	})
}
