package taskqueue

import (
	"context"
	"encoding/json"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// maxInputBytes bounds one turn's input, like a created run's (the record
// bound leaves room for the rest of the run).
const maxInputBytes = 2 << 20

func (s *Service) handleContinue(ctx context.Context, in *meshapi.ContinueTaskRunRequest) (*meshapi.TaskRunReply, error) {
	if !isJSONObject(in.Input) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "input must be a JSON object, e.g. {\"text\": \"...\"}")
	}
	if len(in.Input) > maxInputBytes {
		return nil, mesh.Errorf(mesh.CodePayloadTooLarge, "input is larger than %d bytes", maxInputBytes)
	}
	run, err := s.continueRun(ctx, in.TaskRunID, in.Input)
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}

// historyInput is what a turn's input says of the conversation so far.
type historyInput struct {
	Text    string                   `json:"text"`
	History []adapterapi.HistoryTurn `json:"history,omitempty"`
}

// withHistory returns the next turn's input with the conversation so far in
// input.history: the earlier turns the previous input carried, the previous
// turn's request and the question the agent asked (output.text of the turn
// that ended in input-required). Every door answers a run through the task
// queue's continue, so an agent sees the same history whichever door the
// answer came through (A2A, REST, the CLI, the page, the envelope). What a
// caller put in history itself is replaced. The oldest turns give way when
// the input would outgrow maxInputBytes.
func withHistory(prev, question, next json.RawMessage) (json.RawMessage, error) {
	var before historyInput
	_ = json.Unmarshal(prev, &before)
	var asked struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(question, &asked)
	turns := append(before.History, adapterapi.HistoryTurn{Role: "user", Text: before.Text}, adapterapi.HistoryTurn{Role: "agent", Text: asked.Text})
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(next, &fields); err != nil {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "input must be a JSON object, e.g. {\"text\": \"...\"}")
	}
	for {
		h, err := json.Marshal(turns)
		if err != nil {
			return nil, err
		}
		fields["history"] = h
		out, err := json.Marshal(fields)
		if err != nil {
			return nil, err
		}
		if len(out) <= maxInputBytes || len(turns) == 0 {
			return out, nil
		}
		turns = turns[1:]
	}
}

// continueRoute decides where the next turn of a run goes. A delegated run
// stays with its delegate (the answer goes to the delegate's task); any
// other run's new turn is matched against the routing rules like a new task.
func (s *Service) continueRoute(ctx context.Context, runID string, input json.RawMessage) (*mesh.Delegation, error) {
	run, err := s.getRun(ctx, runID)
	if err != nil || run.Delegated() || run.Status != mesh.StatusInputRequired {
		return nil, err
	}
	next := *run
	next.Input = input
	return s.delegationFor(ctx, &next)
}

// continueRun answers a run waiting in input-required: it goes back to
// pending with the next turn's input and is queued again, so the agent's
// runtime claims it as it claims any run. The next turn gets one attempt of
// its own: a lost lease then fails the run rather than re-running a turn the
// caller may already have seen the start of.
func (s *Service) continueRun(ctx context.Context, runID string, input json.RawMessage) (*mesh.TaskRun, error) {
	route, err := s.continueRoute(ctx, runID, input)
	if err != nil {
		return nil, err
	}
	run, err := s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		if r.Status != mesh.StatusInputRequired {
			return "", conflict(r, "task run %s is %s, not waiting for input", r.ID, r.Status)
		}
		if !r.Delegated() {
			r.DelegatedTo = route
		}
		next, err := withHistory(r.Input, r.Output, input)
		if err != nil {
			return "", err
		}
		r.Status = mesh.StatusPending
		r.Input = next
		r.Output = nil
		r.Error = nil
		r.Progress = nil
		r.RuntimeID = ""
		r.ClaimedAt = nil
		r.LeaseExpiresAt = nil
		r.MaxAttempts = r.Attempt + 1
		return mesh.EventTaskRunRequeued, nil
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}
