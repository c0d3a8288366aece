package ledger_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
)

func report(id, taskRunID string, attempt int, kind ledger.ReportKind) ledger.Report {
	body, _ := json.Marshal(map[string]any{"output": map[string]string{"text": "result of " + id}})
	return ledger.Report{ID: id, Kind: kind, TaskRunID: taskRunID, Attempt: attempt, Body: body}
}

func ids(reports []ledger.Report) []string {
	var out []string
	for _, r := range reports {
		out = append(out, r.ID)
	}
	return out
}

func pendingIDs(t *testing.T, l *ledger.Ledger) []string {
	t.Helper()
	pending, err := l.Pending()
	if err != nil {
		t.Fatal(err)
	}
	return ids(pending)
}

func TestOutbox_PendingDeliveredAbandonedSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir)
	for _, r := range []ledger.Report{
		report("r1", "tr-1", 1, ledger.ReportComplete),
		report("r2", "tr-2", 1, ledger.ReportFail),
		report("r3", "tr-3", 2, ledger.ReportComplete),
	} {
		if err := l.AppendPending(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.MarkDelivered("r2"); err != nil {
		t.Fatal(err)
	}
	if got := pendingIDs(t, l); !slices.Equal(got, []string{"r1", "r3"}) {
		t.Fatalf("pending = %v, want [r1 r3]", got)
	}

	// Restart: a new process opens the same ledger.
	l.Close()
	l = open(t, dir)
	pending, err := l.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(pending), []string{"r1", "r3"}) {
		t.Fatalf("after restart pending = %v", ids(pending))
	}
	want := report("r1", "tr-1", 1, ledger.ReportComplete)
	if got := pending[0]; got.Kind != want.Kind || got.TaskRunID != want.TaskRunID || got.Attempt != 1 || string(got.Body) != string(want.Body) {
		t.Fatalf("pending report = %+v, want %+v", got, want)
	}

	if err := l.MarkAbandoned("r1", "platform answered 409: run already ended"); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Backlog(); err != nil || n != 1 {
		t.Fatalf("Backlog = %d, %v; want 1", n, err)
	}
	entries, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	last := entries[len(entries)-1]
	if last.Event != ledger.EventReportAbandoned || last.Report.ID != "r1" || !strings.Contains(last.Message, "409") || last.Report.Body != nil {
		t.Fatalf("abandon entry = %+v", last)
	}
}

func TestOutbox_OneResultPerAttempt(t *testing.T) {
	l := open(t, t.TempDir())
	if err := l.AppendPending(report("first", "tr-1", 1, ledger.ReportComplete)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []ledger.Report{
		report("second", "tr-1", 1, ledger.ReportFail),
		report("first", "tr-other", 1, ledger.ReportFail),
	} {
		if err := l.AppendPending(r); !errors.Is(err, ledger.ErrAlreadyReported) {
			t.Errorf("AppendPending(%s) error = %v, want ErrAlreadyReported", r.ID, err)
		}
	}
	// Even once the first is delivered, the attempt stays reported.
	if err := l.MarkDelivered("first"); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendPending(report("third", "tr-1", 1, ledger.ReportFail)); !errors.Is(err, ledger.ErrAlreadyReported) {
		t.Errorf("AppendPending after delivery: error = %v, want ErrAlreadyReported", err)
	}
	// A new attempt of the same run is a new result.
	if err := l.AppendPending(report("retry", "tr-1", 2, ledger.ReportComplete)); err != nil {
		t.Fatal(err)
	}
	if got := pendingIDs(t, l); !slices.Equal(got, []string{"retry"}) {
		t.Fatalf("pending = %v, want [retry]", got)
	}
}

func TestPending_OnlyFirstReportOfAnAttemptCounts(t *testing.T) {
	// Two pending lines for one attempt can only come from two writers racing
	// or an older version; the replay still keeps one result per attempt.
	l := open(t, t.TempDir())
	lines := []string{
		`{"ts":"2025-06-01T10:00:00Z","event":"report_pending","agent_id":"agent-1","runtime_id":"rt-1","task_run_id":"tr-1","attempt":1,"report":{"report_id":"a","kind":"complete","task_run_id":"tr-1","attempt":1,"body":{"output":{"text":"one"}}}}`,
		`{"ts":"2025-06-01T10:00:01Z","event":"report_pending","agent_id":"agent-1","runtime_id":"rt-1","task_run_id":"tr-1","attempt":1,"report":{"report_id":"b","kind":"fail","task_run_id":"tr-1","attempt":1,"body":{"output":{"error":"two"}}}}`,
		`{"ts":"2025-06-01T10:00:02Z","event":"report_delivered","agent_id":"agent-1","runtime_id":"rt-1","report":{"report_id":"zzz"}}`,
		`{"ts":"2025-06-01T10:00:03Z","event":"report_pending","agent_id":"agent-1","runtime_id":"rt-1","task_run_id":"tr-2","attempt":1,"report":{"report_id":"c","kind":"complete","task_run_id":"tr-2","attempt":1,"body":{}}}`,
	}
	if err := writeLines(l.Path(), lines); err != nil {
		t.Fatal(err)
	}
	if got := pendingIDs(t, l); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("pending = %v, want [a c]", got)
	}
	if err := l.MarkDelivered("b"); !errors.Is(err, ledger.ErrNotPending) {
		t.Fatalf("MarkDelivered of the shadowed report: error = %v, want ErrNotPending", err)
	}
	if err := l.MarkDelivered("a"); err != nil {
		t.Fatal(err)
	}
	if got := pendingIDs(t, l); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("pending = %v, want [c]: the shadowed report must not surface", got)
	}
}

func TestOutbox_MarkingUnknownOrSettledReportFails(t *testing.T) {
	l := open(t, t.TempDir())
	if err := l.MarkDelivered("nope"); !errors.Is(err, ledger.ErrNotPending) {
		t.Fatalf("error = %v, want ErrNotPending", err)
	}
	if err := l.AppendPending(report("r", "tr", 1, ledger.ReportComplete)); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkDelivered("r"); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkAbandoned("r", "late"); !errors.Is(err, ledger.ErrNotPending) {
		t.Fatalf("error = %v, want ErrNotPending", err)
	}
}

func TestAppendPending_ValidatesReport(t *testing.T) {
	l := open(t, t.TempDir())
	valid := report("r", "tr", 1, ledger.ReportComplete)
	broken := map[string]func(*ledger.Report){
		"no id":        func(r *ledger.Report) { r.ID = "" },
		"unknown kind": func(r *ledger.Report) { r.Kind = "progress" },
		"no task run":  func(r *ledger.Report) { r.TaskRunID = "" },
		"no body":      func(r *ledger.Report) { r.Body = nil },
		"invalid body": func(r *ledger.Report) { r.Body = json.RawMessage(`{"output":`) },
	}
	for name, breakIt := range broken {
		r := valid
		breakIt(&r)
		if err := l.AppendPending(r); !errors.Is(err, ledger.ErrInvalidEntry) {
			t.Errorf("%s: error = %v, want ErrInvalidEntry", name, err)
		}
	}
	if n, _ := l.Backlog(); n != 0 {
		t.Fatalf("invalid reports were queued: backlog %d", n)
	}
}

func TestNewReportID_IsUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := ledger.NewReportID()
		if seen[id] || !strings.HasPrefix(id, "rep_") {
			t.Fatalf("report id %q repeated or malformed", id)
		}
		seen[id] = true
	}
}

func writeLines(path string, lines []string) error {
	return writeFile(path, strings.Join(lines, "\n")+"\n")
}
