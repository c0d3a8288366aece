package provider

import (
	"strconv"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// Approvals over the mesh for Codex (docs/approvals.md). Codex runs its
// PreToolUse hooks before a tool call (a shell command, a patch, an MCP
// tool): a command hook reads {hook_event_name, tool_name, tool_input,
// ...} on stdin and may answer {"hookSpecificOutput": {"hookEventName":
// "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason"}},
// which blocks the call and tells the model why. Codex runs only hooks the
// user trusted, by their hash, unless started with
// --dangerously-bypass-hook-trust, which is for hooks vetted elsewhere:
// the adapter's own, given on the command line for one run.
//
// Under ApprovalModeMesh the adapter adds its approve-hook as Codex's
// PreToolUse hook (a -c override of the hooks table, for this run only)
// when the run has the mesh's tools; the tool server's address goes in
// the hook's environment (ToolsURLEnv), beside the capability Codex
// already has. Codex's matchers are Rust regular expressions, which have
// no lookahead, so the hook sees every tool and lets the mesh's own go
// on unasked (askMesh).

// codexHookTimeout is the hook's time limit in Codex (seconds): longer
// than any approval policy's, whose own time limit denies the step first.
var codexHookTimeout = int64((mesh.MaxApprovalTimeout + 5*time.Minute) / time.Second)

// meshHook reports whether the run's tool calls go through the approval
// hook: the mesh's approval mode, and a tool server to ask.
func (c *Codex) meshHook(t *Task) bool {
	return c.cfg.ApprovalMode == ApprovalModeMesh && t.Request.Tools != nil
}

// codexHookArgs are Codex's arguments that add the approval hook.
func codexHookArgs(hook []string) []string {
	handler := "{type=" + tomlString("command") + ",command=" + tomlString(shellCommand(hook)) +
		",timeout=" + strconv.FormatInt(codexHookTimeout, 10) + "}"
	return []string{"--dangerously-bypass-hook-trust", "-c", "hooks.PreToolUse=[{hooks=[" + handler + "]}]"}
}
