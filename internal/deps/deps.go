// Package deps pins the project's required dependencies in go.mod until the
// packages that use them exist. It is imported by nothing.
package deps

import (
	_ "github.com/chzyer/readline"
	_ "github.com/google/jsonschema-go/jsonschema"
	_ "github.com/google/uuid"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "go.uber.org/zap"
)
