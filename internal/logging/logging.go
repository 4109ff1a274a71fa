// Package logging builds nerve's zap logger: JSON lines appended to a file
// under the state folder, never the terminal (a log line in the middle of
// the REPL would corrupt what the user reads). The daemon and the command
// line import it.
package logging

import (
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// MaxSize is the size past which Open moves the log aside (to path.1)
// before appending: a simple cap that needs no background work.
const MaxSize = 20 << 20

// Open returns a logger appending JSON lines to path (created 0600, its
// folder 0700) and a function that flushes and closes it. level is a zap
// level name ("debug", "info", …); empty means info.
func Open(path, level string) (*zap.Logger, func() error, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("creating the log folder: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > MaxSize {
		_ = os.Rename(path, path+".1") // losing the rotation only keeps the file growing
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the log file: %w", err)
	}
	lvl := zapcore.InfoLevel
	if level != "" {
		if err := lvl.Set(level); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("log level %q: %w (use debug, info, warn or error)", level, err)
		}
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(f), lvl)
	log := zap.New(core, zap.ErrorOutput(zapcore.Lock(f)))
	closeFn := func() error {
		_ = log.Sync()
		return f.Close()
	}
	return log, closeFn, nil
}
