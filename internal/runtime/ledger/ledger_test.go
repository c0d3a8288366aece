package ledger_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
)

const (
	agentID   = "agent-1"
	runtimeID = "rt-1"
)

func open(t *testing.T, dir string, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(dir, agentID, runtimeID, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func events(entries []ledger.Entry) []ledger.Event {
	var out []ledger.Event
	for _, e := range entries {
		out = append(out, e.Event)
	}
	return out
}

func TestDefaultDir(t *testing.T) {
	if got, want := ledger.DefaultDir("/home/u"), filepath.Join("/home/u", ".a2a", "logs"); got != want {
		t.Fatalf("DefaultDir = %q, want %q", got, want)
	}
}

func TestAppend_TaskChainReadsBackInOrder(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))
	l := open(t, dir, ledger.WithClock(func() time.Time { return clock }))
	chain := []ledger.Entry{
		{Event: ledger.EventRuntimeStarted},
		{Event: ledger.EventTaskPulled, TaskRunID: "tr-1", Attempt: 1},
		{Event: ledger.EventTaskStarted, TaskRunID: "tr-1", Attempt: 1},
		{Event: ledger.EventTaskCompleted, TaskRunID: "tr-1", Attempt: 1, Status: "completed"},
	}
	for _, e := range chain {
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if want := filepath.Join(dir, agentID, "execution-ledger.jsonl"); l.Path() != want {
		t.Fatalf("Path = %q, want %q", l.Path(), want)
	}
	got, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.Event{ledger.EventRuntimeStarted, ledger.EventTaskPulled, ledger.EventTaskStarted, ledger.EventTaskCompleted}
	if !slices.Equal(events(got), want) {
		t.Fatalf("events = %v, want %v", events(got), want)
	}
	last := got[3]
	if last.AgentID != agentID || last.RuntimeID != runtimeID || last.TaskRunID != "tr-1" || last.Attempt != 1 || last.Status != "completed" {
		t.Fatalf("last entry = %+v", last)
	}

	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	firstLine, _, _ := bytes.Cut(data, []byte("\n"))
	if want := `{"ts":"2025-06-01T10:00:00.123456789Z","event":"runtime_started","agent_id":"agent-1","runtime_id":"rt-1"}`; string(firstLine) != want {
		t.Fatalf("first line:\n got %s\nwant %s", firstLine, want)
	}
}

func TestAppend_RefusesOutboxEventsAndEmptyEvent(t *testing.T) {
	l := open(t, t.TempDir())
	for _, ev := range []ledger.Event{"", ledger.EventReportPending, ledger.EventReportDelivered, ledger.EventReportAbandoned} {
		if err := l.Append(ledger.Entry{Event: ev}); !errors.Is(err, ledger.ErrInvalidEntry) {
			t.Errorf("Append(%q) error = %v, want ErrInvalidEntry", ev, err)
		}
	}
}

func TestNew_RejectsAgentIDThatIsNotOnePathElement(t *testing.T) {
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a..b", "a\x00b"} {
		if _, err := ledger.New(t.TempDir(), id, runtimeID); !errors.Is(err, ledger.ErrInvalidAgentID) {
			t.Errorf("New(%q) error = %v, want ErrInvalidAgentID", id, err)
		}
	}
}

func TestNew_CreatesPrivateFileAndDir(t *testing.T) {
	l := open(t, t.TempDir())
	info, err := os.Stat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %04o, want 0600", info.Mode().Perm())
	}
	dirInfo, err := os.Stat(filepath.Dir(l.Path()))
	if err != nil {
		t.Fatal(err)
	}
	if dirInfo.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %04o, want 0700", dirInfo.Mode().Perm())
	}
}

func TestEntries_TornLastLineIsIgnoredAndNextAppendStartsFresh(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir)
	if err := l.Append(ledger.Entry{Event: ledger.EventRuntimeStarted}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"ts":"2025-06-01T10:00:00Z","event":"task_sta`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	got, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(events(got), []ledger.Event{ledger.EventRuntimeStarted}) {
		t.Fatalf("with a torn last line: events = %v", events(got))
	}

	// A restarted runtime appends after the fragment without losing the line.
	l.Close()
	reopened := open(t, dir)
	if err := reopened.Append(ledger.Entry{Event: ledger.EventRuntimeStarted, Message: "again"}); err != nil {
		t.Fatal(err)
	}
	got, err = reopened.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Message != "again" {
		t.Fatalf("after reopening: %+v", got)
	}
}

