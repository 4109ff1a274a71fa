//go:build unix

package claude

// platformSupported reports whether this system can run a claude node.
func platformSupported() error { return nil }
