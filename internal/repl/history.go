package repl

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/nerve-dev/nerve/internal/atomicfile"
)

// compactHistory rewrites the history file with each line kept once (its
// latest use) and at most limit lines, so the file stays small and Ctrl-R
// finds no duplicates. The rewrite is atomic.
func compactHistory(path string, limit int) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	seen := make(map[string]bool, len(lines))
	var kept []string
	for i := len(lines) - 1; i >= 0 && len(kept) < limit; i-- {
		l := lines[i]
		if strings.TrimSpace(l) == "" || seen[l] {
			continue
		}
		seen[l] = true
		kept = append(kept, l)
	}
	if len(kept) == len(lines) {
		return nil
	}
	var b bytes.Buffer
	for i := len(kept) - 1; i >= 0; i-- {
		b.WriteString(kept[i])
		b.WriteByte('\n')
	}
	return atomicfile.Write(path, b.Bytes(), 0o600)
}

// lastLine returns the last line of a file, or "".
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	// History lines are short; reading the tail is enough.
	const tail = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		if _, err := f.Seek(st.Size()-tail, 0); err != nil {
			return ""
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), tail+1)
	last := ""
	for sc.Scan() {
		last = sc.Text()
	}
	return last
}
