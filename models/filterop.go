package models

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Filter operators: a condition compares a field with a value by one of
// these. eq is the default: a plain value, filter[<field>]=<value> or
// {"<field>": <value>}, is an eq condition.
const (
	OpEq     = "eq"
	OpNe     = "ne"
	OpGt     = "gt"
	OpGte    = "gte"
	OpLt     = "lt"
	OpLte    = "lte"
	OpIn     = "in"
	OpPrefix = "prefix"
	OpExists = "exists"
)

// FilterOps lists the operators in the order the documents list them.
var FilterOps = []string{OpEq, OpNe, OpGt, OpGte, OpLt, OpLte, OpIn, OpPrefix, OpExists}

// opsOf returns the operators a field of type typ takes. Ordering
// compares numbers by value and text by its bytes (a datetime by its
// text as stored); prefix is for text; a boolean is equal or not; json
// fields take none.
func opsOf(typ string) []string {
	switch typ {
	case TypeString, TypeText, TypeEmail, TypeURL:
		return FilterOps
	case TypeInteger, TypeNumber, TypeDatetime:
		return []string{OpEq, OpNe, OpGt, OpGte, OpLt, OpLte, OpIn, OpExists}
	case TypeEnum, TypeStatus:
		return []string{OpEq, OpNe, OpIn, OpPrefix, OpExists}
	case TypeBoolean:
		return []string{OpEq, OpNe, OpExists}
	}
	return nil
}

// TimeOps are the operators on a record's created_at and updated_at.
var TimeOps = []string{OpEq, OpNe, OpGt, OpGte, OpLt, OpLte}

// checkOp says why field f cannot take op, or "".
func checkOp(f Field, op string) string {
	if f.Type == TypeJSON {
		return "json fields cannot be filtered"
	}
	if !slices.Contains(FilterOps, op) {
		return fmt.Sprintf("unknown operator %q; the operators are %s", op, strings.Join(FilterOps, ", "))
	}
	if ops := opsOf(f.Type); !slices.Contains(ops, op) {
		return fmt.Sprintf("%s fields do not take %s; they take %s", f.Type, op, strings.Join(ops, ", "))
	}
	return ""
}

// FilterCond is one condition on a field: an operator and the value it
// compares with, in the form Field.FilterValue returns (a string, a bool
// or a json.Number); for in, a []any of those; for exists, a bool.
type FilterCond struct {
	Op    string
	Value any
}

// filterConds returns the conditions of one filter entry, sorted by
// operator: a map is operator → value (json fields cannot be filtered,
// so an object is never a value), anything else is an eq condition.
func filterConds(v any) []FilterCond {
	ops, ok := v.(map[string]any)
	if !ok {
		return []FilterCond{{Op: OpEq, Value: v}}
	}
	out := make([]FilterCond, 0, len(ops))
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		out = append(out, FilterCond{Op: op, Value: ops[op]})
	}
	return out
}

// countConds is the number of conditions of a filter: each operator
// counts as one.
func countConds(filter map[string]any) int {
	n := 0
	for _, v := range filter {
		n += len(filterConds(v))
	}
	return n
}

// FilterOperand converts a query-string value raw of op on field f: an
// in list is comma-separated, at most MaxFilterInValues values; exists
// takes true or false; the others take what Field.FilterValue takes. The
// error reads after the parameter's name.
func (f Field) FilterOperand(op, raw string) (any, error) {
	if msg := checkOp(f, op); msg != "" {
		return nil, errors.New(msg)
	}
	switch op {
	case OpExists:
		if raw != "true" && raw != "false" {
			return nil, errors.New("must be true or false")
		}
		return raw == "true", nil
	case OpIn:
		parts := strings.Split(raw, ",")
		if len(parts) > MaxFilterInValues {
			return nil, fmt.Errorf("must list at most %d values, got %d", MaxFilterInValues, len(parts))
		}
		out := make([]any, len(parts))
		for i, p := range parts {
			v, err := f.FilterValue(p)
			if err != nil {
				return nil, fmt.Errorf("value %d: %w", i+1, err)
			}
			out[i] = v
		}
		return out, nil
	case OpPrefix:
		// A prefix of an option need not be an option.
		if msg := unstorable(raw); msg != "" {
			return nil, errors.New(msg)
		}
		return raw, nil
	}
	return f.FilterValue(raw)
}

