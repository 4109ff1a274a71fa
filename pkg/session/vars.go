package session

import (
	"context"
	"os"
	"strings"
	"sync"

	"github.com/nerve-dev/nerve/pkg/node"
)

type clientEnvKey struct{}

// WithClientEnv returns ctx carrying the environment of the client whose
// request adds or restarts a node: the node's ${VAR} references resolve
// against it first. It is kept in memory, never saved.
func WithClientEnv(ctx context.Context, env []string) context.Context {
	return context.WithValue(ctx, clientEnvKey{}, env)
}

// SetClientEnv sets the environment of the client that added node id (see
// WithClientEnv); nil changes nothing.
func (s *Session) SetClientEnv(id string, env []string) {
	if e, err := s.entry(id); err == nil {
		e.client.set(env)
	}
}

func clientEnv(ctx context.Context) []string {
	env, _ := ctx.Value(clientEnvKey{}).([]string)
	return env
}

// entryEnv is the client environment an entry was added or last restarted
// with.
type entryEnv struct {
	mu  sync.Mutex
	env []string
}

func (e *entryEnv) set(env []string) {
	if env == nil {
		return
	}
	e.mu.Lock()
	e.env = env
	e.mu.Unlock()
}

func (e *entryEnv) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.env
}

// vars is a node's node.Vars: the client's environment (if a client added
// or restarted it since the daemon started), the session's extra
// variables (the private env file), then the daemon's own environment.
type vars struct {
	s  *Session
	e  *entry
	id string
}

func (v *vars) layers() *node.EnvLayers {
	l := &node.EnvLayers{}
	if env := v.e.client.get(); env != nil {
		l.Layers = append(l.Layers, env)
		l.Names = append(l.Names, "the environment of the client that added node "+v.id)
	}
	if v.s.extraEnv != nil {
		if env, name := v.s.extraEnv(); name != "" {
			l.Layers = append(l.Layers, env)
			l.Names = append(l.Names, name)
		}
	}
	l.Layers = append(l.Layers, os.Environ())
	l.Names = append(l.Names, "the daemon's")
	return l
}

// Lookup answers ${VAR} from the layers and ${keychain:NAME} (the key
// "keychain:NAME", which no variable can be named) from the session's
// secrets only: a client's environment cannot stand in for a secret.
func (v *vars) Lookup(key string) (string, bool) {
	if name, ok := strings.CutPrefix(key, node.SecretPrefix); ok {
		if v.s.secret == nil {
			return "", false
		}
		return v.s.secret(name)
	}
	return v.layers().Lookup(key)
}

func (v *vars) Environ() []string { return v.layers().Environ() }
func (v *vars) Where() string     { return v.layers().Where() }
