package ledger

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// A line written without reflection is the line json.Marshal writes, for
// every kind of entry the ledger holds and for text that needs escaping.
func TestAppendEntry_IsWhatJSONMarshalWrites(t *testing.T) {
	ts := time.Date(2026, 11, 29, 12, 30, 1, 120000000, time.UTC)
	for _, e := range []Entry{
		{TS: ts, Event: EventTaskPulled, AgentID: "agt_1", RuntimeID: "rt_1", TaskRunID: "run_1", Attempt: 1},
		{TS: ts.Add(time.Nanosecond), Event: EventRuntimeStarted, AgentID: "agt_1", RuntimeID: "rt_1"},
		{TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Event: EventTaskFailed, AgentID: "a", RuntimeID: "r", TaskRunID: "run",
			Attempt: -3, Status: "failed", ErrorCode: "ADAPTER_FAILED", Message: `exit 2: "quoted" <tag> & \ back` + "\n\ttab é \u2028 \xff"},
		{TS: ts, Event: EventReportPending, TaskRunID: "run_2", Attempt: 2, Status: "complete",
			Report: &Report{ID: "rep_1", Kind: ReportComplete, TaskRunID: "run_2", Attempt: 2, Body: json.RawMessage(`{"output":{"text":"<b>"}}`),
				Artifacts: []KeptArtifact{{Index: 0, Write: json.RawMessage(`{"name":"a.txt"}`)}}}},
		{},
	} {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendEntry(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("appendEntry:\n got %s\nwant %s", got, want)
		}
	}
}

func FuzzAppendEntry(f *testing.F) {
	f.Add("task_completed", "agt_1", "rt_1", "run_1", 1, "completed", "", "done", int64(1764419401120000000))
	f.Add("task_failed", "a\"<", "r\\", "\x00", -1, "\u2028", "E&", "\xff\xfe", int64(0))
	f.Fuzz(func(t *testing.T, event, agent, runtime, run string, attempt int, status, code, msg string, nanos int64) {
		e := Entry{TS: time.Unix(0, nanos).UTC(), Event: Event(event), AgentID: agent, RuntimeID: runtime, TaskRunID: run,
			Attempt: attempt, Status: status, ErrorCode: code, Message: msg}
		want, err := json.Marshal(e)
		if err != nil {
			return // a time json.Marshal refuses; the ledger stamps the present
		}
		got, err := appendEntry(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("appendEntry:\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkEncode compares a run's ledger line written without reflection
// with encoding/json's.
func BenchmarkEncode(b *testing.B) {
	e := Entry{TS: time.Now().UTC(), Event: EventTaskCompleted, AgentID: "agt_01KMZ3V9Q1", RuntimeID: "rt_01KMZ3V9Q2",
		TaskRunID: "run_01KMZ3V9Q3", Attempt: 1, Status: "completed"}
	b.Run("appendEntry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := appendEntry(make([]byte, 0, 256), &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAppend writes a run's first two lines in one write, as the
// runtime does when it starts a run.
func BenchmarkAppend(b *testing.B) {
	l, err := New(b.TempDir(), "agt_01KMZ3V9Q1", "rt_01KMZ3V9Q2")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Append(Entry{Event: EventTaskPulled, TaskRunID: "run_01KMZ3V9Q3", Attempt: 1, Status: "running"},
			Entry{Event: EventTaskStarted, TaskRunID: "run_01KMZ3V9Q3", Attempt: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