// FilterHolds reports whether a record's value of a field (got, nil
// when the record lacks it or holds null) holds condition c. It is the
// one comparison of the Go side (endpoint filters), and answers as the
// list's SQL does: a value of another type than the condition's, or none,
// holds no condition but exists=false; numbers compare by value (2 equals
// 2.0), strings by their bytes.
func FilterHolds(c FilterCond, got any) bool {
	switch c.Op {
	case OpExists:
		want, _ := c.Value.(bool)
		return (got != nil) == want
	case OpEq:
		return filterEqual(c.Value, got)
	case OpIn:
		list, _ := c.Value.([]any)
		return slices.ContainsFunc(list, func(w any) bool { return filterEqual(w, got) })
	case OpPrefix:
		w, ok := c.Value.(string)
		g, gok := got.(string)
		return ok && gok && strings.HasPrefix(g, w)
	}
	n, ok := filterCompare(c.Value, got)
	return ok && compareHolds(c.Op, n)
}

// compareHolds reports whether a comparison whose result is n (got −
// want in sign) holds operator op: eq, ne, gt, gte, lt or lte.
func compareHolds(op string, n int) bool {
	switch op {
	case OpEq:
		return n == 0
	case OpNe:
		return n != 0
	case OpGt:
		return n > 0
	case OpGte:
		return n >= 0
	case OpLt:
		return n < 0
	case OpLte:
		return n <= 0
	}
	return false
}

// filterCompare compares a record's value got with a condition's value
// want (got − want in sign), when both are of one type: booleans only
// as equal or not.
func filterCompare(want, got any) (int, bool) {
	switch w := want.(type) {
	case string:
		g, ok := got.(string)
		return strings.Compare(g, w), ok
	case bool:
		g, ok := got.(bool)
		if !ok {
			return 0, false
		}
		if g == w {
			return 0, true
		}
		return 1, true
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return 0, false
		}
		return compareNumbers(g, w)
	}
	return 0, false
}

// compareNumbers compares two JSON numbers by value: as integers when
// both are integers within int64, else as float64.
func compareNumbers(a, b json.Number) (int, bool) {
	ai, aerr := strconv.ParseInt(string(a), 10, 64)
	bi, berr := strconv.ParseInt(string(b), 10, 64)
	if aerr == nil && berr == nil {
		return cmp.Compare(ai, bi), true
	}
	af, aerr := strconv.ParseFloat(string(a), 64)
	bf, berr := strconv.ParseFloat(string(b), 64)
	if aerr != nil || berr != nil {
		return 0, false
	}
	return cmp.Compare(af, bf), true
}

// sqlOps are the SQL comparisons of the ordering operators and ne.
var sqlOps = map[string]string{OpEq: "=", OpNe: "<>", OpGt: ">", OpGte: ">=", OpLt: "<", OpLte: "<="}

