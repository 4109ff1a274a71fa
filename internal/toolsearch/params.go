package toolsearch

import (
	"encoding/json"
	"strings"
)

// params returns the top-level parameters of an input schema: name →
// description.
func params(schema any) map[string]string {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Title       string `json:"title"`
		} `json:"properties"`
	}
	var data []byte
	switch v := schema.(type) {
	case nil:
		return nil
	case map[string]any: // a schema decoded from JSON: no round trip
		props, _ := v["properties"].(map[string]any)
		out := make(map[string]string, len(props))
		for name, p := range props {
			m, _ := p.(map[string]any)
			title, _ := m["title"].(string)
			desc, _ := m["description"].(string)
			out[name] = strings.TrimSpace(title + " " + desc)
		}
		return out
	case json.RawMessage:
		data = v
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil
		}
	}
	if json.Unmarshal(data, &s) != nil {
		return nil
	}
	out := make(map[string]string, len(s.Properties))
	for name, p := range s.Properties {
		out[name] = strings.TrimSpace(p.Title + " " + p.Description)
	}
	return out
}
