// Package mapping compiles and applies the rules of an inbound webhook: each
// rule copies one value of the JSON payload into a record field or a
// custom_data key.
//
// Sources are JSONPath expressions evaluated with github.com/ohler55/ojg/jp,
// restricted to keys and array indexes below $.payload so that a rule always
// selects at most one value: a rule that could match many values would leave
// the record's content to the order of a map walk.
package mapping
