package daemon

import "net/http"

// routes is the one route table of the local API; it reads as its table
// of contents. Every route is under /v1/ and passes through guard.
func (d *Daemon) routes() http.Handler {
	mux := http.NewServeMux()
	for _, r := range []struct {
		pattern string
		handler http.Handler
	}{
		{"GET /v1/version", http.HandlerFunc(d.handleVersion)},
		{"GET /v1/kinds", http.HandlerFunc(d.handleKinds)},
		{"POST /v1/shutdown", http.HandlerFunc(d.handleShutdown)},

		{"GET /v1/sessions", http.HandlerFunc(d.handleSessions)},
		{"DELETE /v1/sessions/{session}", http.HandlerFunc(d.handleRemoveSession)},
		{"GET /v1/sessions/{session}/events", http.HandlerFunc(d.handleEvents)},
		{"GET /v1/sessions/{session}/tools", d.inSession(false, d.handleToolset)},
		{"GET /v1/sessions/{session}/tools/search", d.inSession(false, d.handleToolSearch)}, // search.go
		{"POST /v1/sessions/{session}/ui", d.inSession(false, d.handleUI)},                  // dashboard.go

		// inSession: the session must exist (or, with true, is made).
		{"GET /v1/sessions/{session}/nodes", d.inSession(false, d.handleNodes)},
		{"POST /v1/sessions/{session}/nodes", handler(d.handleAddNode)},
		{"GET /v1/sessions/{session}/nodes/{node}", d.inSession(false, d.handleNode)},
		{"PUT /v1/sessions/{session}/nodes/{node}", d.inSession(false, d.handleReplaceNode)},
		{"DELETE /v1/sessions/{session}/nodes/{node}", d.inSession(false, d.handleRemoveNode)},
		{"POST /v1/sessions/{session}/nodes/{node}/restart", d.inSession(false, d.handleRestart)},
		{"POST /v1/sessions/{session}/nodes/{node}/stop", d.inSession(false, d.handleStop)},   // stop.go
		{"POST /v1/sessions/{session}/nodes/{node}/start", d.inSession(false, d.handleStart)}, // stop.go
		{"POST /v1/sessions/{session}/nodes/{node}/interrupt", d.inSession(false, d.handleInterrupt)},
		{"POST /v1/sessions/{session}/nodes/{node}/sync", d.inSession(false, d.handleSync)},
		{"GET /v1/sessions/{session}/settings", d.inSession(false, d.handleSettings)},
		{"PUT /v1/sessions/{session}/settings", d.inSession(true, d.handleSettings)},
		{"GET /v1/sessions/{session}/nodes/{node}/tools", d.inSession(false, d.handleTools)},
		// overrides.go
		{"PUT /v1/sessions/{session}/nodes/{node}/tools/{tool}/override", d.inSession(false, d.handleOverride)},
		{"PATCH /v1/sessions/{session}/nodes/{node}/tools/{tool}/override", d.inSession(false, d.handleOverride)},
		{"DELETE /v1/sessions/{session}/nodes/{node}/tools/{tool}/override", d.inSession(false, d.handleOverride)},
		{"POST /v1/sessions/{session}/nodes/{node}/call", http.HandlerFunc(d.handleCall)},       // call.go
		{"GET /v1/sessions/{session}/nodes/{node}/runs/{run}", d.inSession(false, d.handleRun)}, // runs.go
		{"POST /v1/sessions/{session}/nodes/{node}/reset", http.HandlerFunc(d.handleReset)},
		{"POST /v1/sessions/{session}/script", d.inSession(false, d.handleScript)}, // script.go
		{"GET /v1/sessions/{session}/script", d.inSession(false, d.handleScriptTool)},
		{"GET /v1/sessions/{session}/nodes/{node}/resources", http.HandlerFunc(d.handleResources)},
		{"POST /v1/sessions/{session}/nodes/{node}/resources/read", http.HandlerFunc(d.handleReadResource)},
		{"GET /v1/sessions/{session}/nodes/{node}/prompts", http.HandlerFunc(d.handlePrompts)},
		{"POST /v1/sessions/{session}/nodes/{node}/prompts/get", http.HandlerFunc(d.handleGetPrompt)},
	} {
		mux.Handle(r.pattern, r.handler)
	}
	d.mcpRoutes(mux) // mcp_routes.go
	mux.HandleFunc("/", d.handleNotFound)
	return d.guard(mux)
}
