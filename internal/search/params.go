package search

import (
	"encoding/json"
	"sort"
)

// SchemaParams returns the top-level parameter names of a JSON input schema, sorted, and their
// descriptions in the same order ("" where a parameter has none): what Doc.Params and
// Doc.ParamDocs take. A schema that is not a JSON object with properties gives nil, nil. Callers
// bound the schema's size (schemas are untrusted).
func SchemaParams(schema []byte) (names, docs []string) {
	if len(schema) == 0 {
		return nil, nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil, nil
	}
	names = make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	docs = make([]string, len(names))
	for i, n := range names {
		var p struct {
			Description string `json:"description"`
		}
		if json.Unmarshal(s.Properties[n], &p) == nil {
			docs[i] = p.Description
		}
	}
	return names, docs
}
