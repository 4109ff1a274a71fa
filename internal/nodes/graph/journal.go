package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// journal is a run's list of steps done (finished or skipped), one JSON
// line each with the step's whole result, beside the run's record
// (runs/ID.steps.jsonl). A line is appended and synced to disk before any
// step that depends on it starts, so it is the authority on what a resumed
// run must not run again; the record (ID.json) is what people read, cut at
// maxRecordText and written at most every flushEvery.
//
// Appending one line and syncing the file costs about a tenth of an atomic
// rewrite (temporary file, two syncs, rename), and completions that arrive
// together share one sync.
type journal struct {
	path string

	// mu guards f, err and written; the writes happen under it, so lines
	// never interleave.
	mu      sync.Mutex
	f       *os.File
	err     error // a write that failed: later lines would follow a torn one
	written int64 // lines written

	// syncMu serialises syncs; synced is the lines known to be on disk.
	syncMu sync.Mutex
	synced int64
}

// journal is the journal of run id; nil for runs kept in memory.
func (s *runStore) journal(id string) *journal {
	if s.dir == "" {
		return nil
	}
	return &journal{path: filepath.Join(s.dir, id+".steps.jsonl")}
}

// append adds sr. With sync it returns once the line is on disk;
// without, the line is written now (a killed daemon keeps it) and synced
// with the next line that is, or by flush.
func (j *journal) append(sr StepRecord, sync bool) error {
	line, err := json.Marshal(sr)
	if err != nil {
		return fmt.Errorf("encoding step %s: %w", sr.ID, err)
	}
	line = append(line, '\n')

	j.mu.Lock()
	if j.err == nil && j.f == nil {
		j.f, j.err = j.open()
	}
	if j.err != nil {
		err := j.err
		j.mu.Unlock()
		return err
	}
	if _, err := j.f.Write(line); err != nil {
		j.err = fmt.Errorf("writing %s: %w", j.path, err)
		j.mu.Unlock()
		return j.err
	}
	j.written++
	mine := j.written
	j.mu.Unlock()
	if !sync {
		return nil
	}
	return j.syncTo(mine)
}

// flush syncs every line written.
func (j *journal) flush() error {
	j.mu.Lock()
	upto, err := j.written, j.err
	j.mu.Unlock()
	if err != nil || upto == 0 {
		return err
	}
	return j.syncTo(upto)
}

// syncTo returns once the first n lines are on disk. Syncs are group
// commits: whoever syncs covers every line written before it.
func (j *journal) syncTo(n int64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced >= n {
		return nil
	}
	j.mu.Lock()
	upto, f := j.written, j.f
	j.mu.Unlock()
	if f == nil {
		return fmt.Errorf("syncing %s: the run ended", j.path)
	}
	if j.synced == 0 {
		// The file's name is durable once its folder is synced. Some
		// file systems refuse to sync folders; the file's own syncs
		// still hold its lines.
		if d, err := os.Open(filepath.Dir(j.path)); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	if err := datasync(f); err != nil {
		return fmt.Errorf("syncing %s: %w", j.path, err)
	}
	j.synced = upto
	return nil
}

// open opens the journal for appending.
func (j *journal) open() (*os.File, error) {
	dir := filepath.Dir(j.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", j.path, err)
	}
	// A daemon killed mid-line left a torn line: end it, or the first line
	// of this resume would join it and be lost with it.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, fmt.Errorf("writing %s: %w", j.path, err)
			}
		}
	}
	return f, nil
}

func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	if j.err == nil {
		j.err = errors.New("the run ended")
	}
}

// read returns the steps the journal holds, by id. A line the daemon was
// killed while writing is incomplete and left out: its step was not done
// as far as anything else knew.
func (j *journal) read() map[string]*StepRecord {
	done := map[string]*StepRecord{}
	if j == nil {
		return done
	}
	b, err := os.ReadFile(j.path)
	if err != nil {
		return done
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // torn last line
		}
		var sr StepRecord
		if json.Unmarshal(b[:i], &sr) == nil && sr.ID != "" && sr.done() {
			done[sr.ID] = &sr
		}
		b = b[i+1:]
	}
	return done
}
