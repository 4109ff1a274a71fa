package graphlang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AddStep returns src (a graph file; empty for a new graph) with step id
// set to a call of tool (node.tool) with args, as the REPL's builder
// (`:graph step`) makes it. A step of that name is replaced; inputs the
// arguments refer to that are not declared yet are declared as strings.
// Comments and the order of everything else are kept.
func AddStep(src, id, tool string, args json.RawMessage) (string, error) {
	if !namePattern(id) {
		return "", fmt.Errorf("step name %q: use letters, digits and '_'", id)
	}
	var doc yaml.Node
	if strings.TrimSpace(src) != "" {
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			return "", fmt.Errorf("reading the graph: %w", err)
		}
	}
	if len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return "", fmt.Errorf("the graph is not a mapping")
	}
	root.Style = 0 // a JSON graph becomes block YAML as it grows

	var argv any = map[string]any{}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &argv); err != nil {
			return "", fmt.Errorf("arguments: %w", err)
		}
	}
	step := map[string]any{"call": tool}
	if m, ok := argv.(map[string]any); !ok || len(m) > 0 {
		step["args"] = argv
	}
	var value yaml.Node
	if err := value.Encode(step); err != nil {
		return "", err
	}
	// call first, then args: easier to read than the encoder's order.
	if len(value.Content) == 4 && value.Content[0].Value == "args" {
		value.Content = append(value.Content[2:], value.Content[:2]...)
	}
	value.Style = yaml.FlowStyle
	setKey(mapping(root, "steps"), id, &value)

	t, err := compileTemplate(Normalize(argv))
	if err != nil {
		return "", err
	}
	for _, r := range t.refs {
		if r.Root != "inputs" {
			continue
		}
		if lookup(root, "inputs") == nil {
			// Inputs read best before the steps.
			root.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Value: "inputs"}, {Kind: yaml.MappingNode}}, root.Content...)
		}
		inputs := mapping(root, "inputs")
		if lookup(inputs, r.Name) == nil {
			in := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			setKey(in, "type", &yaml.Node{Kind: yaml.ScalarNode, Value: "string"})
			setKey(inputs, r.Name, in)
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return "", err
	}
	return b.String(), nil
}

// mapping returns the mapping under key in m, adding an empty one.
func mapping(m *yaml.Node, key string) *yaml.Node {
	if v := lookup(m, key); v != nil && v.Kind == yaml.MappingNode {
		v.Style = 0
		return v
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	setKey(m, key, v)
	return v
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}