// condOn returns the SQL condition that key name of the JSON column holds
// c, and its arguments; it answers as FilterHolds. column is a constant
// of the caller's, never input.
func (s *Store) condOn(column, name string, c FilterCond) (string, []any, error) {
	switch c.Op {
	case OpEq:
		return s.filterOn(column, name, c.Value)
	case OpIn:
		list, _ := c.Value.([]any)
		if len(list) == 0 {
			return "1 = 0", nil, nil
		}
		var conds []string
		var args []any
		for _, v := range list {
			cond, cargs, err := s.filterOn(column, name, v)
			if err != nil {
				return "", nil, err
			}
			conds = append(conds, "("+cond+")")
			args = append(args, cargs...)
		}
		return "(" + strings.Join(conds, " OR ") + ")", args, nil
	case OpExists:
		want, _ := c.Value.(bool)
		if s.dialect == Postgres {
			if want {
				return "jsonb_typeof(" + column + " -> ?) <> 'null'", []any{name}, nil
			}
			return "COALESCE(jsonb_typeof(" + column + " -> ?), 'null') = 'null'", []any{name}, nil
		}
		path := `$."` + name + `"`
		if want {
			return "COALESCE(json_type(" + readableJSON(column) + ", ?), 'null') <> 'null'", []any{path}, nil
		}
		// A row SQLite cannot read matches no condition, this one included.
		return "(CASE WHEN json_valid(" + column + ") THEN COALESCE(json_type(" + column + ", ?), 'null') = 'null' ELSE 0 END)", []any{path}, nil
	case OpPrefix:
		p, ok := c.Value.(string)
		if !ok {
			return "", nil, Errorf(KindInvalid, "the prefix compared with %s must be a string", name)
		}
		if s.dialect == Postgres {
			return "jsonb_typeof(" + column + " -> ?) = 'string' AND starts_with(" + column + " ->> ?, ?)", []any{name, name, p}, nil
		}
		readable, path := readableJSON(column), `$."`+name+`"`
		return "json_type(" + readable + ", ?) = 'text' AND substr(json_extract(" + readable + ", ?), 1, length(?)) = ?", []any{path, path, p, p}, nil
	}
	op, ok := sqlOps[c.Op]
	if !ok {
		return "", nil, Errorf(KindInvalid, "unknown filter operator %q", c.Op)
	}
	return s.compareOn(column, name, op, c.Value)
}

// compareOn is condOn for ne and the ordering operators: the key must
// hold a value of v's type, compared with v by op.
func (s *Store) compareOn(column, name, op string, v any) (string, []any, error) {
	readable, path := readableJSON(column), `$."`+name+`"`
	switch x := v.(type) {
	case json.Number:
		arg, err := numberArg(name, x)
		if err != nil {
			return "", nil, err
		}
		if s.dialect == Postgres {
			// jsonb compares numbers by value, exactly; the type check keeps
			// strings and booleans, which jsonb orders after numbers, out.
			return "jsonb_typeof(" + column + " -> ?) = 'number' AND " + column + " -> ? " + op + " to_jsonb(CAST(? AS " + pgNumberType(arg) + "))", []any{name, name, arg}, nil
		}
		return "json_type(" + readable + ", ?) IN ('integer', 'real') AND json_extract(" + readable + ", ?) " + op + " ?", []any{path, path, arg}, nil
	case string:
		if s.dialect == Postgres {
			// The C collation orders by bytes, as SQLite and Go do.
			return "jsonb_typeof(" + column + " -> ?) = 'string' AND (" + column + " ->> ?) COLLATE \"C\" " + op + " ?", []any{name, name, x}, nil
		}
		return "json_type(" + readable + ", ?) = 'text' AND json_extract(" + readable + ", ?) " + op + " ?", []any{path, path, x}, nil
	case bool:
		if op != "<>" {
			break
		}
		if s.dialect == Postgres {
			return "jsonb_typeof(" + column + " -> ?) = 'boolean' AND " + column + " -> ? <> to_jsonb(CAST(? AS boolean))", []any{name, name, x}, nil
		}
		typ := "false"
		if x {
			typ = "true"
		}
		return "json_type(" + readable + ", ?) IN ('true', 'false') AND json_type(" + readable + ", ?) <> ?", []any{path, path, typ}, nil
	}
	return "", nil, Errorf(KindInvalid, "the value compared with %s does not take %s", name, op)
}

// TimeCond is a condition on a record's created_at or updated_at.
type TimeCond struct {
	// Column is created_at or updated_at.
	Column string
	// Op is one of TimeOps.
	Op string
	At time.Time
}

// timeColumns are the record columns a TimeCond may name.
var timeColumns = []string{"created_at", "updated_at"}

// timeCond returns the SQL condition of c: the column against the
// instant, which the indexes on (module_id, created_at) and (module_id,
// updated_at) serve.
func timeCond(c TimeCond) (string, []any, error) {
	op, ok := sqlOps[c.Op]
	if !ok || !slices.Contains(TimeOps, c.Op) || !slices.Contains(timeColumns, c.Column) {
		return "", nil, Errorf(KindInvalid, "%s does not take %s", c.Column, c.Op)
	}
	return c.Column + " " + op + " ?", []any{c.At.UTC()}, nil
}
