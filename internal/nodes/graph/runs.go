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
	"github.com/nerve-dev/nerve/internal/graphlang"
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
		if rec.State == RunRunning && !s.claimed(rec.ID) {
			// The steps the run finished are in its journal even when the
			// record was not written since.
			s.merge(rec, s.journal(rec.ID).read())
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

// claim takes the run id to resume: only one caller at a time runs a
// run. It returns the run's record, with each step that is done as the
// journal has it (whole results), and holds the claim until the resumed
// run ends (activeRun.end) or release.
func (s *runStore) claim(id string) (*Record, map[string]*StepRecord, error) {
	claims.Lock()
	defer claims.Unlock()
	if how, ok := claims.m[s.key(id)]; ok {
		return nil, nil, fmt.Errorf("run %s is %s; one caller at a time may run it: wait for that to end (`nerve graph show %s` shows its steps), then resume it if it did not finish", id, how, id)
	}
	rec, err := s.read(id)
	if err != nil {
		return nil, nil, err
	}
	if rec.State == RunFinished {
		return nil, nil, fmt.Errorf("run %s finished; there is nothing to resume", id)
	}
	// A record that says running but is claimed by no one here is one the
	// daemon that ran it did not see to its end (one daemon owns a state
	// folder, and load marks only the newest records interrupted): the
	// journal has what it finished.
	prior := map[string]*StepRecord{}
	for i := range rec.Steps {
		prior[rec.Steps[i].ID] = &rec.Steps[i]
	}
	for _, sr := range s.journal(id).read() {
		prior[sr.ID] = sr
	}
	if claims.m == nil {
		claims.m = map[string]string{}
	}
	claims.m[s.key(id)] = "being resumed by another caller"
	return rec, prior, nil
}

// release gives up a claim that begin did not take over.
func (s *runStore) release(id string) {
	claims.Lock()
	delete(claims.m, s.key(id))
	claims.Unlock()
}

// claimed reports whether a run is being run in this process.
func (s *runStore) claimed(id string) bool {
	claims.Lock()
	defer claims.Unlock()
	_, ok := claims.m[s.key(id)]
	return ok
}

// claims are the runs being run in this process, by key (runStore.key),
// with how ("still running", "being resumed by another caller"). They are shared by every graph
// node so that a node replaced by `nerve graph edit`, whose runs folder is
// its predecessor's, sees the runs its predecessor still runs.
var claims struct {
	sync.Mutex
	m map[string]string
}

// key names a run among the claims: its record's path, or the store and
// id for runs kept in memory.
func (s *runStore) key(id string) string {
	if s.dir == "" {
		return fmt.Sprintf("%p/%s", s, id)
	}
	return filepath.Join(s.dir, id)
}

// merge puts the steps a journal holds into rec, cut as records keep them.
func (s *runStore) merge(rec *Record, done map[string]*StepRecord) {
	for i := range rec.Steps {
		if sr, ok := done[rec.Steps[i].ID]; ok {
			rec.Steps[i] = clipStep(*sr)
		}
	}
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
	// After every write, not only when a run begins: runs that overlap
	// (a graph called 9,980 deep through nerve's own endpoint) rewrote
	// the files of runs pruned meanwhile, and all of them stayed (issue 21).
	s.prune()
}

// prune removes the oldest run files beyond maxRunFiles.
func (s *runStore) prune() {
	names := s.files()
	for len(names) > maxRunFiles {
		id := strings.TrimSuffix(names[0], ".json")
		if !s.claimed(id) {
			_ = os.Remove(filepath.Join(s.dir, names[0]))
			_ = os.Remove(filepath.Join(s.dir, id+".steps.jsonl"))
		}
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

	// j holds the steps done, whole; journaled are those it has.
	j         *journal
	journaled map[string]bool
}

func newRunID(graph string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return graph + "." + time.Now().UTC().Format("20060102-150405.000") + "-" + hex.EncodeToString(b[:])
}

// begin starts recording a run, or continues the record of one resumed
// (claimed by claim, with the steps done in prior). The run is claimed
// until end, and its record on disk says running before any step starts.
func (s *runStore) begin(inputs map[string]any, d *graphlang.Def, resumeID string, prior map[string]*StepRecord) *activeRun {
	rec := &Record{ID: resumeID, Graph: s.graph, Inputs: inputs, Started: time.Now(), State: RunRunning}
	if resumeID != "" {
		if old, err := s.read(resumeID); err == nil {
			rec.Resumed = old.Resumed + 1
			rec.Started = old.Started
		}
	} else {
		rec.ID = newRunID(s.graph)
		claims.Lock()
		if claims.m == nil {
			claims.m = map[string]string{}
		}
		claims.m[s.key(rec.ID)] = "still running"
		claims.Unlock()
	}
	a := &activeRun{s: s, id: rec.ID, rec: rec, index: map[string]int{}, journaled: map[string]bool{}}
	a.j = s.journal(rec.ID)
	for id := range a.j.read() {
		a.journaled[id] = true
	}
	for i, st := range d.Steps {
		sr := StepRecord{ID: st.ID, State: "pending"}
		if p := prior[st.ID]; p.done() {
			// Shown done from the start: a crash before the step is
			// reached again must not lose that it was.
			sr = clipStep(*p)
		}
		rec.Steps = append(rec.Steps, sr)
		a.index[st.ID] = i
	}
	s.write(rec)
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
// flushEvery while the run goes on. A step done is in the journal first
// (commit): the record is only what people read.
func (a *activeRun) step(sr StepRecord) {
	sr = clipStep(sr)
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

// commit puts a step done (finished or skipped) in the journal, with its
// whole result: a resumed run never runs it again. With sync (a step
// depends on it) it returns once the line is on disk; otherwise the line is
// synced with a later one, at the latest when the run ends. Runs kept in
// memory have nothing to write.
func (a *activeRun) commit(sr StepRecord, sync bool) error {
	if a.j == nil {
		return nil
	}
	a.s.mu.Lock()
	had := a.journaled[sr.ID]
	a.s.mu.Unlock()
	if had {
		return nil // a step of the resumed run, done before
	}
	if err := a.j.append(sr, sync); err != nil {
		return fmt.Errorf("recording that the step is done: %w (a resume would run it again, so the run stops here; make %s writable, with room, then `nerve graph resume %s`)", err, a.s.dir, a.id)
	}
	a.s.mu.Lock()
	a.journaled[sr.ID] = true
	a.s.mu.Unlock()
	return nil
}

// clipStep is a step's record as the run record keeps it: text and
// arguments cut at maxRecordText, structured content over it left out.
// Cut says so: a resume never reuses a cut result (the journal has it
// whole).
func clipStep(sr StepRecord) StepRecord {
	if len(sr.Args) > maxRecordText {
		sr.Args = json.RawMessage(clip(string(sr.Args), maxRecordText, true))
		sr.Cut = true
	}
	if sr.Result != nil {
		r := *sr.Result
		if len(r.Text) > maxRecordText {
			r.Text = clip(r.Text, maxRecordText, false)
			sr.Cut = true
		}
		if b, _ := json.Marshal(r.Structured); len(b) > maxRecordText {
			r.Structured = nil
			sr.Cut = true
		}
		sr.Result = &r
	}
	return sr
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
	// The claim goes last, after the final record is written (and after
	// s.mu, which claim takes inside the claims' lock).
	defer func() {
		claims.Lock()
		delete(claims.m, a.s.key(a.id))
		claims.Unlock()
		// Pruned again now that this run may go: the writes while it
		// ran kept it (a running run is never removed).
		if a.s.dir != "" {
			a.s.prune()
		}
	}()
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
	if a.j != nil && a.rec.State != RunFinished {
		// A resume reads the steps done from the journal: on disk before
		// the record says the run ended. (A failure here leaves those
		// steps to run again, as if the daemon had been killed.)
		_ = a.j.flush()
	}
	a.s.write(a.rec)
	if a.j != nil {
		a.j.close()
		if a.rec.State == RunFinished {
			// Nothing is left to resume.
			_ = os.Remove(a.j.path)
		}
	}
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
		// The steps are shown up to maxStepsShown; their count by state
		// is of all of them, so a 1,000-step run is not "200 finished".
		states := map[string]int{}
		for _, st := range r.Steps {
			states[st.State]++
		}
		m := map[string]any{"id": r.ID, "state": r.State, "started": r.Started, "ms": r.Millis, "steps": steps,
			"step_count": len(r.Steps), "step_states": states}
		if r.Error != "" {
			m["error"] = r.Error
		}
		if len(r.Inputs) > 0 {
			m["inputs"] = r.Inputs
		}
		if r.Output != nil {
			m["output"] = clip(graphlang.Text(r.Output), previewLen, false)
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

// record is run id's record as JSON, whole as kept: an active or recent
// run from memory (its latest state, not the file's of up to flushEvery
// ago), any other from its file. Each step's arguments and text are whole
// up to maxRecordText (64 KiB); beyond, the record keeps them cut and
// says so ("cut": true).
func (s *runStore) record(id string) (json.RawMessage, error) {
	s.mu.Lock()
	for _, r := range s.recent {
		if r.ID == id {
			b, err := marshalPlain(r)
			s.mu.Unlock()
			return b, err
		}
	}
	s.mu.Unlock()
	rec, err := s.read(id)
	if err != nil {
		return nil, err
	}
	return marshalPlain(rec)
}
