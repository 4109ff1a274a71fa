package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// version is set at link time (-ldflags "-X github.com/nerve-dev/nerve/internal/cli.version=v1.2.3");
// otherwise it comes from the build info.
var version string

var versionOnce sync.Once

// Version returns nerve's build version: the module version, or for a
// development build "devel-" and the VCS revision (with "-dirty" for
// uncommitted changes), so two different builds never look alike.
func Version() string {
	versionOnce.Do(func() {
		if version != "" {
			return
		}
		version = "devel"
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return
		}
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
			return
		}
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			version += "-" + rev
		}
		if modified == "true" {
			version += "-dirty"
		}
	})
	return version
}

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
