package mapping

// Values is what a payload yields: only rules whose source is present
// contribute. A JSON null in the payload is present and stored as a nil
// value, so that callers can tell "clear this field" from "not sent".
type Values struct {
	Fields     map[string]any // never nil
	CustomData map[string]any // never nil
}

// Get returns the value for t and whether the payload held it.
func (v Values) Get(t Target) (any, bool) {
	m := v.Fields
	if t.Custom {
		m = v.CustomData
	}
	val, ok := m[t.Name]
	return val, ok
}

// Apply evaluates every rule against payload, the decoded JSON body
// (json.Decoder.UseNumber: objects map[string]any, arrays []any, numbers
// json.Number). Values share the payload's own sub-values rather than copies.
func (m *Mapping) Apply(payload any) Values {
	v := Values{Fields: map[string]any{}, CustomData: map[string]any{}}
	// Sources are whole paths from $, so the payload is put where they
	// expect it rather than having every path rewritten at compile time.
	root := map[string]any{"payload": payload}
	for i, src := range m.sources {
		// FirstFound reports presence apart from the value: a key holding
		// null is (nil, true), a missing one (nil, false).
		val, ok := src.path.FirstFound(root)
		if !ok {
			continue
		}
		t := m.targets[i]
		if t.Custom {
			v.CustomData[t.Name] = val
		} else {
			v.Fields[t.Name] = val
		}
	}
	return v
}
