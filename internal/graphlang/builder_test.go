package graphlang

import (
	"strings"
	"testing"
)

func TestAddStepBuildsAGraph(t *testing.T) {
	src, err := AddStep("", "read", "fs.read_text_file", []byte(`{"path":"${inputs.file}"}`))
	if err != nil {
		t.Fatal(err)
	}
	src, err = AddStep(src, "review", "claude.ask_claude", []byte(`{"message":"Review:\n${steps.read.text}"}`))
	if err != nil {
		t.Fatal(err)
	}
	// Replacing a step keeps its place.
	src, err = AddStep("# my graph\n"+src, "read", "fs.read_file", []byte(`{"path":"${inputs.file}"}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if len(d.Steps) != 2 || d.Steps[0].ID != "read" || d.Steps[0].Call != "fs.read_file" || d.Steps[1].Deps[0] != "read" {
		t.Errorf("steps %+v\n%s", d.Steps, src)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "file" || !strings.HasPrefix(src, "# my graph") {
		t.Errorf("inputs %+v\n%s", d.Inputs, src)
	}
	if _, err := AddStep(src, "bad name", "a.b", nil); err == nil {
		t.Error("a step name with a space was accepted")
	}
}
