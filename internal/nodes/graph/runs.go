package graph

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/atomicfile"
)

// Bounds on what run records keep.
const (
	maxRunFiles   = 50       // run files kept per graph; the oldest go first
	maxRecordText = 64 << 10 // bytes of one step's text or arguments
	maxSummaries  = 20       // runs listed in the node's info
	flushEvery    = 100 * time.Millisecond
	previewLen    = 200 // bytes of args/text in a summary
	maxStepsShown = 200 // steps per run in a summary
)

// Run states.
const (
	RunRunning     = "running"
	RunFinished    = "finished"
	RunFailed      = "failed"
	RunCancelled   = "cancelled"
	RunInterrupted = "interrupted" // the daemon stopped mid-run: resumable
)

// Record is one run of a graph, as saved under the node's folder.
type Record struct {
	ID      string         `json:"id"`
	Graph   string         `json:"graph"`
	Inputs  map[string]any `json:"inputs,omitempty"`
	Started time.Time      `json:"started"`
	Millis  float64        `json:"ms"`
	State   string         `json:"state"`
	Error   string         `json:"error,omitempty"`
	Output  any            `json:"output,omitempty"`
	Resumed int            `json:"resumed,omitempty"`
	Steps   []StepRecord   `json:"steps"`
}

// runStore keeps a graph's run records: files under dir/runs, newest
// summaries in memory. With no dir, runs are kept in memory only.
type runStore struct {
	dir   string
	graph string

	// mu guards recent and the records of active runs.
	mu     sync.Mutex
	recent []*Record // newest last
}

func newRunStore(nodeDir, graph string) *runStore {
	s := &runStore{graph: graph}
	if nodeDir != "" {
		s.dir = filepath.Join(nodeDir, "runs")
	}
	return s
}

// load reads the newest records; a run the daemon did not see to its end
// becomes interrupted.
func (s *runStore) load(log *zap.Logger) {
	if s.dir == "" {
		return
	}
	names := s.files()
	if len(names) > maxSummaries {
		names = names[len(names)-maxSummaries:]
	}
	var recs []*Record
	for _, name := range names {
		rec, err := s.read(strings.TrimSuffix(name, ".json"))
		if err != nil {
			log.Warn("reading a graph run", zap.String("file", name), zap.Error(err))
			continue
		}
		if rec.State == RunRunning {
			// Its time is up to the last thing it recorded, not 0.
			last := rec.Started
			for _, st := range rec.Steps {
				if end := st.Started.Add(time.Duration(st.Millis * float64(time.Millisecond))); !st.Started.IsZero() && end.After(last) {
					last = end
				}
			}
			rec.Millis = float64(last.Sub(rec.Started).Microseconds()) / 1000
			rec.State = RunInterrupted
			rec.Error = "the daemon stopped during the run; finish it with `nerve graph resume " + rec.ID + "`"
			s.write(rec)
		}
		recs = append(recs, rec)
	}
	s.mu.Lock()
	s.recent = recs
	s.mu.Unlock()
}

