package paths

// checkPrivate relies on the per-user %LOCALAPPDATA% ACLs on Windows.
func checkPrivate(dir string) error { return nil }
