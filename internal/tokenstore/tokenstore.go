// Package tokenstore keeps OAuth sign-ins of mcp nodes and nerve's
// secrets (`nerve secret`, a node's ${keychain:NAME}: secrets.go) across
// daemon restarts, out of the session state and the logs: in the OS
// keychain where there is one (macOS Keychain, Windows Credential Manager,
// the Secret Service on Linux desktops, through
// github.com/zalando/go-keyring), else in 0600 files of a 0700 folder in
// nerve's state folder. The daemon and the commands (`nerve node auth`,
// `nerve secret`) import it.
package tokenstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/zalando/go-keyring"

	"github.com/nerve-dev/nerve/internal/atomicfile"
)

// ErrNotFound: nothing is stored under the key.
var ErrNotFound = errors.New("no sign-in stored")

// Store holds secrets by key. Safe for concurrent use.
type Store interface {
	Get(key string) ([]byte, error) // ErrNotFound when absent
	Set(key string, secret []byte) error
	Delete(key string) error // absent is not an error
	// Where says where secrets are kept, for messages.
	Where() string
}

// keyringService names nerve's items in the OS keychain.
const keyringService = "nerve"

// Open returns the store for nerve's state folder stateDir: the OS
// keychain if it answers, else files in stateDir/tokens. mode "file"
// (NERVE_TOKENS=file) skips the keychain; "keychain" insists on it.
func Open(stateDir, mode string) (Store, error) {
	files := &fileStore{dir: filepath.Join(stateDir, "tokens")}
	switch mode {
	case "file":
		return files, nil
	case "", "auto", "keychain":
	default:
		return nil, fmt.Errorf("NERVE_TOKENS=%q: use keychain, file, or leave it unset (keychain if there is one, else file)", mode)
	}
	// Items are named after the state folder too, so two nerves of one
	// user (NERVE_HOME) keep apart.
	k := &keyringStore{prefix: stateDir + "|"}
	if mode == "keychain" {
		if err := k.probe(); err != nil {
			return nil, fmt.Errorf("NERVE_TOKENS=keychain, but the OS keychain cannot be used: %w (unset NERVE_TOKENS to keep sign-ins in files instead)", err)
		}
		return k, nil
	}
	return &autoStore{k: k, f: files}, nil
}

// autoStore uses the keychain if it answers, else the files. It asks the
// keychain on first use, not at Open: a daemon that never signs in never
// touches it (nor makes a desktop keyring ask to be unlocked).
type autoStore struct {
	k *keyringStore
	f *fileStore
}

func (a *autoStore) pick() Store {
	if a.k.probe() != nil {
		return a.f
	}
	return a.k
}

func (a *autoStore) Get(key string) ([]byte, error)      { return a.pick().Get(key) }
func (a *autoStore) Set(key string, secret []byte) error { return a.pick().Set(key, secret) }
func (a *autoStore) Delete(key string) error             { return a.pick().Delete(key) }
func (a *autoStore) Where() string                       { return a.pick().Where() }

type keyringStore struct {
	prefix string
	once   sync.Once
	err    error
}

func (k *keyringStore) probe() error {
	k.once.Do(func() {
		key := k.prefix + "probe"
		if err := keyring.Set(keyringService, key, "ok"); err != nil {
			k.err = err
			return
		}
		k.err = keyring.Delete(keyringService, key)
	})
	return k.err
}

func (k *keyringStore) Get(key string) ([]byte, error) {
	s, err := keyring.Get(keyringService, k.prefix+key)
	if errors.Is(err, keyring.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading a sign-in from the OS keychain: %w", err)
	}
	return []byte(s), nil
}

func (k *keyringStore) Set(key string, secret []byte) error {
	if err := keyring.Set(keyringService, k.prefix+key, string(secret)); err != nil {
		return fmt.Errorf("saving a sign-in in the OS keychain: %w", err)
	}
	return nil
}

func (k *keyringStore) Delete(key string) error {
	err := keyring.Delete(keyringService, k.prefix+key)
	if err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return fmt.Errorf("deleting a sign-in from the OS keychain: %w", err)
	}
	return nil
}

func (k *keyringStore) Where() string { return "the OS keychain (service \"nerve\")" }

// fileStore keeps each secret in dir/<sha256 of key>.json, 0600.
type fileStore struct {
	dir string
	mu  sync.Mutex
}

func (f *fileStore) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(f.dir, hex.EncodeToString(sum[:16])+".json")
}

func (f *fileStore) Get(key string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := os.ReadFile(f.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading a sign-in: %w", err)
	}
	return b, nil
}

func (f *fileStore) Set(key string, secret []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("creating the sign-in folder: %w", err)
	}
	if err := os.Chmod(f.dir, 0o700); err != nil {
		return fmt.Errorf("making the sign-in folder private: %w", err)
	}
	if err := atomicfile.Write(f.path(key), secret, 0o600); err != nil {
		return fmt.Errorf("saving a sign-in: %w", err)
	}
	return nil
}

func (f *fileStore) Delete(key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.Remove(f.path(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting a sign-in: %w", err)
	}
	return nil
}

func (f *fileStore) Where() string { return "files in " + f.dir + " (mode 0600)" }

// Files returns how many sign-ins the file store of state folder stateDir
// holds (the daemon's metrics); a keychain's cannot be counted without
// asking it, which may ask the person to unlock it.
func Files(stateDir string) (int, error) {
	es, err := os.ReadDir(filepath.Join(stateDir, "tokens"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	n := 0
	for _, e := range es {
		if e.Type().IsRegular() && filepath.Ext(e.Name()) == ".json" {
			n++
		}
	}
	return n, err
}
