package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/nerve-dev/nerve/internal/atomicfile"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// stateVersion is the format version of a session's state file.
const stateVersion = 1

// stateFile is what a session's <name>.json holds. Specs are saved as
// given, with ${VAR} references unexpanded.
type stateFile struct {
	Version  int               `json:"version"`
	Session  string            `json:"session"`
	Settings *session.Settings `json:"settings,omitempty"`
	Nodes    []node.Spec       `json:"nodes"`
}

// saveSpecs writes the state file atomically (atomicfile: a temp file in the
// same folder, fsync, rename over the old one, fsync of the folder). A crash
// at any point leaves either the old file or the new one, never a mix.
func saveSpecs(path, sessionName string, specs []node.Spec, settings ...session.Settings) error {
	if specs == nil {
		specs = []node.Spec{}
	}
	st := stateFile{Version: stateVersion, Session: sessionName, Nodes: specs}
	if len(settings) > 0 && settings[0] != (session.Settings{}) {
		st.Settings = &settings[0]
	}
	session := sessionName
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding session %q: %w", session, err)
	}
	data = append(data, '\n')
	// 0600: specs may carry tokens in env and headers.
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("saving session %q: %w", session, err)
	}
	return nil
}

// loadState reads a state file: its specs and the session's settings.
// Any flaw (bad JSON, a newer format, an invalid id, a duplicate) is an
// error: the caller moves the file aside rather than guess.
func loadState(path string) ([]node.Spec, session.Settings, error) {
	var none session.Settings
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, none, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var st stateFile
	if err := dec.Decode(&st); err != nil {
		return nil, none, fmt.Errorf("reading %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return nil, none, fmt.Errorf("reading %s: format version %d, this nerve reads %d", path, st.Version, stateVersion)
	}
	seen := make(map[string]bool, len(st.Nodes))
	for _, s := range st.Nodes {
		if err := node.ValidateID(s.ID); err != nil {
			return nil, none, fmt.Errorf("reading %s: %w", path, err)
		}
		if seen[s.ID] {
			return nil, none, fmt.Errorf("reading %s: node %q appears twice", path, s.ID)
		}
		seen[s.ID] = true
	}
	if st.Settings != nil {
		none = *st.Settings
	}
	return st.Nodes, none, nil
}
