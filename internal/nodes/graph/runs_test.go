package graph

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/pkg/api"
)

// TestJournalKeepsWholeStepsAndSkipsTornLines: the journal gives back each
// step done, whole, after a daemon killed mid-write left a torn last line
// (and a line it could not read).
func TestJournalKeepsWholeStepsAndSkipsTornLines(t *testing.T) {
	s := newRunStore(t.TempDir(), "g")
	j := s.journal("g.1")
	big := strings.Repeat("x", 3*maxRecordText)
	if err := j.append(StepRecord{ID: "a", State: api.StepFinished, Result: &graphlang.StepResult{Text: big}}, true); err != nil {
		t.Fatal(err)
	}
	if err := j.append(StepRecord{ID: "b", State: api.StepSkipped, Error: "when was false"}, false); err != nil {
		t.Fatal(err)
	}
	j.close()
	f, _ := os.OpenFile(j.path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("garbage\n{\"id\":\"c\",\"state\":\"finished\",\"res")
	f.Close()
	got := s.journal("g.1").read()
	if len(got) != 2 || got["a"].Result.Text != big || got["b"].State != api.StepSkipped {
		t.Errorf("read back %d steps: %v", len(got), got)
	}
	if err := j.append(StepRecord{ID: "c", State: api.StepFinished}, true); err == nil {
		t.Error("a closed journal took a line")
	}
	// A resume appends after the torn line, on a line of its own.
	j = s.journal("g.1")
	if err := j.append(StepRecord{ID: "c", State: api.StepFinished, Result: &graphlang.StepResult{Text: "C"}}, true); err != nil {
		t.Fatal(err)
	}
	j.close()
	if got := s.journal("g.1").read(); len(got) != 3 || got["c"] == nil || got["c"].Result.Text != "C" {
		t.Errorf("after a torn line, the next line was lost: %v", got)
	}
}

// TestClaimOneAtATime: a run is claimed by one resume until it is
// released; a record left running by a daemon that is gone (no claim
// here) is resumable, with the steps its journal has.
func TestClaimOneAtATime(t *testing.T) {
	dir := t.TempDir()
	s := newRunStore(dir, "g")
	rec := &Record{ID: "g.1", Graph: "g", State: RunRunning, Started: time.Now(), Steps: []StepRecord{{ID: "a", State: api.StepStarted}, {ID: "b", State: "pending"}}}
	s.write(rec)
	if err := s.journal("g.1").append(StepRecord{ID: "a", State: api.StepFinished, Result: &graphlang.StepResult{Text: "A"}}, true); err != nil {
		t.Fatal(err)
	}
	got, prior, err := s.claim("g.1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "g.1" || !prior["a"].done() || prior["a"].Result.Text != "A" || prior["b"].done() {
		t.Errorf("claim gave %+v, prior a %+v b %+v", got, prior["a"], prior["b"])
	}
	// Another store of the same folder (a graph replaced by an edit).
	other := newRunStore(dir, "g")
	if _, _, err := other.claim("g.1"); err == nil || !strings.Contains(err.Error(), "run g.1 is being resumed by another caller; one caller at a time may run it") {
		t.Errorf("second claim: %v", err)
	}
	other.release("g.1")
	if _, _, err := other.claim("g.1"); err != nil {
		t.Errorf("claim after release: %v", err)
	}
	other.release("g.1")

	rec.State = RunFinished
	s.write(rec)
	if _, _, err := s.claim("g.1"); err == nil || !strings.Contains(err.Error(), "run g.1 finished; there is nothing to resume") {
		t.Errorf("claim of a finished run: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "runs", "g.1.json"))
	var back Record
	if err := json.Unmarshal(b, &back); err != nil || back.State != RunFinished {
		t.Errorf("record on disk: %v %s", err, b)
	}
}

// Issue 21, item 4: runs that overlap rewrote the files of runs pruned
// when a later one began, and a recursion kept 9,979 records. Now at most
// maxRunFiles stay after every write.
func TestOverlappingRunsArePruned(t *testing.T) {
	dir := t.TempDir()
	s := newRunStore(dir, "g")
	d := &graphlang.Def{Steps: []*graphlang.Step{{ID: "a"}}}
	var runs []*activeRun
	for range maxRunFiles + 30 {
		runs = append(runs, s.begin(nil, d, "", nil))
	}
	for i := len(runs) - 1; i >= 0; i-- { // the innermost ends first
		runs[i].step(StepRecord{ID: "a", State: "done"})
		runs[i].end("x", nil, false)
	}
	if n := len(s.files()); n > maxRunFiles {
		t.Errorf("%d run files kept after %d overlapping runs; want at most %d", n, len(runs), maxRunFiles)
	}
}
