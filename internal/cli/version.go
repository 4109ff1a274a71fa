package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/nerve-dev/nerve/internal/version"
)

// Version returns nerve's build version (internal/version).
func Version() string { return version.String() }

func runVersion(ctx context.Context, env *Env, inv *Invocation) error {
	info := struct {
		Version string `json:"version"`
		Go      string `json:"go"`
		OS      string `json:"os"`
		Arch    string `json:"arch"`
	}{Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH}
	if env.JSON {
		return json.NewEncoder(env.Stdout).Encode(info)
	}
	_, err := fmt.Fprintf(env.Stdout, "nerve %s (%s %s/%s)\n", info.Version, info.Go, info.OS, info.Arch)
	return err
}
