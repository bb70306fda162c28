package models

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompareFieldsOrdersIndexesByNumber(t *testing.T) {
	var got []FieldError
	for _, f := range []string{"secret", "mapping[10].field", "mapping[2].source", "mapping", "match_fields[0]", "mapping[2].field", "mapping[02].field", "mapping[1].source"} {
		got = append(got, FieldError{Field: f})
	}
	slices.SortStableFunc(got, compareFields)
	var fields []string
	for _, e := range got {
		fields = append(fields, e.Field)
	}
	want := []string{"mapping", "mapping[1].source", "mapping[2].field", "mapping[02].field", "mapping[2].source", "mapping[10].field", "match_fields[0]", "secret"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
