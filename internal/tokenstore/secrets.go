package tokenstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/nerve-dev/nerve/internal/atomicfile"
)

// Secrets are the values nodes name as ${keychain:NAME} (issue 32, item
// 5), kept in the same Store as sign-ins — the OS keychain if it answers,
// else 0600 files — under "secret|NAME". Neither store can list what it
// holds (the keychain has no listing in go-keyring; files are named by a
// hash), so the names, never the values, are kept in a 0600 file beside
// them for `nerve secret ls`.
type Secrets struct {
	store Store
	index string // the names file
	mu    sync.Mutex
}

// ErrNoSecret: no secret of that name is stored.
var ErrNoSecret = errors.New("no such secret")

// NewSecrets returns the secrets of nerve's state folder stateDir in store
// (Open's).
func NewSecrets(store Store, stateDir string) *Secrets {
	return &Secrets{store: store, index: filepath.Join(stateDir, "secrets")}
}

// ValidSecretName reports whether name can be a secret's name: what
// ${keychain:NAME} can name — letters, digits and _, not starting with a
// digit.
func ValidSecretName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func secretKey(name string) string { return "secret|" + name }

// Get returns secret name's value; ErrNoSecret when it is not stored.
func (s *Secrets) Get(name string) (string, error) {
	b, err := s.store.Get(secretKey(name))
	if errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("secret %s: %w", name, ErrNoSecret)
	}
	if err != nil {
		return "", fmt.Errorf("reading secret %s: %w", name, err)
	}
	return string(b), nil
}

// Set stores secret name's value.
func (s *Secrets) Set(name, value string) error {
	if !ValidSecretName(name) {
		return fmt.Errorf("%q is not a secret name: use letters, digits and _, not starting with a digit (as in ${keychain:NAME})", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.Set(secretKey(name), []byte(value)); err != nil {
		return fmt.Errorf("saving secret %s: %w", name, err)
	}
	names, err := s.namesLocked()
	if err != nil {
		return err
	}
	if !slices.Contains(names, name) {
		return s.writeNamesLocked(append(names, name))
	}
	return nil
}

// Delete removes secret name; it reports whether there was one.
func (s *Secrets) Delete(name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, gerr := s.store.Get(secretKey(name))
	if err := s.store.Delete(secretKey(name)); err != nil {
		return false, fmt.Errorf("deleting secret %s: %w", name, err)
	}
	names, err := s.namesLocked()
	if err != nil {
		return false, err
	}
	i := slices.Index(names, name)
	if i >= 0 {
		if err := s.writeNamesLocked(slices.Delete(names, i, i+1)); err != nil {
			return false, err
		}
	}
	return gerr == nil || i >= 0, nil
}

// Names returns the names of the stored secrets, sorted.
func (s *Secrets) Names() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names, err := s.namesLocked()
	slices.Sort(names)
	return names, err
}

// Where says where the values are kept, for messages.
func (s *Secrets) Where() string { return s.store.Where() }

func (s *Secrets) namesLocked() ([]string, error) {
	b, err := os.ReadFile(s.index)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the secrets' names: %w", err)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if n := strings.TrimSpace(sc.Text()); ValidSecretName(n) {
			names = append(names, n)
		}
	}
	return names, nil
}

func (s *Secrets) writeNamesLocked(names []string) error {
	var b strings.Builder
	b.WriteString("# names of nerve's secrets (`nerve secret ls`); their values are in " + s.store.Where() + "\n")
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(s.index), 0o700); err != nil {
		return fmt.Errorf("writing the secrets' names: %w", err)
	}
	if err := atomicfile.Write(s.index, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing the secrets' names: %w", err)
	}
	return nil
}
