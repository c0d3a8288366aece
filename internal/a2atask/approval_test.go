package a2atask

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/mesh"
)

// TestApprovalRequired_IsInputRequiredWithTheStepInADataPart: A2A has no
// approval state; a run waiting for its owner's approval reads as
// input-required, its status message saying what is asked, with the step
// (tool, input, expiry) in a data part.
func TestApprovalRequired_IsInputRequiredWithTheStepInADataPart(t *testing.T) {
	expires := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	run := &mesh.TaskRun{ID: mesh.NewID(), Status: mesh.StatusApprovalRequired, Revision: 7, PendingApproval: &mesh.Approval{
		ID: "toolu_1", Tool: "Bash", Input: json.RawMessage(`{"command":"git push"}`), ExpiresAt: expires,
	}}
	if got := RunState(run); got != a2a.TaskStateInputRequired {
		t.Fatalf("state %s, want input-required", got)
	}
	msg := StatusMessage(run)
	if msg == nil || len(msg.Parts) != 2 || !strings.Contains(msg.Parts[0].Text(), "Bash") {
		t.Fatalf("status message %+v", msg)
	}
	data, _ := msg.Parts[1].Data().(map[string]any)
	step, _ := data["approval_required"].(map[string]any)
	input, _ := step["input"].(map[string]any)
	if step["tool"] != "Bash" || step["approval_id"] != "toolu_1" || input["command"] != "git push" || step["expires_at"] != expires {
		t.Fatalf("data part %+v", data)
	}
	if State(mesh.StatusRunning) != a2a.TaskStateWorking {
		t.Fatal("running is no longer working")
	}
}
