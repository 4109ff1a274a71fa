package daemon

// syncDir is a no-op: Windows cannot fsync a folder, and MoveFileEx is
// already durable enough for nerve's state files.
func syncDir(dir string) {}
