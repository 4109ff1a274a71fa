package clientconf

import (
	"os"
	"path/filepath"
	"strings"
)

// InstallHint says how to install nerve where a client config can name it.
const InstallHint = "install nerve first: `CGO_ENABLED=0 go install github.com/nerve-dev/nerve/cmd/nerve@latest` " +
	"(or `CGO_ENABLED=0 go install ./cmd/nerve` in a clone), then run the installed nerve " +
	"(in $(go env GOPATH)/bin, or $GOBIN)"

// Unstable says why the program at exe is not a stable install that a
// client's config may name — a copy the go command keeps in its build
// cache (`go run`), or a file in a temp folder, both deleted behind the
// client's back — or returns "" when it is one. It tells by the path's
// shape alone, symbolic links resolved, and never runs the go command:
// GOCACHE (getenv's, and the default os.UserCacheDir()/go-build), any
// folder named go-build… (the go command's work folders, and its cache),
// and GOTMPDIR, TMPDIR and os.TempDir().
func Unstable(exe string, getenv func(string) string) string {
	paths := []string{filepath.Clean(exe)}
	if real, err := filepath.EvalSymlinks(exe); err == nil && real != paths[0] {
		paths = append(paths, real)
	}
	var cache []string
	if c := getenv("GOCACHE"); c != "" && c != "off" {
		cache = append(cache, c)
	}
	if d, err := os.UserCacheDir(); err == nil {
		cache = append(cache, filepath.Join(d, "go-build"))
	}
	var temp []string
	for _, k := range []string{"GOTMPDIR", "TMPDIR"} {
		if d := getenv(k); d != "" {
			temp = append(temp, d)
		}
	}
	temp = append(temp, os.TempDir())
	for _, p := range paths {
		cached, work := goBuildFolder(p)
		if work {
			return exe + " is the build of a `go run`, which the go command deletes when it exits"
		}
		if cached || under(p, cache) {
			return exe + " is a copy in the go command's build cache (made by `go run`), which the go command deletes when it trims its cache"
		}
		if under(p, temp) {
			return exe + " is in a temp folder, which is emptied behind the client's back"
		}
	}
	return ""
}

// goBuildFolder reports whether a folder of path is the go command's: its
// cache (…/go-build) or one of its work folders (go-build123456).
func goBuildFolder(path string) (cache, work bool) {
	for _, e := range strings.Split(filepath.ToSlash(filepath.Dir(path)), "/") {
		switch {
		case e == "go-build":
			cache = true
		case strings.HasPrefix(e, "go-build"):
			work = true
		}
	}
	return cache, work
}

// under reports whether path is inside one of dirs (their symbolic links
// resolved too: macOS's /var is /private/var).
func under(path string, dirs []string) bool {
	home, _ := os.UserHomeDir()
	for _, d := range dirs {
		if d = filepath.Clean(d); filepath.Dir(d) == d || d == filepath.Clean(home) {
			continue // a temp folder set to / or home would take in everything
		}
		cands := []string{d}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			cands = append(cands, real)
		}
		for _, c := range cands {
			if rel, err := filepath.Rel(c, path); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
				return true
			}
		}
	}
	return false
}
