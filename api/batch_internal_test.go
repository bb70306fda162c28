package api

import (
	"errors"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestQuickBatch: the one-pass read of a batch takes a well-formed body
// whole, as the read an operation at a time does, and leaves every body
// that read refuses to it, so that the refusal names its operation.
func TestQuickBatch(t *testing.T) {
	good := `{"requests": [
		{"method": "POST", "url": "/api/modules/mod_1/records", "body": {"fields": {"n": 1.50}, "custom_data": {"a": "b"}}},
		{"method": "PATCH", "url": "/api/modules/mod_1/records/rec_1", "body": {"fields": {"n": 2}}, "headers": {"If-Match": "\"3\""}},
		{"method": "DELETE", "url": "/api/modules/mod_1/records/rec_2", "body": null}]}`
	quick, ok := quickBatch([]byte(good))
	if !ok {
		t.Fatal("quickBatch declined a well-formed batch")
	}
	slow, at, err := readBatch([]byte(good))
	if err != nil || at != -1 {
		t.Fatalf("readBatch: %v at %d", err, at)
	}
	if len(quick) != 3 || quick[0].in.Fields["n"] != slow[0].in.Fields["n"] || quick[0].in.Fields["n"].(interface{ String() string }).String() != "1.50" ||
		quick[1].ifMatch == nil || *quick[1].ifMatch != 3 || quick[2].recordID != "rec_2" || quick[0].in.CustomData["a"] != "b" {
		t.Errorf("quickBatch read %+v, want what readBatch reads: %+v", quick, slow)
	}
	for _, tc := range []struct {
		name, body string
		at         int
	}{
		{"no operations", `{"requests": []}`, -1},
		{"unknown property", `{"requests": [{"method": "POST", "url": "/api/modules/mod_1/records", "body": {}, "x": 1}]}`, 0},
		{"unknown body property", `{"requests": [{"method": "POST", "url": "/api/modules/mod_1/records", "body": {}}, {"method": "POST", "url": "/api/modules/mod_1/records", "body": {"field": {}}}]}`, 1},
		{"body not an object", `{"requests": [{"method": "POST", "url": "/api/modules/mod_1/records", "body": []}]}`, 0},
		{"delete with a body", `{"requests": [{"method": "DELETE", "url": "/api/modules/mod_1/records/rec_1", "body": {}}]}`, 0},
		{"post without a body", `{"requests": [{"method": "POST", "url": "/api/modules/mod_1/records"}]}`, 0},
		{"bad method", `{"requests": [{"method": "GET", "url": "/api/modules/mod_1/records", "body": {}}]}`, 0},
		{"NUL", `{"requests": [{"method": "POST", "url": "/api/modules/mod_1/records", "body": {"fields": {"a": "\u0000"}}}]}`, -1},
		{"two values", `{"requests": [{"method": "POST", "url": "/api/modules/mod_1/records", "body": {}}]} {}`, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := quickBatch([]byte(tc.body)); ok {
				t.Error("quickBatch took it")
			}
			_, at, err := readBatch([]byte(tc.body))
			var me *models.Error
			if !errors.As(err, &me) || at != tc.at {
				t.Errorf("readBatch: %v at %d, want a refusal at %d", err, at, tc.at)
			}
		})
	}
}
