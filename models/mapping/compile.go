package mapping

import (
	"fmt"
	"slices"
)

// MaxRules bounds a rule list.
const MaxRules = 100

// Problem is one invalid rule: Rule is its index, Attr "source" or "field".
type Problem struct {
	Rule    int
	Attr    string
	Message string
}

// Mapping is a compiled, valid rule list.
type Mapping struct {
	rules   []Rule
	targets []Target
	sources []source
	index   map[Target]int
}

// Compile checks every rule and compiles it. It returns every problem found,
// and a nil Mapping when there is any, so that an admin fixes a rule list in
// one round trip.
//
// A list longer than MaxRules yields one Problem on the first rule past the
// limit (Rule MaxRules, Attr "field"), so that callers which render
// problems as rules[i].attr still point at a real element; the rules past
// the limit are not checked.
func Compile(rules []Rule) (*Mapping, []Problem) {
	var problems []Problem
	n := len(rules)
	if n > MaxRules {
		problems = append(problems, Problem{Rule: MaxRules, Attr: "field", Message: fmt.Sprintf("at most %d rules", MaxRules)})
		n = MaxRules
	}
	m := &Mapping{
		rules:   slices.Clone(rules[:n]),
		targets: make([]Target, n),
		sources: make([]source, n),
		index:   make(map[Target]int, n),
	}
	for i, r := range m.rules {
		src, err := compileSource(r.Source)
		if err != nil {
			problems = append(problems, Problem{Rule: i, Attr: "source", Message: err.Error()})
		}
		m.sources[i] = src
		t, err := ParseTarget(r.Field)
		if err != nil {
			problems = append(problems, Problem{Rule: i, Attr: "field", Message: err.Error()})
			continue
		}
		if first, dup := m.index[t]; dup {
			problems = append(problems, Problem{Rule: i, Attr: "field", Message: fmt.Sprintf("rule %d already writes %s", first, t)})
			continue
		}
		m.targets[i] = t
		m.index[t] = i
	}
	if len(problems) > 0 {
		slices.SortStableFunc(problems, func(a, b Problem) int { return a.Rule - b.Rule })
		return nil, problems
	}
	return m, nil
}

// Rules returns the rules as given to Compile.
func (m *Mapping) Rules() []Rule { return slices.Clone(m.rules) }

// RuleFor returns the index of the rule that writes t, or -1.
func (m *Mapping) RuleFor(t Target) int {
	if i, ok := m.index[t]; ok {
		return i
	}
	return -1
}
