package session

import (
	"time"

	"github.com/nerve-dev/nerve/pkg/api"
)

// Settings apply to every node of a session that has no setting of its
// own; they are saved with the session.
type Settings = api.Settings

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