// files returns the run files, oldest first (ids sort by time).
func (s *runStore) files() []string {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

func (s *runStore) read(id string) (*Record, error) {
	if s.dir == "" {
		// No folder (an embedded session): the runs kept in memory.
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range s.recent {
			if r.ID == id {
				c := *r
				c.Steps = slices.Clone(r.Steps)
				return &c, nil
			}
		}
		return nil, fmt.Errorf("no run %q of graph %s (list them with `nerve graph runs %s`)", id, s.graph, s.graph)
	}
	if strings.ContainsAny(id, "/\\") || strings.HasPrefix(id, ".") {
		return nil, fmt.Errorf("no run %q of graph %s", id, s.graph)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no run %q of graph %s (list them with `nerve graph runs %s`)", id, s.graph, s.graph)
	}
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return &rec, nil
}

// get returns a run to resume: one that did not finish.
func (s *runStore) get(id string) (*Record, error) {
	rec, err := s.read(id)
	if err != nil {
		return nil, err
	}
	if rec.State == RunFinished {
		return nil, fmt.Errorf("run %s finished; there is nothing to resume", id)
	}
	if rec.State == RunRunning {
		return nil, fmt.Errorf("run %s is still running", id)
	}
	return rec, nil
}

func (s *runStore) write(rec *Record) {
	if s.dir == "" {
		return
	}
	b, err := marshalPlain(rec)
	if err != nil {
		return
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return
	}
	_ = atomicfile.Write(filepath.Join(s.dir, rec.ID+".json"), b, 0o600)
}

// prune removes the oldest run files beyond maxRunFiles.
func (s *runStore) prune() {
	names := s.files()
	for len(names) > maxRunFiles {
		_ = os.Remove(filepath.Join(s.dir, names[0]))
		names = names[1:]
	}
}

// activeRun is a run being recorded.
type activeRun struct {
	s  *runStore
	id string

	// s.mu guards the fields below: rec is also in s.recent.
	rec   *Record
	index map[string]int
	timer *time.Timer // a pending flush
	ended bool
}

func newRunID(graph string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return graph + "." + time.Now().UTC().Format("20060102-150405.000") + "-" + hex.EncodeToString(b[:])
}

// begin starts recording a run (or continues the record of one resumed).
func (s *runStore) begin(inputs map[string]any, d *Def, resumeID string) *activeRun {
	rec := &Record{ID: resumeID, Graph: s.graph, Inputs: inputs, Started: time.Now(), State: RunRunning}
	if resumeID != "" {
		if old, err := s.read(resumeID); err == nil {
			rec.Resumed = old.Resumed + 1
			rec.Started = old.Started
		}
	} else {
		rec.ID = newRunID(s.graph)
	}
	a := &activeRun{s: s, id: rec.ID, rec: rec, index: map[string]int{}}
	for i, st := range d.Steps {
		rec.Steps = append(rec.Steps, StepRecord{ID: st.ID, State: "pending"})
		a.index[st.ID] = i
	}
	s.write(rec)
	s.prune()
	s.remember(rec)
	return a
}

func (s *runStore) remember(rec *Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent = slices.DeleteFunc(s.recent, func(r *Record) bool { return r.ID == rec.ID })
	s.recent = append(s.recent, rec)
	if len(s.recent) > maxSummaries {
		s.recent = slices.Delete(s.recent, 0, len(s.recent)-maxSummaries)
	}
}

// step records a step's new state; the file is rewritten at most every
// flushEvery while the run goes on.
func (a *activeRun) step(sr StepRecord) {
	sr.Args = json.RawMessage(clip(string(sr.Args), maxRecordText, true))
	if sr.Result != nil {
		r := *sr.Result
		r.Text = clip(r.Text, maxRecordText, false)
		if b, _ := json.Marshal(r.Structured); len(b) > maxRecordText {
			r.Structured = nil
		}
		sr.Result = &r
	}
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	if a.ended {
		return
	}
	if i, ok := a.index[sr.ID]; ok {
		a.rec.Steps[i] = sr
	}
	if a.timer == nil && a.s.dir != "" {
		a.timer = time.AfterFunc(flushEvery, a.flush)
	}
}

func (a *activeRun) flush() {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	a.timer = nil
	if !a.ended {
		a.s.write(a.rec)
	}
}

// end records the run's outcome.
func (a *activeRun) end(out any, err error, cancelled bool) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.ended = true
	a.rec.Millis = float64(time.Since(a.rec.Started).Microseconds()) / 1000
	switch {
	case cancelled:
		a.rec.State, a.rec.Error = RunCancelled, "cancelled by the caller"
	case err != nil:
		a.rec.State, a.rec.Error = RunFailed, err.Error()
	default:
		a.rec.State, a.rec.Output = RunFinished, out
	}
	a.s.write(a.rec)
}

// count is the number of runs on record (files kept, or runs in memory).
func (s *runStore) count() int {
	if s.dir == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.recent)
	}
	return len(s.files())
}

// summaries are the recent runs for the node's info, newest first, with
// previews of each step's arguments and text.
func (s *runStore) summaries() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, 0, len(s.recent))
	for i := len(s.recent) - 1; i >= 0; i-- {
		r := s.recent[i]
		steps := make([]map[string]any, 0, min(len(r.Steps), maxStepsShown))
		for j, st := range r.Steps {
			if j >= maxStepsShown {
				break
			}
			m := map[string]any{"id": st.ID, "state": st.State, "ms": st.Millis}
			if st.Error != "" {
				m["error"] = st.Error
			}
			if st.Attempts > 1 {
				m["attempts"] = st.Attempts
			}
			if len(st.Args) > 0 {
				m["args"] = clip(string(st.Args), previewLen, false)
			}
			if st.Result != nil {
				m["text"] = clip(st.Result.Text, previewLen, false)
			}
			steps = append(steps, m)
		}
		m := map[string]any{"id": r.ID, "state": r.State, "started": r.Started, "ms": r.Millis, "steps": steps}
		if r.Error != "" {
			m["error"] = r.Error
		}
		if len(r.Inputs) > 0 {
			m["inputs"] = r.Inputs
		}
		if r.Output != nil {
			m["output"] = clip(asText(r.Output), previewLen, false)
		}
		out = append(out, m)
	}
	return out
}

// clip shortens s to n bytes; asJSON keeps it valid JSON by quoting it
// when cut.
func clip(s string, n int, asJSON bool) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	cut += "… (cut)"
	if asJSON {
		b, _ := json.Marshal(cut)
		return string(b)
	}
	return cut
}
