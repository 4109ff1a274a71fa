package session

import (
	"time"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Settings apply to every node of a session that has no setting of its
// own; they are saved with the session.
type Settings struct {
	// Idle stops an MCP server node after that long without a call (its
	// catalogue kept; the next call starts it again). Zero: never.
	Idle node.Duration `json:"idle,omitempty"`
	// Expose is the tool filter every MCP client of the session gets
	// (comma-separated globs over node.tool, "!" to exclude); a client's
	// own filter can only narrow it. Empty: every tool.
	Expose string `json:"expose,omitempty"`
}

// Settings returns the session's settings.
func (s *Session) Settings() Settings {
	s.settingsMu.Lock()
	defer s.settingsMu.Unlock()
	return s.settings
}

// LoadSettings sets the settings without saving them (a session being
// restored from its file).
func (s *Session) LoadSettings(st Settings) {
	s.settingsMu.Lock()
	s.settings = st
	s.settingsMu.Unlock()
}

// SetSettings sets and saves the session's settings, and publishes
// EventSettings: what the session's MCP servers expose may change.
func (s *Session) SetSettings(st Settings) error {
	s.LoadSettings(st)
	err := s.persist()
	s.hub.publish(Event{Kind: EventSettings, Time: time.Now()})
	return err
}

func (s *Session) idle() time.Duration { return time.Duration(s.Settings().Idle) }
