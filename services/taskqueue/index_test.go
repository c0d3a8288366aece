package taskqueue

import (
	"slices"
	"testing"

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
		s := summarize(&mesh.TaskRun{ID: id, TargetAgentID: "agent", Status: status, RuntimeID: runtime}, rev)
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