func TestEntries_ToleratesUnknownFields(t *testing.T) {
	l := open(t, t.TempDir())
	line := `{"ts":"2025-06-01T10:00:00Z","event":"task_started","agent_id":"agent-1","runtime_id":"rt-1","task_run_id":"tr-9","from_the_future":{"a":[1]}}` + "\n"
	if err := os.WriteFile(l.Path(), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].TaskRunID != "tr-9" {
		t.Fatalf("entries = %+v", got)
	}
}

func TestAppend_ConcurrentGoroutinesWriteWholeLines(t *testing.T) {
	l := open(t, t.TempDir())
	const goroutines, perGoroutine = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				errs <- l.Append(ledger.Entry{
					Event:     ledger.EventTaskStarted,
					TaskRunID: fmt.Sprintf("tr-%d-%d", g, i),
					Message:   strings.Repeat("x", 512),
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != goroutines*perGoroutine {
		t.Fatalf("%d lines, want %d", len(lines), goroutines*perGoroutine)
	}
	seen := map[string]bool{}
	for _, line := range lines {
		var e ledger.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line is not whole JSON: %v: %.80s", err, line)
		}
		seen[e.TaskRunID] = true
	}
	if len(seen) != goroutines*perGoroutine {
		t.Fatalf("%d distinct entries, want %d", len(seen), goroutines*perGoroutine)
	}
}

func TestWithSecrets_RefusesEntriesContainingThem(t *testing.T) {
	const token = "rt_tok<&>\"secret\""
	l := open(t, t.TempDir(), ledger.WithSecrets(token, ""))
	if err := l.Append(ledger.Entry{Event: ledger.EventRuntimeStarted}); err != nil {
		t.Fatalf("an entry without the secret was refused: %v", err)
	}
	refused := []struct {
		name string
		do   func() error
	}{
		{"message", func() error {
			return l.Append(ledger.Entry{Event: ledger.EventAuthRejected, Message: "token " + token + " rejected"})
		}},
		{"error code", func() error {
			return l.Append(ledger.Entry{Event: ledger.EventTaskFailed, ErrorCode: token})
		}},
		{"report body", func() error {
			body, _ := json.Marshal(map[string]string{"leak": token})
			return l.AppendPending(ledger.Report{ID: "r1", Kind: ledger.ReportComplete, TaskRunID: "tr", Attempt: 1, Body: body})
		}},
	}
	for _, tt := range refused {
		if err := tt.do(); !errors.Is(err, ledger.ErrSecret) {
			t.Errorf("%s: error = %v, want ErrSecret", tt.name, err)
		}
	}
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 1 {
		t.Fatalf("ledger has %d lines, want only the clean one:\n%s", n, data)
	}
	if bytes.Contains(data, []byte("secret")) {
		t.Fatalf("secret written:\n%s", data)
	}
}

func TestClose_LaterAppendsFail(t *testing.T) {
	l := open(t, t.TempDir())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ledger.Entry{Event: ledger.EventRuntimeStopped}); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Append after Close: error = %v, want ErrClosed", err)
	}
}

func writeFile(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o600)
}

// Entries made together (a run pulled and started) are written as their
// lines in order, with none of another writer's between them; one that is
// refused writes none of them.
func TestAppend_SeveralEntriesAreWrittenTogetherOrNotAtAll(t *testing.T) {
	const token = "rt_secret_token"
	l := open(t, t.TempDir(), ledger.WithSecrets(token))
	pulled := ledger.Entry{Event: ledger.EventTaskPulled, TaskRunID: "tr_1", Attempt: 1, Status: "running"}
	started := ledger.Entry{Event: ledger.EventTaskStarted, TaskRunID: "tr_1", Attempt: 1}
	if err := l.Append(pulled, started); err != nil {
		t.Fatal(err)
	}
	leak := ledger.Entry{Event: ledger.EventTaskFailed, TaskRunID: "tr_2", Message: "token " + token}
	if err := l.Append(ledger.Entry{Event: ledger.EventTaskPulled, TaskRunID: "tr_2"}, leak); !errors.Is(err, ledger.ErrSecret) {
		t.Fatalf("a batch with a secret: %v, want ErrSecret", err)
	}
	if err := l.Append(ledger.Entry{Event: ledger.EventTaskStarted}, ledger.Entry{}); err == nil {
		t.Fatal("a batch with an entry without an event was written")
	}
	got, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if want := []ledger.Event{ledger.EventTaskPulled, ledger.EventTaskStarted}; !slices.Equal(events(got), want) {
		t.Fatalf("entries %v, want %v (a refused batch writes nothing)", events(got), want)
	}
	for _, e := range got {
		if e.TaskRunID != "tr_1" || e.AgentID != agentID || e.RuntimeID != runtimeID || e.TS.IsZero() {
			t.Fatalf("entry not filled in as a single one is: %+v", e)
		}
	}
}
