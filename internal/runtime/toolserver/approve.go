package toolserver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// ApproveTool is the tool a host calls to ask permission for a step, in
// the shape of Claude Code's --permission-prompt-tool: its input is
// {tool_name, input, tool_use_id}, its answer the JSON text
// {"behavior":"allow","updatedInput":{...}} or
// {"behavior":"deny","message":"..."}.
const ApproveTool = "approve"

// approvalWait is how long one approval request to the platform waits for
// a person's decision before it is sent again.
const approvalWait = 20 * time.Second

// ApproveInput is a host's question: may it call ToolName with Input?
type ApproveInput struct {
	ToolName  string         `json:"tool_name" jsonschema:"the tool the host wants to call"`
	Input     map[string]any `json:"input" jsonschema:"the tool's input"`
	ToolUseID string         `json:"tool_use_id,omitempty" jsonschema:"the host's id of the tool call"`
}

// ApproveOutput is the answer, in Claude Code's permission result shape.
type ApproveOutput struct {
	Behavior     string         `json:"behavior"`
	UpdatedInput map[string]any `json:"updatedInput,omitempty"`
	Message      string         `json:"message,omitempty"`
}

// approve answers with one text block holding the JSON of ApproveOutput,
// and no structured content: Claude Code reads the text.
func (rt *runTools) approve(ctx context.Context, req *mcp.CallToolRequest, in ApproveInput) (*mcp.CallToolResult, any, error) {
	out, err := rt.decide(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil, nil
}

func (rt *runTools) decide(ctx context.Context, in ApproveInput) (ApproveOutput, error) {
	input, err := json.Marshal(in.Input)
	if err != nil {
		return ApproveOutput{}, err
	}
	id := in.ToolUseID
	if id == "" {
		id = "call_" + randomHex(12)
	}
	req := meshapi.ApprovalRequest{TaskRunID: rt.runID, ToolUseID: id, Tool: in.ToolName, Input: input, Wait: approvalWait}
	for {
		cctx, cancel := context.WithTimeout(ctx, approvalWait+rt.cfg.CallTimeout)
		resp, err := rt.p.Approval(cctx, req)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ApproveOutput{}, ctx.Err()
			}
			return deny("the platform could not decide: " + explain(err).Error())
		}
		switch resp.Decision {
		case mesh.ApprovalAllow:
			if in.Input == nil {
				in.Input = map[string]any{}
			}
			return ApproveOutput{Behavior: "allow", UpdatedInput: in.Input}, nil
		case mesh.ApprovalDeny:
			return deny(resp.Reason)
		}
		// Nobody decided yet: ask again.
	}
}

func deny(message string) (ApproveOutput, error) {
	if message == "" {
		message = "denied"
	}
	return ApproveOutput{Behavior: "deny", Message: message}, nil
}
