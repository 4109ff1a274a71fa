// Package envfile reads and edits nerve's private env file: KEY=VALUE
// lines in the .env syntax (comments, blank lines, an `export ` prefix,
// single- or double-quoted values), kept 0600 in the state folder. The
// daemon resolves ${VAR} in restored nodes against it; `nerve env` edits it.
package envfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/nerve-dev/nerve/internal/atomicfile"
)

// Entry is one variable of the file.
type Entry struct {
	Key   string
	Value string
}

// Parse reads the .env syntax. A line it cannot read is an error naming
// the line.
func Parse(data []byte) ([]Entry, error) {
	var out []Entry
	for i, line := range strings.Split(string(data), "\n") {
		e, ok, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

func parseLine(line string) (Entry, bool, error) {
	s := strings.TrimSpace(line)
	if s == "" || strings.HasPrefix(s, "#") {
		return Entry{}, false, nil
	}
	s = strings.TrimPrefix(s, "export ")
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || !ValidKey(k) {
		return Entry{}, false, fmt.Errorf("%q is not KEY=VALUE (a key is letters, digits and _, not starting with a digit)", line)
	}
	v = strings.TrimSpace(v)
	switch {
	case strings.HasPrefix(v, `"`):
		u, err := strconv.Unquote(v)
		if err != nil {
			return Entry{}, false, fmt.Errorf("%s: the double-quoted value is not closed or has a bad escape", k)
		}
		v = u
	case strings.HasPrefix(v, "'"):
		if len(v) < 2 || !strings.HasSuffix(v, "'") {
			return Entry{}, false, fmt.Errorf("%s: the single-quoted value is not closed", k)
		}
		v = v[1 : len(v)-1]
	default:
		if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i]) // a comment after an unquoted value
		}
	}
	return Entry{Key: k, Value: v}, true, nil
}

// ValidKey reports whether k can be a variable's name.
func ValidKey(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Load reads the file at path; a missing file has no entries.
func Load(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	es, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return es, nil
}

// Environ returns the entries of the file at path as KEY=VALUE, later
// lines winning; an unreadable file gives none (and its error).
func Environ(path string) ([]string, error) {
	es, err := Load(path)
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Key+"="+e.Value)
	}
	return out, err
}

// Set sets key to value in the file at path (created 0600), replacing
// every line of key and keeping the other lines as they are. The file is
// written atomically.
func Set(path, key, value string) error {
	return edit(path, key, key+"="+quote(value))
}

// Unset removes key from the file at path; it reports whether it was
// there.
func Unset(path, key string) (bool, error) {
	es, err := Load(path)
	if err != nil {
		return false, err
	}
	found := false
	for _, e := range es {
		found = found || e.Key == key
	}
	if !found {
		return false, nil
	}
	return true, edit(path, key, "")
}

func edit(path, key, replacement string) error {
	if !ValidKey(key) {
		return fmt.Errorf("%q is not a variable name: letters, digits and _, not starting with a digit", key)
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, err := Parse(data); err != nil {
		return fmt.Errorf("%s: %w; fix the file first", path, err)
	}
	var lines []string
	done := false
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if e, ok, _ := parseLine(line); ok && e.Key == key {
			if replacement != "" && !done {
				lines = append(lines, replacement)
				done = true
			}
			continue
		}
		if line != "" || len(lines) > 0 {
			lines = append(lines, line)
		}
	}
	if replacement != "" && !done {
		lines = append(lines, replacement)
	}
	out := strings.Join(lines, "\n")
	if out != "" {
		out += "\n"
	}
	return atomicfile.Write(path, []byte(out), 0o600)
}

// quote writes value so Parse reads it back: bare when it is plain,
// double-quoted otherwise.
func quote(v string) string {
	plain := v != ""
	for _, c := range v {
		if !(c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == '@' || c == '+' || c == ',' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return v
	}
	return strconv.Quote(v)
}
