// Package a2atask is the A2A standard's view of a task run: the task state of
// each run status, the Task object built from the run record (status message,
// artifacts with download links), and the A2A events a run's bus events
// become. The gateway's A2A endpoint and the webhooks service (A2A push
// notifications) both build tasks here, so a task looks the same whichever
// way it reaches a client.
package a2atask

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
)

// ResultArtifactID names the artifact holding a run's output text and
// structured output (output.text, output.data). Files are artifacts of their
// own, named by their artifact ids.
const ResultArtifactID a2a.ArtifactID = "result"

// State is the A2A task state of a run status.
func State(s mesh.Status) a2a.TaskState {
	switch s {
	case mesh.StatusPending:
		return a2a.TaskStateSubmitted
	case mesh.StatusRunning:
		return a2a.TaskStateWorking
	case mesh.StatusInputRequired, mesh.StatusApprovalRequired:
		// A2A has no approval state: a run waiting for a person's
		// approval asks its caller, with the step in a data part
		// (StatusMessage).
		return a2a.TaskStateInputRequired
	case mesh.StatusCompleted:
		return a2a.TaskStateCompleted
	case mesh.StatusFailed:
		return a2a.TaskStateFailed
	case mesh.StatusCanceled:
		return a2a.TaskStateCanceled
	}
	return a2a.TaskStateUnspecified
}

// RunState is the A2A task state of a run: the state of its status, except
// that a run the agent declined (failed with mesh.ReasonRejected) is
// rejected.
func RunState(run *mesh.TaskRun) a2a.TaskState {
	if Rejected(run) {
		return a2a.TaskStateRejected
	}
	return State(run.Status)
}

// Rejected reports whether the agent declined the run: its adapter
// answered output.rejected, and the runtime failed it with that reason.
func Rejected(run *mesh.TaskRun) bool {
	return run.Status == mesh.StatusFailed && run.Error != nil && run.Error.Code == mesh.ReasonRejected
}

// Status returns the A2A status of a run for one of its A2A states, the one
// its record holds now or the one an event announced.
func Status(run *mesh.TaskRun) a2a.TaskStatus {
	ts := run.UpdatedAt.UTC()
	return a2a.TaskStatus{State: RunState(run), Message: StatusMessage(run), Timestamp: &ts}
}

// StatusMessage is the agent's message that comes with a run's status: the
// latest progress text while it works, the question of a run waiting for
// input, the reason of a failure or cancellation. Its id is stable for the
// run's revision, so reading the same state twice gives the same message.
func StatusMessage(run *mesh.TaskRun) *a2a.Message {
	var text string
	var parts a2a.ContentParts
	switch run.Status {
	case mesh.StatusApprovalRequired:
		if a := run.PendingApproval; a != nil {
			text = fmt.Sprintf("Approval required: the agent's host asks to use %s. The agent's owner allows or denies it (POST /task-runs/%s/approval, or a2a-platform tasks approve / deny).", a.Tool, run.ID)
			parts = append(parts, a2a.NewDataPart(map[string]any{"approval_required": approvalData(a)}))
		}
	case mesh.StatusRunning:
		if run.Progress != nil {
			text = run.Progress.Message
		}
	case mesh.StatusInputRequired:
		text = Output(run).Text
	case mesh.StatusFailed, mesh.StatusCanceled:
		if run.Error != nil {
			text = run.Error.Message
			if run.Status == mesh.StatusFailed && run.Error.Code != "" && !Rejected(run) {
				text = run.Error.Code + ": " + run.Error.Message
			}
		}
	}
	if text == "" {
		return nil
	}
	return &a2a.Message{
		ID:        fmt.Sprintf("%s.status.%d", run.ID, run.Revision),
		Role:      a2a.MessageRoleAgent,
		TaskID:    a2a.TaskID(run.ID),
		ContextID: run.ConversationID,
		Parts:     append(a2a.ContentParts{a2a.NewTextPart(text)}, parts...),
	}
}

