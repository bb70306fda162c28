package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// filterOutcome is what a filtered list answers: the status, the error
// code of an error, and the total of a 200.
type filterOutcome struct {
	Status int
	Code   string
	Total  float64
}

// TestNumberFiltersAreStrictAlike: integer and number filters take a JSON
// number literal (an integer within int64 for integer fields); any other
// string answers 400 invalid_request on both databases, never a 5xx.
// Equality is the only filter operator there is.
func TestNumberFiltersAreStrictAlike(t *testing.T) {
	type filterCase struct {
		field, value string
		want         filterOutcome
	}
	refused := filterOutcome{Status: 400, Code: "invalid_request"}
	notNumbers := []string{
		"NaN", "nan", "Infinity", "-Infinity", "inf", "+Inf", ".5", "5.", "-.5", "05", "-05", "00",
		"+1", "0x1p-2", "0x10", "0X10", "0b1", "0o7", "1_000", "1e400", "-1e400", "1e-400", "1e", "1e+",
		"--1", "-", "", " 1", "1 ", "1,5", "١", "1.5.5", "true", "null", "abc", "1\n",
	}
	notIntegers := append([]string{"9999999999999999999999", "9223372036854775808", "-9223372036854775809",
		"1.5", "1.0", "1e2", "-0.0"}, notNumbers...)
	var cases []filterCase
	for _, v := range notNumbers {
		cases = append(cases, filterCase{"price", v, refused})
	}
	for _, v := range notIntegers {
		cases = append(cases, filterCase{"qty", v, refused})
	}
	matches := func(field, v string, total float64) filterCase {
		return filterCase{field, v, filterOutcome{Status: 200, Total: total}}
	}
	cases = append(cases,
		matches("qty", "7", 1), matches("qty", "-7", 1), matches("qty", "0", 1), matches("qty", "-0", 1),
		matches("qty", "9223372036854775807", 1), matches("qty", "-9223372036854775808", 0), matches("qty", "8", 0),
		matches("price", "1.5", 1), matches("price", "15e-1", 1), matches("price", "0.15E1", 1),
		matches("price", "2", 1), matches("price", "2.0", 1), matches("price", "-0", 1), matches("price", "0.1", 1),
		matches("price", "1e300", 0), matches("price", "9999999999999999999999", 0), matches("price", "1E-300", 0),
	)

	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		for _, f := range []map[string]any{
			{"title": "a", "qty": 7, "price": 1.5},
			{"title": "b", "qty": -7, "price": 2},
			{"title": "c", "qty": 0, "price": 0},
			{"title": "d", "qty": int64(9223372036854775807), "price": 0.1},
		} {
			e.createRecord(mod, f)
		}
		for _, c := range cases {
			q := "filter[" + c.field + "]=" + url.QueryEscape(c.value)
			r := e.call("GET", "/api/modules/"+mod+"/records?"+q, e.admin, nil)
			got := filterOutcome{Status: r.status}
			if r.status >= 400 {
				got.Code = r.errorCode()
			} else {
				got.Total, _ = r.json()["total"].(float64)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", q, diff)
			}
		}
	})
}

// TestFilteredListOfDeepStoredRow: a row stored before nesting was bounded,
// deeper than SQLite's JSON functions read, does not make a filtered list
// fail: on SQLite it matches no filter, PostgreSQL reads it.
func TestFilteredListOfDeepStoredRow(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		mod := e.createModule("orders", orderFields...)
		deep := e.createRecord(mod, map[string]any{"title": "a"})
		e.createRecord(mod, map[string]any{"title": "a"})
		storeDeepFields(t, db, deep, `{"title":"a"}`)

		want := map[models.Dialect]float64{models.SQLite: 1, models.Postgres: 2}[d]
		for _, q := range []string{"filter[title]=a", "filter[paid]=true", "filter[qty]=1", "filter[title][exists]=false",
			"filter[title][prefix]=a", "filter[qty][gte]=1", "filter[title][in]=a,b", "filter[title][ne]=b", "filter[paid][ne]=true"} {
			r := e.call("GET", "/api/modules/"+mod+"/records?"+q, e.admin, nil).want(200)
			if q == "filter[title]=a" && r.json()["total"] != want {
				t.Errorf("%s: total %v, want %v", q, r.json()["total"], want)
			}
		}
		e.call("GET", "/api/modules/"+mod+"/records/"+deep, e.admin, nil).want(200)
	})
}

