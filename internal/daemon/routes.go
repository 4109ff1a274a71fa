package daemon

import "net/http"

// routes is the one route table of the local API; it reads as its table
// of contents. Every route is under /v1/ and passes through guard.
func (d *Daemon) routes() http.Handler {
	mux := http.NewServeMux()
	for _, r := range []struct {
		pattern string
		handler http.HandlerFunc
	}{
		{"GET /v1/version", d.handleVersion},
		{"GET /v1/kinds", d.handleKinds},
		{"POST /v1/shutdown", d.handleShutdown},

		{"GET /v1/sessions", d.handleSessions},
		{"DELETE /v1/sessions/{session}", d.handleRemoveSession},
		{"GET /v1/sessions/{session}/events", d.handleEvents},
		{"GET /v1/sessions/{session}/tools", d.handleToolset},

		{"GET /v1/sessions/{session}/nodes", d.handleNodes},
		{"POST /v1/sessions/{session}/nodes", d.handleAddNode},
		{"GET /v1/sessions/{session}/nodes/{node}", d.handleNode},
		{"PUT /v1/sessions/{session}/nodes/{node}", d.handleReplaceNode},
		{"DELETE /v1/sessions/{session}/nodes/{node}", d.handleRemoveNode},
		{"POST /v1/sessions/{session}/nodes/{node}/restart", d.handleRestart},
		{"POST /v1/sessions/{session}/nodes/{node}/stop", d.handleStop},   // stop.go
		{"POST /v1/sessions/{session}/nodes/{node}/start", d.handleStart}, // stop.go
		{"POST /v1/sessions/{session}/nodes/{node}/interrupt", d.handleInterrupt},
		{"POST /v1/sessions/{session}/nodes/{node}/sync", d.handleSync},
		{"GET /v1/sessions/{session}/settings", d.handleSettings},
		{"PUT /v1/sessions/{session}/settings", d.handleSettings},
		{"GET /v1/sessions/{session}/nodes/{node}/tools", d.handleTools},
		{"POST /v1/sessions/{session}/nodes/{node}/call", d.handleCall},
		{"GET /v1/sessions/{session}/nodes/{node}/runs/{run}", d.handleRun}, // runs.go
		{"POST /v1/sessions/{session}/nodes/{node}/reset", d.handleReset},
		{"GET /v1/sessions/{session}/nodes/{node}/resources", d.handleResources},
		{"POST /v1/sessions/{session}/nodes/{node}/resources/read", d.handleReadResource},
		{"GET /v1/sessions/{session}/nodes/{node}/prompts", d.handlePrompts},
		{"POST /v1/sessions/{session}/nodes/{node}/prompts/get", d.handleGetPrompt},
	} {
		mux.HandleFunc(r.pattern, r.handler)
	}
	d.mcpRoutes(mux) // mcp_routes.go
	mux.HandleFunc("/", d.handleNotFound)
	return d.guard(mux)
}
