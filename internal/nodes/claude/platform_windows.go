//go:build windows

package claude

import "errors"

// errWindows explains why a claude node does not start on Windows: stopping
// Claude and the MCP servers it starts relies on Unix process groups.
var errWindows = errors.New("the claude node is not supported on windows (it needs Unix process groups to stop Claude and its MCP servers): run nerve under WSL")

func platformSupported() error { return errWindows }
