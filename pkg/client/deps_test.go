package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientDeps: a program that imports pkg/client links nothing of nerve
// but pkg/api, and neither zap nor the MCP SDK and its JSON schema package
// (issue 20).
func TestClientDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(dep, "github.com/nerve-dev/nerve/") && dep != "github.com/nerve-dev/nerve/pkg/api" && dep != "github.com/nerve-dev/nerve/pkg/client",
			strings.HasPrefix(dep, "go.uber.org/"),
			strings.HasPrefix(dep, "github.com/modelcontextprotocol/"),
			strings.HasPrefix(dep, "github.com/google/jsonschema-go"):
			t.Errorf("pkg/client depends on %s", dep)
		}
	}
}
