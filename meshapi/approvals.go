package meshapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// OpTaskDecideApproval decides the step a run in approval-required waits
// for (service "taskqueue"): a person allows or denies it.
const OpTaskDecideApproval = "decide_approval"

// ApprovalRequest asks whether the host of a run the runtime holds may take
// a step: Tool with Input, under the host's id for the call (ToolUseID).
// The agent's approval policy decides at once (allow, deny), or the run
// waits in approval-required for a person; the request then waits up to
// Wait for the decision, and is sent again (with the same ToolUseID) until
// it comes: the step is asked once, and the time limit of the policy runs
// from the first request.
type ApprovalRequest struct {
	TaskRunID string          `json:"task_run_id"`
	Attempt   int             `json:"attempt,omitempty"`
	ToolUseID string          `json:"tool_use_id"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input,omitempty"`
	Wait      time.Duration   `json:"wait,omitempty"`
}

// ApprovalResponse is the decision: allow or deny, with the reason of a
// deny; empty Decision when the wait ended before a person decided.
type ApprovalResponse struct {
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Asked is true when a person was asked (the policy said "ask").
	Asked bool `json:"asked,omitempty"`
}

// The approvals' operations: the runtime asks (over either transport), the
// owner decides (REST: the gateway fills By from the caller's credential,
// so its route is written by hand).
var (
	OpRuntimeApproval = define[ApprovalRequest, ApprovalResponse](OpInfo{Name: bus.RuntimeOpApproval, Service: bus.ServiceTaskQueue, Caller: CallerRuntime,
		Idempotent: true, Waits: true, REST: post("/task-runs/{taskRunId}/approval/ask", onRun)})
	OpTaskRunsDecideApproval = define[DecideApprovalRequest, TaskRunReply](OpInfo{Name: OpTaskDecideApproval, Service: bus.ServiceTaskQueue, Caller: CallerOwner,
		REST: custom(post("/task-runs/{taskRunId}/approval", onRun))})
)

// Approval asks the platform whether the run's host may take a step.
func (c *RuntimeClient) Approval(ctx context.Context, req ApprovalRequest) (*ApprovalResponse, error) {
	return Send(ctx, c, OpRuntimeApproval, req)
}

// Approval asks the platform whether the run's host may take a step.
func (c InHost) Approval(ctx context.Context, req ApprovalRequest) (*ApprovalResponse, error) {
	return Send(ctx, c.s, OpRuntimeApproval, req)
}

// DecideApprovalRequest allows or denies the step a run waits for. By is
// who decides (the gateway fills it from the caller's credential).
type DecideApprovalRequest struct {
	TaskRunID string `json:"task_run_id"`
	Decision  string `json:"decision"`
	Reason    string `json:"reason,omitempty"`
	By        string `json:"by,omitempty"`
}

// ApprovalDecision is the body of OpTaskRunsDecideApproval's route (POST
// /task-runs/{taskRunId}/approval): a person's decision (allow or deny) of
// the step a run in approval-required waits for. The gateway says who
// decided (DecideApprovalRequest.By).
type ApprovalDecision struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// DecideApproval allows or denies the step a run in approval-required
// waits for; the run goes back to running.
func (c *Client) DecideApproval(ctx context.Context, req DecideApprovalRequest) (*mesh.TaskRun, error) {
	r, err := Send(ctx, c, OpTaskRunsDecideApproval, req)
	if err != nil {
		return nil, err
	}
	return &r.TaskRun, nil
}