// TestRecordFilterOperators: filter[<field>][<op>] through the API on
// both databases: each operator selects as the store's cases say
// (models' TestFilterOperatorsAlike holds every type), several on one
// field all hold, created_at and updated_at take times; a bad operator,
// an operator the field's type does not take, a value of the wrong type
// or an in list over 100 values answer 400 invalid_request naming the
// parameter.
func TestRecordFilterOperators(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		base := "/api/modules/" + mod + "/records?sort=created_at&"
		ids := map[string]string{}
		for _, f := range []map[string]any{
			{"title": "apple", "qty": 1, "price": 1.5, "paid": true, "due": "2026-01-01T00:00:00Z", "size": "s"},
			{"title": "Apple", "qty": 10, "price": 2, "paid": false, "size": "m", "status": "paid"},
			{"title": "banana", "qty": -3, "due": "2025-12-31T23:59:59Z"},
		} {
			ids[e.createRecord(mod, f)] = f["title"].(string)
		}
		titles := func(q string) []string {
			t.Helper()
			var page struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
				Total int `json:"total"`
			}
			e.call("GET", base+q, e.admin, nil).want(200).decode(&page)
			out := []string{}
			for _, r := range page.Data {
				out = append(out, ids[r.ID])
			}
			if page.Total != len(out) {
				t.Errorf("%s: total %d beside %d records", q, page.Total, len(out))
			}
			return out
		}
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"filter[title]=apple", []string{"apple"}},
			{"filter[title][eq]=apple", []string{"apple"}},
			{"filter[title][ne]=apple", []string{"Apple", "banana"}},
			{"filter[qty][gt]=1", []string{"Apple"}},
			{"filter[qty][gte]=-3&filter[qty][lt]=10", []string{"apple", "banana"}},
			{"filter[price][lte]=1.5", []string{"apple"}},
			{"filter[title][gt]=apple", []string{"banana"}},
			{"filter[due][lt]=2026-01-01T00:00:00Z", []string{"banana"}},
			{"filter[status][in]=new,shipped", []string{"apple", "banana"}},
			{"filter[qty][in]=1,-3", []string{"apple", "banana"}},
			{"filter[size][prefix]=m", []string{"Apple"}},
			{"filter[title][prefix]=" + url.QueryEscape("a"), []string{"apple"}},
			{"filter[paid][ne]=true", []string{"Apple"}},
			{"filter[paid][exists]=false", []string{"banana"}},
			{"filter[due][exists]=true&filter[size][exists]=true", []string{"apple"}},
			{"filter[created_at][gte]=2000-01-01T00:00:00Z&filter[updated_at][lt]=9999-01-01T00:00:00Z", []string{"apple", "Apple", "banana"}},
			{"filter[created_at][lt]=2000-01-01T00:00:00%2B01:00", []string{}},
		} {
			if diff := cmp.Diff(c.want, titles(c.query)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.query, diff)
			}
		}

		// created_at against the stored instants: gte the second's.
		var page struct {
			Data []struct {
				CreatedAt string `json:"created_at"`
			} `json:"data"`
		}
		e.call("GET", base+"limit=3", e.admin, nil).want(200).decode(&page)
		second := page.Data[1].CreatedAt
		got := titles("filter[created_at][gte]=" + url.QueryEscape(second))
		want := []string{"Apple", "banana"}
		if page.Data[0].CreatedAt == second {
			want = []string{"apple", "Apple", "banana"}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("created_at gte %s (-want +got):\n%s", second, diff)
		}

		long := strings.TrimSuffix(strings.Repeat("1,", 101), ",")
		for _, c := range []struct{ query, message string }{
			{"filter[qty][like]=1", `filter[qty][like] unknown operator "like"; the operators are eq, ne, gt, gte, lt, lte, in, prefix, exists`},
			{"filter[paid][gt]=true", "filter[paid][gt] boolean fields do not take gt; they take eq, ne, exists"},
			{"filter[qty][prefix]=1", "filter[qty][prefix] integer fields do not take prefix; they take eq, ne, gt, gte, lt, lte, in, exists"},
			{"filter[status][gt]=new", "filter[status][gt] status fields do not take gt; they take eq, ne, in, prefix, exists"},
			{"filter[meta][exists]=true", "filter[meta][exists] json fields cannot be filtered"},
			{"filter[qty][gt]=abc", "filter[qty][gt] must be an integer written in decimal digits, such as 42 or -7"},
			{"filter[price][lt]=NaN", "filter[price][lt] must be a JSON number, such as 42, -0.5 or 1.5e3"},
			{"filter[qty][in]=" + long, "filter[qty][in] must list at most 100 values, got 101"},
			{"filter[qty][in]=1,x", "filter[qty][in] value 2: must be an integer written in decimal digits, such as 42 or -7"},
			{"filter[title][exists]=yes", "filter[title][exists] must be true or false"},
			{"filter[due][gt]=tomorrow", "filter[due][gt] must be an RFC 3339 date-time"},
			{"filter[created_at][gt]=tomorrow", "filter[created_at][gt] must be an RFC 3339 date-time"},
			{"filter[created_at][prefix]=2026", "filter[created_at][prefix]: created_at and updated_at take eq, ne, gt, gte, lt, lte"},
			{"filter[title][gt][x]=a", "filter[title][gt][x]: a filter is filter[<field>] or filter[<field>][<op>]"},
			{"filter[nope][gt]=1", `filter[nope][gt]: the module has no field "nope"`},
		} {
			r := e.call("GET", base+c.query, e.admin, nil).want(400)
			body := wantErrorBody(t, r, "invalid_request")
			if body["message"] != c.message {
				t.Errorf("%s: message %q, want %q", c.query, body["message"], c.message)
			}
		}
	})
}