// approvalData is the step a run waits for, as its A2A status message's
// data part shows it.
func approvalData(a *mesh.Approval) map[string]any {
	d := map[string]any{"approval_id": a.ID, "tool": a.Tool, "expires_at": a.ExpiresAt}
	var input any
	if json.Unmarshal(a.Input, &input) == nil {
		d["input"] = input
	}
	return d
}

// RunOutput is what the A2A endpoint reads of a run's output.
type RunOutput struct {
	Text string `json:"text"`
	Data any    `json:"data"`
	// Parts are the text, data and file-by-URI parts of output.parts, in
	// order (the runtime's artifact_ref entries there are files, which
	// become artifacts of their own).
	Parts []adapterapi.Part `json:"-"`
	// Reply is "message" when the adapter answers a blocking send with a
	// message instead of a task.
	Reply string `json:"reply"`
}

// Output decodes a run's output.text, output.data, output.parts and
// output.reply. A part it cannot read is left out, never the output.
func Output(run *mesh.TaskRun) RunOutput {
	var out RunOutput
	_ = json.Unmarshal(run.Output, &out)
	var list struct {
		Parts []json.RawMessage `json:"parts"`
	}
	_ = json.Unmarshal(run.Output, &list)
	for _, raw := range list.Parts {
		var p adapterapi.Part
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		switch {
		case p.Kind == adapterapi.PartText && p.Text != "",
			p.Kind == adapterapi.PartData && p.Data != nil,
			p.Kind == adapterapi.PartFile && p.URI != "":
			out.Parts = append(out.Parts, p)
		}
	}
	return out
}

// part is the A2A part of an output part. A file by URI is passed as the
// agent gave it: the platform never fetches it.
func part(p adapterapi.Part) *a2a.Part {
	switch p.Kind {
	case adapterapi.PartText:
		return a2a.NewTextPart(p.Text)
	case adapterapi.PartData:
		return a2a.NewDataPart(p.Data)
	}
	fp := a2a.NewFileURLPart(a2a.URL(p.URI), p.MimeType)
	fp.Filename = p.Name
	return fp
}

// ArtifactURL builds the download address of an artifact of an agent's task.
type ArtifactURL func(agentID, artifactID string) string

// DownloadURL returns the A2A endpoint's authenticated download route for
// artifacts under publicURL: <publicURL>/a2a/<agent>/artifacts/<id>.
func DownloadURL(publicURL string) ArtifactURL {
	base := strings.TrimRight(publicURL, "/")
	return func(agentID, artifactID string) string {
		return base + "/a2a/" + agentID + "/artifacts/" + artifactID
	}
}

// ResultArtifact is the artifact of a completed run's output text and
// structured output, or nil when the output has neither.
func ResultArtifact(run *mesh.TaskRun) *a2a.Artifact {
	out := Output(run)
	var parts a2a.ContentParts
	if out.Text != "" {
		parts = append(parts, a2a.NewTextPart(out.Text))
	}
	if out.Data != nil {
		parts = append(parts, a2a.NewDataPart(out.Data))
	}
	for _, p := range out.Parts {
		parts = append(parts, part(p))
	}
	if len(parts) == 0 {
		return nil
	}
	return &a2a.Artifact{ID: ResultArtifactID, Name: "result", Parts: parts}
}

// ReplyMessage is the agent's message that answers a blocking send in
// place of the task, when the adapter asked for it (output.reply
// "message") and the run completed: the result's parts, then a file part
// for each file the run delivered. It is nil otherwise, and the answer is
// the task.
func ReplyMessage(run *mesh.TaskRun, url ArtifactURL) *a2a.Message {
	if run.Status != mesh.StatusCompleted || Output(run).Reply != adapterapi.ReplyMessage {
		return nil
	}
	var parts a2a.ContentParts
	if r := ResultArtifact(run); r != nil {
		parts = append(parts, r.Parts...)
	}
	for _, ref := range run.Artifacts {
		parts = append(parts, FileArtifact(run.TargetAgentID, ref, url).Parts...)
	}
	if len(parts) == 0 {
		return nil
	}
	return &a2a.Message{
		ID:        run.ID + ".reply",
		Role:      a2a.MessageRoleAgent,
		ContextID: run.ConversationID,
		Parts:     parts,
	}
}

