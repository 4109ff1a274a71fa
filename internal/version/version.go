// Package version is nerve's build version, which the command line and
// the daemon compare so that a stale daemon is told apart. It imports
// nothing of nerve; internal/cli reads it.
package version

import (
	"runtime/debug"
	"sync"
)

// version is set at link time:
//
//	go build -ldflags "-X github.com/nerve-dev/nerve/internal/version.version=v1.2.3" ./cmd/nerve
//
// otherwise it comes from the build info.
var version string

var once sync.Once

// String returns nerve's build version: the module version, or for a
// development build "devel-" and the VCS revision (with "-dirty" for
// uncommitted changes), so two different builds never look alike.
func String() string {
	once.Do(func() {
		if version != "" {
			return
		}
		version = fromBuildInfo()
	})
	return version
}

func fromBuildInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
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
	v := "devel"
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += "-" + rev
	}
	if modified == "true" {
		v += "-dirty"
	}
	return v
}
