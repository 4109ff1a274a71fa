package api

import "time"

// UILink answers POST /v1/sessions/{s}/ui: the address that opens the
// session's dashboard in a browser (`nerve ui`), with a one-time token
// in it that is good once, until Expires.
type UILink struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}
