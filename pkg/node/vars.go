package node

import (
	"os"
	"strings"
)

// Vars is the environment a node resolves ${VAR} references against and
// gives the processes it starts. A session builds it per node: the
// environment of the client that added (or last restarted) the node, the
// private env file, then the daemon's own.
type Vars interface {
	// Lookup returns the value of key.
	Lookup(key string) (string, bool)
	// Environ returns the environment for a process, as KEY=VALUE.
	Environ() []string
	// Where names the environments Lookup reads, for a message about a
	// variable that is not set ("the environment of the client that added
	// node gh, the daemon's, and ~/.local/state/nerve/env").
	Where() string
}

// SecretPrefix starts the key a node looks up for a ${keychain:NAME}
// reference ("keychain:NAME"): no environment variable has such a name,
// and Vars answers it from nerve's secrets (`nerve secret set NAME`), not
// from an environment.
const SecretPrefix = "keychain:"

// Lookup returns the value of key in the node's environment (e.Vars, or
// the process's when there is none).
func (e Env) Lookup(key string) (string, bool) {
	if e.Vars != nil {
		return e.Vars.Lookup(key)
	}
	return os.LookupEnv(key)
}

// Environ returns the environment for a process the node starts.
func (e Env) Environ() []string {
	if e.Vars != nil {
		return e.Vars.Environ()
	}
	return os.Environ()
}

// VarsWhere names where the node's variables come from.
func (e Env) VarsWhere() string {
	if e.Vars != nil {
		return e.Vars.Where()
	}
	return "nerve's environment"
}

// EnvLayers is Vars over layers of KEY=VALUE lists, the first holding a
// key winning; Names names each layer for Where.
type EnvLayers struct {
	Layers [][]string
	Names  []string
}

// Lookup implements Vars.
func (l *EnvLayers) Lookup(key string) (string, bool) {
	for _, layer := range l.Layers {
		for i := len(layer) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(layer[i], "="); ok && k == key {
				return v, true
			}
		}
	}
	return "", false
}

// Environ implements Vars: every key once, with the value Lookup gives.
func (l *EnvLayers) Environ() []string {
	seen := map[string]bool{}
	var out []string
	for _, layer := range l.Layers {
		for i := len(layer) - 1; i >= 0; i-- {
			k, _, ok := strings.Cut(layer[i], "=")
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, layer[i])
		}
	}
	return out
}

// Where implements Vars.
func (l *EnvLayers) Where() string {
	switch len(l.Names) {
	case 0:
		return "nerve's environment"
	case 1:
		return l.Names[0]
	}
	return strings.Join(l.Names[:len(l.Names)-1], ", ") + " or " + l.Names[len(l.Names)-1]
}
