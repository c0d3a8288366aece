package taskqueue

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// TestIndex_KnowsTheRunsEachRuntimeHolds: the runs a runtime holds follow
// each change of a run: a claim adds it, a claim by another runtime moves
// it, a release, an end or a delete removes it.
func TestIndex_KnowsTheRunsEachRuntimeHolds(t *testing.T) {
	ix := newIndex()
	rev := uint64(0)
	set := func(id string, status mesh.Status, runtime string) {
		rev++
		s := summarize(headOf(&mesh.TaskRun{ID: id, TargetAgentID: "agent", Status: status, RuntimeID: runtime}), rev)
		ix.onChange(id, &s)
	}
	held := func(runtime string) []string {
		ids := ix.runningBy(runtime)
		slices.Sort(ids)
		return ids
	}
	set("a", mesh.StatusPending, "")
	set("b", mesh.StatusPending, "")
	set("c", mesh.StatusPending, "")
	if got := held("r1"); len(got) != 0 {
		t.Fatalf("before any claim r1 holds %v", got)
	}
	set("a", mesh.StatusRunning, "r1")
	set("b", mesh.StatusRunning, "r1")
	set("c", mesh.StatusRunning, "r1")
	if got := held("r1"); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("r1 holds %v, want a, b, c", got)
	}
	set("a", mesh.StatusPending, "")     // released
	set("b", mesh.StatusCompleted, "r1") // ended
	set("c", mesh.StatusPending, "")
	set("c", mesh.StatusRunning, "r2") // claimed again by another runtime
	if got := held("r1"); len(got) != 0 {
		t.Fatalf("r1 still holds %v", got)
	}
	if got := held("r2"); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("r2 holds %v, want c", got)
	}
	ix.onChange("c", nil)
	if got := held("r2"); len(got) != 0 || len(ix.running) != 0 {
		t.Fatalf("after the delete r2 holds %v (%d runtimes known)", got, len(ix.running))
	}
}

// TestRunHead_DecodedRecordMatchesTheRunWritten: what the watch of the
// runs bucket decodes from a stored record is what this process keeps of
// the run it wrote, so the index is the same whoever wrote the record.
func TestRunHead_DecodedRecordMatchesTheRunWritten(t *testing.T) {
	lease := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	deadline := lease.Add(time.Hour)
	for _, run := range []*mesh.TaskRun{
		{ID: "r1", TargetAgentID: "a", ConversationID: "c", Status: mesh.StatusPending, MaxAttempts: 1, Input: json.RawMessage(`{"text":"hi"}`), UpdatedAt: lease},
		{
			ID: "r2", TargetAgentID: "a", ConversationID: "c", Status: mesh.StatusRunning, RuntimeID: "rt", Attempt: 2, MaxAttempts: 3,
			Input: json.RawMessage(`{"text":"hi"}`), Output: json.RawMessage(`{"text":"ho"}`), Metadata: map[string]any{"k": "v"},
			LeaseExpiresAt: &lease, Deadline: &deadline, UpdatedAt: lease,
			DelegatedTo: &mesh.Delegation{RuleID: "rule", AgentID: "b"},
		},
	} {
		stored, err := json.Marshal(run)
		if err != nil {
			t.Fatal(err)
		}
		var decoded runHead
		if err := json.Unmarshal(stored, &decoded); err != nil {
			t.Fatal(err)
		}
		if got, want := *summarize(&decoded, 7), *summarize(headOf(run), 7); got != want {
			t.Errorf("run %s: decoded %+v, written %+v", run.ID, got, want)
		}
	}
}
