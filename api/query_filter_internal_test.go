package api

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// TestFilterParam: a filter parameter names a field and, in a second
// pair of brackets, an operator (eq when there is none); anything else in
// brackets is not a filter.
func TestFilterParam(t *testing.T) {
	type parsed struct {
		Field, Op string
		OK        bool
	}
	for _, c := range []struct {
		param string
		want  parsed
	}{
		{"filter[amount]", parsed{"amount", "eq", true}},
		{"filter[amount][gte]", parsed{"amount", "gte", true}},
		{"filter[amount][]", parsed{"amount", "", true}},
		{"filter[amount]]", parsed{}},
		{"filter[amount][gte", parsed{}},
		{"filter[amount][gte][x]", parsed{}},
		{"filter[amount]x", parsed{}},
		{"filter[amount", parsed{}},
		{"filters[amount]", parsed{}},
	} {
		f, op, ok := filterParam(c.param)
		if diff := cmp.Diff(c.want, parsed{f, op, ok}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.param, diff)
		}
	}
}

// TestRecordFiltersOneConditionEach: filter[f] and filter[f][eq] are the
// same condition, refused together; operators on one field gather under
// it, all to hold.
func TestRecordFiltersOneConditionEach(t *testing.T) {
	m := &models.Module{Fields: models.FieldList{{Name: "qty", Type: models.TypeInteger}}}
	var q models.RecordQuery
	if err := recordFilters(m, url.Values{"filter[qty]": {"1"}, "filter[qty][eq]": {"1"}}, &q); err == nil {
		t.Error("filter[qty] with filter[qty][eq]: no error")
	}
	q = models.RecordQuery{}
	if err := recordFilters(m, url.Values{"filter[qty][gte]": {"1"}, "filter[qty][lt]": {"9"}}, &q); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"qty": map[string]any{"gte": json.Number("1"), "lt": json.Number("9")}}
	if diff := cmp.Diff(want, q.Filters); diff != "" {
		t.Errorf("filters (-want +got):\n%s", diff)
	}
}