// FileArtifact is the artifact of a file a run delivered: one file part
// linking to the authenticated download route.
func FileArtifact(agentID string, ref mesh.ArtifactRef, url ArtifactURL) *a2a.Artifact {
	part := a2a.NewFileURLPart(a2a.URL(url(agentID, ref.ArtifactID)), ref.MimeType)
	part.Filename = ref.Filename
	return &a2a.Artifact{ID: a2a.ArtifactID(ref.ArtifactID), Name: ref.Filename, Description: ref.Title, Parts: a2a.ContentParts{part}}
}

// Artifacts lists a run's artifacts: its files as they arrive, and its
// output once it completed.
func Artifacts(run *mesh.TaskRun, url ArtifactURL) []*a2a.Artifact {
	var out []*a2a.Artifact
	for _, ref := range run.Artifacts {
		out = append(out, FileArtifact(run.TargetAgentID, ref, url))
	}
	if run.Status == mesh.StatusCompleted {
		if r := ResultArtifact(run); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// Task builds the A2A task of a run. history is what the A2A endpoint recorded
// of the conversation with this task (nil leaves history out).
func Task(run *mesh.TaskRun, history []*a2a.Message, url ArtifactURL) *a2a.Task {
	return &a2a.Task{
		ID:        a2a.TaskID(run.ID),
		ContextID: run.ConversationID,
		Status:    Status(run),
		Artifacts: Artifacts(run, url),
		History:   history,
	}
}

// InputMessage is the user message a run's input stands for, for tasks that
// were created through another endpoint (so the A2A endpoint recorded no history):
// input.text as one text part.
func InputMessage(run *mesh.TaskRun) *a2a.Message {
	return &a2a.Message{
		ID:        run.ID + ".input",
		Role:      a2a.MessageRoleUser,
		TaskID:    a2a.TaskID(run.ID),
		ContextID: run.ConversationID,
		Parts:     a2a.ContentParts{a2a.NewTextPart(run.InputText())},
	}
}

// Final reports whether a stream of the task ends at this state: a terminal
// state, or one that waits for the caller (input-required).
func Final(s a2a.TaskState) bool {
	return s.Terminal() || s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}

// StatusEvent is the status update a run's new state becomes.
func StatusEvent(run *mesh.TaskRun) *a2a.TaskStatusUpdateEvent {
	return &a2a.TaskStatusUpdateEvent{
		TaskID:    a2a.TaskID(run.ID),
		ContextID: run.ConversationID,
		Status:    Status(run),
	}
}

// ArtifactEvent announces one artifact of a task.
func ArtifactEvent(run *mesh.TaskRun, art *a2a.Artifact) *a2a.TaskArtifactUpdateEvent {
	return &a2a.TaskArtifactUpdateEvent{
		TaskID:    a2a.TaskID(run.ID),
		ContextID: run.ConversationID,
		Artifact:  art,
		LastChunk: true,
	}
}

// Protocol versions the platform serves.
const (
	Version10 = "1.0"
	Version03 = "0.3"
)

// PushPayload is the body of a push notification of a run's state: for A2A
// 1.0 a StreamResponse holding the task, for 0.3 the task itself. Pushes
// leave the history out (a receiver that wants it reads the task).
func PushPayload(run *mesh.TaskRun, version string, url ArtifactURL) ([]byte, error) {
	task := Task(run, nil, url)
	if version == Version03 {
		return json.Marshal(a2av0.FromV1Task(task))
	}
	return json.Marshal(a2a.StreamResponse{Event: task})
}
